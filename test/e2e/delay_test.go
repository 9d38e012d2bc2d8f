package e2e

import (
	"fmt"
	"math"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
)

// labStatus is what hack/lab/lab.sh status says, for a failure's message.
func labStatus() string {
	out, _ := exec.Command("../../hack/lab/lab.sh", "status").CombinedOutput()
	return string(out)
}

// labScript runs hack/lab/lab.sh with args (the tests run in test/e2e).
func labScript(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("../../hack/lab/lab.sh", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("lab.sh %v: %v\n%s", args, err, out)
	}
}

// With the zone delay on, pod-to-pod RTT orders same-node < same-zone < cross-zone, and each
// hop carries the delay that was set (twice the one-way delay, plus the path itself).
func TestZoneDelayOrdersRTT(t *testing.T) {
	cs, ns := lab(t)
	const sameZone, crossZone = 300 * time.Microsecond, 1 * time.Millisecond
	labScript(t, "delay", sameZone.String(), crossZone.String())
	t.Cleanup(func() { labScript(t, "delay", "off") })

	const token = "e2e-delay"
	targets := map[string]string{"same-node": "lab-a1", "same-zone": "lab-a2", "cross-zone": "lab-b1"}
	ips := map[string]string{}
	for class, node := range targets {
		createPod(t, cs, ns, pod("srv-"+class, node, agentImage, []string{"serve", "--listen", ":7000", "--token", token, "--deadline", "5m"}, nil))
	}
	for class := range targets {
		ips[class] = waitPod(t, cs, ns, "srv-"+class, 90*time.Second, "running", running).Status.PodIP
	}
	var probes []agent.ProbeSpec
	for _, class := range []string{"same-node", "same-zone", "cross-zone"} {
		probes = append(probes, agent.ProbeSpec{Kind: agent.ProbeICMP, Name: class, Address: net.JoinHostPort(ips[class], "7000"), Count: 40, IntervalMillis: 20})
	}
	alone(t)
	createPod(t, cs, ns, pod("client", "lab-a1", agentImage, jobArgs(t, agent.Job{APIVersion: agent.APIVersion, Probes: probes}), nil))
	waitPod(t, cs, ns, "client", 90*time.Second, "finished", finished)
	res := agentResults(t, logs(t, cs, ns, "client", "main"))
	p50 := map[string]float64{}
	for _, class := range []string{"same-node", "same-zone", "cross-zone"} {
		r := res[class]
		if r == nil || r.RTT == nil || r.RTT.Received == 0 {
			t.Fatalf("%s: no RTT: %+v", class, r)
		}
		p50[class] = r.RTT.RTT.P50Micros
		t.Logf("%s: p50 %.0f µs over %d probes", class, p50[class], r.RTT.Received)
	}
	if !(p50["same-node"] < p50["same-zone"] && p50["same-zone"] < p50["cross-zone"]) {
		t.Errorf("RTT p50 same-node %.0f, same-zone %.0f, cross-zone %.0f µs: want increasing", p50["same-node"], p50["same-zone"], p50["cross-zone"])
	}
	// Each direction is held once: RTT ≥ 2 × one-way delay.
	if min := 2 * float64(sameZone.Microseconds()); p50["same-zone"] < min {
		t.Errorf("same-zone p50 %.0f µs is below twice the one-way delay (%.0f µs)", p50["same-zone"], min)
	}
	if min := 2 * float64(crossZone.Microseconds()); p50["cross-zone"] < min {
		t.Errorf("cross-zone p50 %.0f µs is below twice the one-way delay (%.0f µs)", p50["cross-zone"], min)
	}
}

// New-connection HTTP latency costs what an independent client's time to first byte costs on the
// same path: with the zone delay on (one cross-zone round trip ≈ 4.3 ms, curl's time to first
// byte ≈ 9.1 ms), the http-new-conn p50 is within 10 % of the median of curl's over new
// connections to an agent server in the same destination pod, curl run before and after the
// probe at the probe's rate (benchmarks/notes/2026-12-02-fidelity-tests.md and
// 2026-12-03-new-conn-spacing.md). The rate matters: on this VM a request after an idle gap
// waits for the server agent to wake to answer it (its threads park; an idle vCPU halts), and
// curl started once per request, 20 ms apart, measured 10.7-12.5 ms while the probe at 100 qps
// measured 9.8-10.7 ms (−5 … −15 %); one curl process at the probe's rate measured within a few
// per cent of the probe (the note's tables). A handshake and a
// request are two round trips; a third (fault http-extra-rtt, hack/mutations.sh: each connection
// opened twice) made it +82 % against the old reference, +52 % against this one. Percentiles interpolated in fortio's histogram, 10 ms wide from 10
// to 20 ms, came out +17 … +40 % whenever the path's requests straddled 10 ms (a CI run: +28 %);
// TestRequestPercentilesAreObserved answers for that defect on loopback, where it is certain.
func TestHTTPNewConnMatchesCurl(t *testing.T) {
	cs, ns := lab(t)
	labScript(t, "delay", "300us", "2ms")
	t.Cleanup(func() { labScript(t, "delay", "off") })
	createPod(t, cs, ns, pod("srv", "lab-b1", agentImage, []string{"serve", "--listen", ":7000", "--token", "tok", "--deadline", "10m"}, nil))
	createPod(t, cs, ns, pod("cli", "lab-a1", "netbench.lab/pause:1", nil, nil))
	srv := waitPod(t, cs, ns, "srv", 60*time.Second, "running", running)
	cli := waitPod(t, cs, ns, "cli", 60*time.Second, "running", running)
	netns := podNetns(t, "lab-a1", cli.Status.PodIP)
	var ttfb []float64
	curlRound := func() { ttfb = append(ttfb, curlNewConns(t, netns, "http://"+srv.Status.PodIP+":7000/", 60)...) }
	alone(t)
	curlRound()
	r := pathJSON(t, "-n", ns, "cli", "srv", "--probes", "http-new-conn")
	curlRound()
	var p50, fastestProbe float64
	for _, p := range r.Probes {
		if p.Name == "http-new-conn" && p.HTTP != nil {
			p50, fastestProbe = p.HTTP.Latency.P50Micros, p.HTTP.Latency.MinMicros
		}
	}
	curl := median(ttfb)
	fastest := slices.Min(ttfb)
	for _, role := range []string{"client", "server"} {
		if f, ok := r.AgentFootprint[role]; !ok || f.CPUSeconds <= 0 || f.PeakRSSBytes < 1<<20 {
			t.Errorf("%s agent footprint %+v: want its CPU time and peak RSS", role, f)
		}
	}
	t.Logf("http-new-conn p50 %.0f µs, curl time to first byte median %.0f µs (%+.1f %%)", p50, curl, 100*(p50-curl)/curl)
	t.Logf("fastest: http-new-conn %.0f µs, curl %.0f µs (%+.1f %%)", fastestProbe, fastest, 100*(fastestProbe-fastest)/fastest)
	if math.Abs(p50-curl) > 0.10*curl {
		load, _ := os.ReadFile("/proc/loadavg")
		t.Errorf("http-new-conn p50 %.0f µs, curl's median time to first byte %.0f µs on the same path: more than 10 %% apart (load average %s, agents' CPU %+v)",
			p50, curl, strings.TrimSpace(string(load)), r.AgentFootprint)
	}
}

// curlNewConns runs n requests from one curl process in the network namespace netns, at the
// http-new-conn probe's default rate (100 per second, one after another when a request takes
// longer), each on a new connection (Connection: close; curl's num_connects shows it), and
// returns each one's time to first byte in µs.
func curlNewConns(t *testing.T, netns, url string, n int) []float64 {
	t.Helper()
	args := []string{"--net=" + netns, "curl", "-s", "--rate", "100/s", "-H", "X-Netbench-Token: tok", "-H", "Connection: close",
		"-w", "%{time_starttransfer} %{num_connects}\\n"}
	for range n {
		args = append(args, "-o", "/dev/null", url)
	}
	out, err := exec.Command("nsenter", args...).Output()
	if err != nil {
		t.Fatalf("curl: %v", err)
	}
	var ttfb []float64
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		var s float64
		var conns int
		if _, err := fmt.Sscan(line, &s, &conns); err != nil || conns != 1 {
			t.Fatalf("curl's line %q: want a time to first byte on a new connection (%v)", line, err)
		}
		ttfb = append(ttfb, s*1e6)
	}
	if len(ttfb) != n {
		t.Fatalf("curl answered %d of %d requests", len(ttfb), n)
	}
	return ttfb
}
