package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// On the dual-stack lab, `path --ip-family both` on the cross-zone pair measures each family:
// every probe has its IPv6 twin (named *-v6) sent to the server's IPv6 address. With the zone
// delay on (300 µs same zone, 2 ms cross zone, one way) each family's ICMP p50 is within
// pingBound of iputils `ping -4` / `ping -6` from the same pod to the same pod, and each
// family's single-stream throughput within throughputBound of iperf3 `-4` / `-6` run between
// the same two pods' network namespaces just before and after (a gross-error check: the
// user-space delay line is CPU-bound and noisy). With the delay off (the kernel's path) the
// bytes the agent counted are checked against the server pod's interface, and each family's
// rate set beside iperf3's. A bad --ip-family is refused with one line naming the flag, before
// anything is created.
func TestPathBothFamilies(t *testing.T) {
	cs, ns := lab(t)
	workloads(t, cs, ns)
	waitRollout(t, cs, ns, "client")
	waitRollout(t, cs, ns, "web")
	labScript(t, "delay", "300us", "2ms")
	t.Cleanup(func() { labScript(t, "delay", "off") })

	if _, stderr, err := netbench(t, "path", "-n", ns, "deploy/client", "deploy/web", "--ip-family", "5"); err == nil || !strings.Contains(stderr, "--ip-family \"5\": want 4, 6 or both") {
		t.Errorf("--ip-family 5: err %v, stderr %q: want one line naming the flag", err, stderr)
	}
	web := onePod(t, cs, ns, "app=web")
	client := onePod(t, cs, ns, "app=client")
	dst4, dst6 := familyIP(web, false), familyIP(web, true)
	if dst4 == "" || dst6 == "" || familyIP(client, true) == "" {
		t.Fatalf("this test needs the dual-stack lab (LAB_IP_FAMILY 4,6, the default, or 6,4): web %v, client %v", web.Status.PodIPs, client.Status.PodIPs)
	}
	cliNetns, webNetns := podNetns(t, "lab-a1", familyIP(client, false)), podNetns(t, "lab-b1", dst4)
	t.Run("zone delay", func(t *testing.T) { bothFamiliesDelayed(t, ns, cliNetns, webNetns, dst4, dst6) })
	labScript(t, "delay", "off")
	t.Run("throughput", func(t *testing.T) { bothFamiliesThroughput(t, ns, cliNetns, webNetns, dst4, dst6) })
}

// bothFamiliesDelayed is TestPathBothFamilies with the zone delay on.
func bothFamiliesDelayed(t *testing.T, ns, cliNetns, webNetns, dst4, dst6 string) {
	before := map[string]float64{"4": iperf3Bits(t, cliNetns, webNetns, dst4, "-4"), "6": iperf3Bits(t, cliNetns, webNetns, dst6, "-6")}
	r := runJSON[report.PathReport](t, "path", "-n", ns, "deploy/client", "deploy/web", "--ip-family", "both", "--probes", "rtt,tcp", "--duration", "3s")
	after := map[string]float64{"4": iperf3Bits(t, cliNetns, webNetns, dst4, "-4"), "6": iperf3Bits(t, cliNetns, webNetns, dst6, "-6")}
	if !strings.HasPrefix(r.IPFamily, "IPv4 and IPv6") {
		t.Errorf("ipFamily %q: want both", r.IPFamily)
	}
	for fam, suffix := range map[string]string{"4": "", "6": "-v6"} {
		ip, name := dst4, "IPv4"
		if fam == "6" {
			ip, name = dst6, "IPv6"
		}
		icmp := probe(t, r, "icmp"+suffix)
		if icmp.IPFamily != name || !strings.Contains(icmp.RTT.Target, ip) {
			t.Errorf("icmp%s: family %q, target %q: want %s to %s", suffix, icmp.IPFamily, icmp.RTT.Target, name, ip)
		}
		ping := pingMedian(t, cliNetns, ip, 30, "0.05")
		t.Logf("%s: icmp%s p50 %.1f µs, ping -%s median %.1f µs (bound ±%.0f µs)", name, suffix, icmp.RTT.RTT.P50Micros, fam, ping, pingBound(ping))
		if d := icmp.RTT.RTT.P50Micros - ping; d > pingBound(ping) || d < -pingBound(ping) {
			t.Errorf("%s: icmp%s p50 %.1f µs is %+.1f µs from ping's %.1f µs: want within %.0f", name, suffix, icmp.RTT.RTT.P50Micros, d, ping, pingBound(ping))
		}
		if rtt := probe(t, r, "tcp-rtt"+suffix); !strings.Contains(rtt.RTT.Target, ip) || rtt.IPFamily != name {
			t.Errorf("tcp-rtt%s: target %q, family %q: want %s", suffix, rtt.RTT.Target, rtt.IPFamily, ip)
		}
		tcp := throughputProbe(t, r, "tcp-1"+suffix)
		if !strings.Contains(tcp.Throughput.Address, ip) {
			t.Errorf("tcp-1%s: to %q, want %s", suffix, tcp.Throughput.Address, ip)
		}
		got, lo, hi := tcp.Throughput.BitsPerSecondReceived, min(before[fam], after[fam]), max(before[fam], after[fam])
		t.Logf("%s: tcp-1%s %.1f Mbit/s, iperf3 -%s %.1f Mbit/s before and %.1f after", name, suffix, got/1e6, fam, before[fam]/1e6, after[fam]/1e6)
		if got < lo*(1-throughputBound) || got > hi*(1+throughputBound) {
			t.Errorf("%s: tcp-1%s %.1f Mbit/s, iperf3 %.1f–%.1f: want within %.0f %% of iperf3's range", name, suffix, got/1e6, lo/1e6, hi/1e6, 100*throughputBound)
		}
	}
	// The same path's segments: IPv6's header is 20 bytes longer than IPv4's, its MSS 20 smaller.
	mss4, mss6 := throughputProbe(t, r, "tcp-1").Throughput.PerStream[0].MSSBytes, throughputProbe(t, r, "tcp-1-v6").Throughput.PerStream[0].MSSBytes
	if mss4-mss6 != 20 {
		t.Errorf("MSS %d over IPv4, %d over IPv6: want 20 bytes less over IPv6 (its header)", mss4, mss6)
	}
}

// bothFamiliesThroughput checks each family's single stream on the kernel's path (the zone
// delay off) against the wire and sets it beside iperf3: three rounds of iperf3 -4, iperf3 -6
// and `path --ip-family both --probes tcp`. Exact: the bytes the agent says the server received
// (every stream of both families) against what the server pod's interface received over the run
// (rx_bytes: the payload, the headers, the agents' control traffic). Beside: each family's
// median against iperf3's, a gross-error bound (throughputBesideIperf3).
func bothFamiliesThroughput(t *testing.T, ns, cliNetns, webNetns, dst4, dst6 string) {
	iperf := map[string][]float64{}
	agent := map[string][]float64{}
	for round := 0; round < 3; round++ {
		iperf["4"] = append(iperf["4"], iperf3Bits(t, cliNetns, webNetns, dst4, "-4"))
		iperf["6"] = append(iperf["6"], iperf3Bits(t, cliNetns, webNetns, dst6, "-6"))
		rx0 := rxBytes(t, webNetns)
		r := runJSON[report.PathReport](t, "path", "-n", ns, "deploy/client", "deploy/web", "--ip-family", "both", "--probes", "tcp", "--duration", "3s")
		wire := rxBytes(t, webNetns) - rx0
		tcp4, tcp6 := throughputProbe(t, r, "tcp-1").Throughput, throughputProbe(t, r, "tcp-1-v6").Throughput
		agent["4"], agent["6"] = append(agent["4"], tcp4.BitsPerSecondReceived), append(agent["6"], tcp6.BitsPerSecondReceived)
		var payload float64
		var streams []string
		for _, p := range r.Probes {
			if p.Throughput != nil {
				payload += float64(p.Throughput.BytesReceived)
				streams = append(streams, p.Name)
			}
		}
		t.Logf("round %d: the agent says %.0f MB received (%s), the server pod's interface %.0f MB: ratio %.4f", round+1, payload/1e6, strings.Join(streams, ", "), wire/1e6, wire/payload)
		if wire < payload || wire > payload*wireOverhead+1e6 {
			t.Errorf("round %d: the agent says the server received %.0f bytes, its interface received %.0f: want the payload within its headers' and the agents' control traffic (≤ %.0f %% + 1 MB over)",
				round+1, payload, wire, 100*(wireOverhead-1))
		}
	}
	for _, fam := range []string{"4", "6"} {
		ref, got := median(iperf[fam]), median(agent[fam])
		t.Logf("IPv%s: agent tcp-1 median %.0f Mbit/s (rounds %s), iperf3 -%s median %.0f (rounds %s): ratio %.3f",
			fam, got/1e6, mbits(agent[fam]), fam, ref/1e6, mbits(iperf[fam]), got/ref)
		if got < ref*throughputBesideIperf3[0] || got > ref*throughputBesideIperf3[1] {
			t.Errorf("IPv%s: the agent's single stream %.0f Mbit/s is %.2f× iperf3's %.0f (medians of 3 rounds): want %.1f–%.1f×",
				fam, got/1e6, got/ref, ref/1e6, throughputBesideIperf3[0], throughputBesideIperf3[1])
		}
	}
}

// wireOverhead bounds what the server pod's interface receives over a throughput run beyond the
// payload the agent counted: TCP/IP headers (one per GRO-aggregated packet) and the agents'
// control connections. Measured: 1.0028–1.0030 over three rounds (by hand, 2026-12-04); the
// bound allows seven times that overhead. An undercount of more than 2 %, or any overcount, fails.
const wireOverhead = 1.02

// throughputBesideIperf3 is how far the median of the agent's three single-stream runs may be
// from iperf3's on the lab's kernel path, where both are CPU-bound on 2 vCPUs (about 10–21
// Gbit/s): a gross-error check only (a unit off by a factor of 2 or more). The agent is the more
// CPU-efficient sender (bench-lab: 1.07–1.11× iperf3's rate, benchmarks/RESULTS.md), and this
// machine's rate drifts within a run: by hand on 2026-12-04 the medians' ratio was 0.78, 0.99,
// 1.12, 1.20 and 1.41 in five runs, single runs of either tool 9.7–21 Gbit/s. The exact check
// is the byte count against the interface above.
var throughputBesideIperf3 = [2]float64{0.5, 2.0}

// rxBytes is what a network namespace's eth0 has received, in bytes (its /proc/net/dev: /proc
// answers for the reading process's namespace, /sys for the one it was mounted in).
func rxBytes(t *testing.T, netns string) float64 {
	t.Helper()
	out, err := exec.Command("nsenter", "--net="+netns, "cat", "/proc/net/dev").Output()
	if err != nil {
		t.Fatalf("/proc/net/dev in %s: %v", netns, err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if name, counters, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(name) == "eth0" {
			if f := strings.Fields(counters); len(f) > 0 {
				if v, err := strconv.ParseFloat(f[0], 64); err == nil {
					return v
				}
			}
		}
	}
	t.Fatalf("no eth0 in %s's /proc/net/dev:\n%s", netns, out)
	return 0
}

func mbits(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprintf("%.0f", x/1e6)
	}
	return strings.Join(s, ", ")
}

// familyIP is the pod's address of one family ("" when it has none).
func familyIP(p corev1.Pod, v6 bool) string {
	for _, a := range p.Status.PodIPs {
		if strings.Contains(a.IP, ":") == v6 {
			return a.IP
		}
	}
	return ""
}

// throughputBound: how far a single-stream figure may be outside the range of iperf3's runs just
// before and after it on the same pair and family: the reference's own noise on this path. The
// path is the lab's user-space delay line, CPU-bound on 2 vCPUs: iperf3's own two runs differed by
// up to 37 % (352 and 481 Mbit/s over IPv6, by hand, 2026-12-04); in CI the agent's IPv6 run got
// 423 Mbit/s between iperf3's 310 and 276 (36 % above the higher), its IPv4 run 318 between
// 324 and 303. So 15 % failed on noise alone. What this comparison can catch is a gross error
// (a byte count off by a factor, a transfer that never ran); which address each probe used is
// checked exactly (targets, and the MSS 20 bytes smaller over IPv6).
const throughputBound = 0.40

// iperf3Bits runs one 3-second iperf3 stream from clientNetns to ip (family flag -4 or -6) and
// returns what the receiver got, in bit/s.
func iperf3Bits(t *testing.T, clientNetns, serverNetns, ip, family string) float64 {
	t.Helper()
	srv := exec.Command("nsenter", "--net="+serverNetns, "iperf3", "-s", "-1", "-p", "5302")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Wait()         //nolint:errcheck
	defer srv.Process.Kill() //nolint:errcheck
	var res struct {
		Error string `json:"error"`
		End   struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	for try := 0; ; try++ { // until the server listens
		exec.Command("sleep", "0.2").Run() //nolint:errcheck
		out, err := exec.Command("nsenter", "--net="+clientNetns, "iperf3", family, "-c", ip, "-p", "5302", "-t", "3", "-J").Output()
		if jerr := json.Unmarshal(out, &res); jerr != nil {
			t.Fatalf("iperf3 %s -c %s: %v, %v\n%s", family, ip, err, jerr, out)
		}
		if res.Error == "" && res.End.SumReceived.BitsPerSecond > 0 {
			break
		}
		if try == 10 {
			t.Fatalf("iperf3 %s -c %s: %s", family, ip, res.Error)
		}
	}
	return res.End.SumReceived.BitsPerSecond
}

// throughputProbe is the report's throughput result named name.
func throughputProbe(t *testing.T, r *report.PathReport, name string) *v1alpha1.ProbeResult {
	t.Helper()
	for _, p := range r.Probes {
		if p.Name == name && p.Throughput != nil {
			return p
		}
	}
	t.Fatalf("no %s throughput result", name)
	return nil
}

// onePod is the one pod of ns with the label selector.
func onePod(t *testing.T, cs kubernetes.Interface, ns, selector string) corev1.Pod {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("pods %s in %s: %v (%d)", selector, ns, err, len(pods.Items))
	}
	return pods.Items[0]
}

// `ladder --ip-family both` measures every rung over each family: each rung's icmp and
// tcp-rtt have IPv6 twins sent to the server agent's IPv6 address (the app pod's own, its
// agent an ephemeral container), the report says so, and --ip-family 6 on a pod without
// IPv6 would be refused (unit-tested: TestLadderIPFamilyRefused).
func TestLadderBothFamilies(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	workloads(t, cs, ns)
	web := onePod(t, cs, ns, "app=web")
	dst4, dst6 := familyIP(web, false), familyIP(web, true)
	if dst6 == "" {
		t.Fatalf("this test needs the dual-stack lab: web has %v", web.Status.PodIPs)
	}
	r := ladderJSON(t, "-n", ns, "deploy/web", "--ip-family", "both", "--probes", "rtt", "--duration", "1s")
	if !strings.HasPrefix(r.IPFamily, "IPv4 and IPv6") {
		t.Errorf("ipFamily %q", r.IPFamily)
	}
	measured := 0
	for _, rung := range r.Rungs {
		if rung.Skipped != "" || len(rung.Results) == 0 {
			continue
		}
		measured++
		got := map[string]string{}
		for _, p := range rung.Results[0].Probes {
			if p.RTT != nil {
				got[p.Name] = p.RTT.Target
			}
			if want := map[bool]string{false: "IPv4", true: "IPv6"}[strings.HasSuffix(p.Name, "-v6")]; p.IPFamily != want {
				t.Errorf("rung %s: %s's ipFamily %q, want %s", rung.Name, p.Name, p.IPFamily, want)
			}
		}
		for name, ip := range map[string]string{"icmp": dst4, "icmp-v6": dst6, "tcp-rtt": dst4, "tcp-rtt-v6": dst6} {
			if !strings.Contains(got[name], ip) {
				t.Errorf("rung %s: %s to %q, want %s (probes: %v)", rung.Name, name, got[name], ip, got)
			}
		}
		for _, f := range []string{"icmp.p50", "icmp-v6.p50"} {
			if _, ok := rung.Figures[f]; !ok {
				t.Errorf("rung %s: no figure %s", rung.Name, f)
			}
		}
	}
	if measured < 3 {
		t.Errorf("%d rungs measured, want same-node, same-zone and cross-zone", measured)
	}
}

// `matrix --ip-family 6` on the dual-stack lab: every agent is measured at its pod's IPv6
// address (the report's nodes, and each pair's ICMP and TCP targets), and every pair answers.
func TestMatrixOverIPv6(t *testing.T) {
	beside(t)
	_, ns := lab(t)
	r := matrixJSON(t, "-n", ns, "--ip-family", "6")
	if r.IPFamily != "IPv6" {
		t.Errorf("ipFamily %q", r.IPFamily)
	}
	addr := map[string]string{}
	for _, n := range r.Nodes {
		addr[n.Name] = n.IP
		if !strings.Contains(n.IP, ":") {
			t.Errorf("node %s: agent at %q, want its IPv6 address", n.Name, n.IP)
		}
	}
	for _, p := range r.Pairs {
		for _, res := range p.Results {
			if res.RTT != nil && !strings.Contains(res.RTT.Target, addr[p.To]) {
				t.Errorf("pair %s → %s: %s to %q, want %s", p.From, p.To, res.Name, res.RTT.Target, addr[p.To])
			}
		}
	}
}
