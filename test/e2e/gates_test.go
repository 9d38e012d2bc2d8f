package e2e

import (
	"context"
	"encoding/xml"
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/render"

	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// exitCode is a finished command's exit code (0 for success).
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.ExitCode()
	}
	t.Fatalf("the command did not run: %v", err)
	return -1
}

// --fail-if on a real run: a condition that holds fails the run with exit 3 naming the figure
// and its value, one that does not passes; bad conditions are refused before anything starts;
// the checks come out as JUnit and OpenMetrics that parse.
func TestFailIfGates(t *testing.T) {
	cs, ns := lab(t)
	workloads(t, cs, ns)
	base := []string{"path", "-n", ns, "deploy/client", "deploy/web", "--probes", "rtt"}

	r := runJSON[report.PathReport](t, append(base, "--fail-if", "rtt.p50 > 1s", "--fail-if", "tcp-rtt.p99 > 10 * icmp.p99 + 1ms")...)
	if len(r.Checks) != 2 || r.Checks[0].Violated || r.Checks[1].Violated || r.Checks[0].Values["rtt.p50"].Value <= 0 {
		t.Errorf("checks that hold: %+v", r.Checks)
	}

	out, stderr, err := netbench(t, append(base, "--fail-if", "rtt.p50 > 1us", "--fail-if", "rtt.p99 > 1s")...)
	if code := exitCode(t, err); code != cmdutil.ExitGateFailed {
		t.Fatalf("exit %d, want %d\n%s", code, cmdutil.ExitGateFailed, stderr)
	}
	for _, want := range []string{"1 of 2 --fail-if conditions failed", "rtt.p50 > 1us", "rtt.p50 = "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(out, "FAILED rtt.p50 > 1us") || !strings.Contains(out, "ok     rtt.p99 > 1s") {
		t.Errorf("the report does not list the checks:\n%s", out)
	}

	// Refused before anything is created: the client pod gains no ephemeral container.
	before := ephemeralCount(t, cs, ns, "client")
	for cond, want := range map[string]string{
		"udp.p50 > 1ms":   `unknown figure "udp.p50"`,
		"rtt.p50 >> 1ms":  "column 10",
		"rtt.p50 > 5Gbps": "compares a time with a bit rate",
	} {
		_, stderr, err := netbench(t, append(base, "--fail-if", cond)...)
		if code := exitCode(t, err); code != 1 || !strings.Contains(stderr, want) || strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
			t.Errorf("--fail-if %q: exit %d, stderr %q; want 1 and one line with %q", cond, code, stderr, want)
		}
	}
	if after := ephemeralCount(t, cs, ns, "client"); after != before {
		t.Errorf("refused runs added %d ephemeral containers", after-before)
	}

	out, _, err = netbench(t, append(base, "--fail-if", "rtt.p50 > 1us", "--fail-if", "rtt.p50 > 1s", "-o", "junit")...)
	if code := exitCode(t, err); code != cmdutil.ExitGateFailed {
		t.Errorf("junit run: exit %d", code)
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suite    []struct {
			Cases []struct {
				Name    string    `xml:"name,attr"`
				Failure *struct{} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal([]byte(out), &suites); err != nil || suites.Tests != 2 || suites.Failures != 1 ||
		len(suites.Suite) != 1 || suites.Suite[0].Cases[0].Failure == nil || suites.Suite[0].Cases[1].Failure != nil {
		t.Errorf("junit: %v %+v\n%s", err, suites, out)
	}
}

func ephemeralCount(t *testing.T, cs kubernetes.Interface, ns, app string) int {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range pods.Items {
		n += len(p.Spec.EphemeralContainers)
	}
	return n
}

// The ladder and dns take --fail-if too, over their own figures.
func TestFailIfLadderAndDNS(t *testing.T) {
	cs, ns := lab(t)
	workloads(t, cs, ns)
	r := runJSON[report.LadderReport](t, "ladder", "-n", ns, "deploy/web", "--probes", "rtt",
		"--fail-if", "cross-zone.rtt.p50 > 100 * same-node.rtt.p50", "--fail-if", "crosszone.icmp.p99 > 1s")
	if len(r.Checks) != 2 || r.Checks[0].Violated || r.Checks[1].Violated {
		t.Errorf("ladder checks: %+v", r.Checks)
	}
	_, stderr, err := netbench(t, "ladder", "-n", ns, "deploy/web", "--probes", "rtt", "--fail-if", "cross-region.rtt.p50 > 1ms")
	if code := exitCode(t, err); code != 1 || !strings.Contains(stderr, `unknown figure "cross-region.rtt.p50"`) {
		t.Errorf("a rung the lab does not have: exit %d %s", code, stderr)
	}
	// kubernetes.default takes several queries from a pod (ndots 5): a gate at 1 fails.
	_, stderr, err = netbench(t, "dns", "-n", ns, "deploy/client", "--fail-if", "dns.kubernetes.default.queries > 1", "--fail-if", "dns.kubernetes.default.p99 > 10s")
	if code := exitCode(t, err); code != cmdutil.ExitGateFailed || !strings.Contains(stderr, "dns.kubernetes.default.queries = ") {
		t.Errorf("dns gate: exit %d\n%s", code, stderr)
	}
}

// -o openmetrics on a real run is accepted by the Prometheus project's OpenMetrics parser and
// carries the run's figures in base units with the path's labels; over both families, each
// probe's samples under one probe label, told apart by ip_family.
func TestOpenMetricsFromARealRun(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	workloads(t, cs, ns)
	out, stderr, err := netbench(t, "path", "-n", ns, "deploy/client", "deploy/web", "--probes", "rtt,udp,path-mtu", "--ip-family", "both",
		"-o", "openmetrics", "--fail-if", "udp.loss > 50%")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	fams, err := render.DecodeOpenMetrics(strings.NewReader(out))
	if err != nil {
		t.Fatalf("Prometheus' parser: %v\n%s", err, out)
	}
	for _, name := range []string{"netbench_latency_seconds", "netbench_loss_ratio", "netbench_jitter_seconds", "netbench_path_mtu_bytes", "netbench_check_violated"} {
		if fams[name] == nil {
			t.Errorf("no %s in:\n%s", name, out)
		}
	}
	for _, m := range fams["netbench_path_mtu_bytes"].GetMetric() {
		if v := m.GetGauge().GetValue(); v != 1500 {
			t.Errorf("path MTU %v %v", v, render.MetricLabels(m))
		}
	}
	if n := len(fams["netbench_path_mtu_bytes"].GetMetric()); n != 2 {
		t.Errorf("%d path MTU samples, want one per family", n)
	}
	perProbe := map[string]map[string]bool{}
	for _, m := range fams["netbench_latency_seconds"].GetMetric() {
		labels := render.MetricLabels(m)
		if v := m.GetGauge().GetValue(); !latencyInSeconds(t, v, labels, fams) || labels["path_class"] != "cross-zone" || labels["source_zone"] != "zone-a" || labels["destination_node"] != "lab-b1" {
			t.Errorf("latency sample %v %v", v, labels)
		}
		if perProbe[labels["probe"]] == nil {
			perProbe[labels["probe"]] = map[string]bool{}
		}
		perProbe[labels["probe"]][labels["ip_family"]] = true
	}
	for _, probe := range []string{"icmp", "udp"} {
		if got := perProbe[probe]; len(got) != 2 || !got["IPv4"] || !got["IPv6"] {
			t.Errorf("probe %s: ip_family %v, want IPv4 and IPv6 (all: %v)", probe, got, perProbe)
		}
	}
}

// latencyInSeconds checks a latency sample's unit: the lab's cross-zone medians are 0.1-1 ms,
// so a median above 0.1 is in milliseconds or finer, not seconds. The tail is not held to
// that: a p99 of 20 echoes is their slowest, and one echo of a run beside the other tests on
// the 2-vCPU lab came back after 141 ms in CI (not reproduced here: beside three busy loops
// the slowest of 20 was 0.3 ms, beside a TCP transfer from the same node 2.2 ms); it is logged
// with the probe's validity, and only a value past the probes' time-out (1 s; 2 s allowed)
// is a unit error.
func latencyInSeconds(t *testing.T, v float64, labels map[string]string, fams map[string]*dto.MetricFamily) bool {
	t.Helper()
	if v <= 0 || v > 2 || labels["quantile"] == "0.5" && v > 0.1 {
		return false
	}
	if v > 0.1 {
		t.Logf("a tail above 100 ms: %s %s p%s %.1f ms (netbench_probe_valid %v)", labels["probe"], labels["ip_family"], labels["quantile"], v*1e3, probeValid(fams, labels))
	}
	return true
}

// probeValid is the netbench_probe_valid samples of a probe and family, for the log.
func probeValid(fams map[string]*dto.MetricFamily, labels map[string]string) []float64 {
	var out []float64
	for _, m := range fams["netbench_probe_valid"].GetMetric() {
		if l := render.MetricLabels(m); l["probe"] == labels["probe"] && l["ip_family"] == labels["ip_family"] {
			out = append(out, m.GetGauge().GetValue())
		}
	}
	return out
}

// The UDP probe: no loss on the lab; the injected loss when a node drops a share of UDP (both
// directions pass the node, so 20 % each way loses 36 % of round trips); UDP filtered entirely.
// Each is a subtest, so that a mutation run (hack/mutations.sh) can run the one its defect fails.
func TestUDPProbeLossAndRTT(t *testing.T) {
	cs, ns := lab(t)
	workloads(t, cs, ns)
	args := []string{"path", "-n", ns, "deploy/client", "deploy/web", "--probes", "rtt,udp"}
	t.Run("rtt-beside-ping", func(t *testing.T) { udpRTTBesidePing(t, args) })
	t.Run("loss-each-way", func(t *testing.T) { udpLossEachWay(t, args) })
	t.Run("udp-filtered", func(t *testing.T) { udpFiltered(t, ns) })
}

// udpRTTBesidePing compares the UDP probe's RTT with ICMP on the same path at the same rate:
// iputils ping from the client pod's network namespace (1000 echoes 1 ms apart), five rounds
// alternating with the probe's, compared pairwise. The agent's echo runs in user space; its dwell
// (kernel receive → the answer's transmit stamp) is taken off, which brings it from +60 µs to
// +12…+18 µs over ping on this 2-vCPU lab (the median of the rounds' differences;
// benchmarks/notes/2026-11-30-udp-results.md). What is left is the answer's path through the
// stack sent from the other vCPU than the one that received the request (ICMP answers in the
// receiving softirq): +7.5 µs with the whole lab on one vCPU, and it grows with the machine's
// cross-CPU wake-up cost, which the dwell measures — +28 µs beside a 73 µs dwell in one CI run
// (benchmarks/notes/2026-12-05-udp-echo-cpu.md). So the test allows up to 25 µs over ping, or
// half the median dwell if that is more, never more than 40 µs; under ping by at most 25 µs
// (ICMP answered in the receiving softirq is the floor: a dwell reported too large shows
// there). The goal stays 20 µs, logged when missed; the defect the test names (udp-dwell-kept:
// the dwell left in) adds a whole dwell, more than half of it.
func udpRTTBesidePing(t *testing.T, args []string) {
	var diffs, dwells []float64
	for round := 0; round < 5; round++ {
		r := runJSON[report.PathReport](t, args...)
		udp := probe(t, r, "udp")
		if udp.RTT.LossPercent != 0 || udp.RTT.Received != udp.RTT.Sent || udp.RTT.Sent != 1000 || udp.RTT.Timestamps != "kernel" || udp.RTT.ServerDwell == nil {
			t.Errorf("udp without loss: %+v", udp.RTT)
		}
		ping := pingMedian(t, podNetns(t, r.Source.Node, r.Source.PodIP), r.Destination.PodIP, 1000, "0.001")
		t.Logf("round %d: udp p50 %.1f µs (server dwell p50 %.1f µs taken off; jitter %.1f µs), ping p50 %.1f µs, icmp probe p50 %.1f µs (20 × 50 ms)",
			round+1, udp.RTT.RTT.P50Micros, udp.RTT.ServerDwell.P50Micros, udp.RTT.JitterMicros, ping, probe(t, r, "icmp").RTT.RTT.P50Micros)
		diffs = append(diffs, udp.RTT.RTT.P50Micros-ping)
		dwells = append(dwells, udp.RTT.ServerDwell.P50Micros)
	}
	d, allowed := median(diffs), min(40, max(25, median(dwells)/2))
	t.Logf("udp p50 − ping p50 at the same rate, per round: %.1f µs; median %+.1f µs (allowed −25…+%.1f µs: 25, or half the median dwell %.1f µs up to 40)", diffs, d, allowed, median(dwells))
	if d > 20 {
		t.Logf("the goal, within 20 µs of ping, is not met on this machine (+%.1f µs)", d)
	}
	if d < -25 || d > allowed {
		t.Errorf("udp p50 is %+.1f µs from ping's at the same rate (median of %d rounds): want within 20 µs (−25…+%.1f allowed: 25 µs, or half the server's median dwell up to 40)", d, len(diffs), allowed)
	}
}

// udpLossEachWay drops 20 % of UDP each way at the server's node: 1 − 0.8² = 36 % of round trips
// are lost. Over n datagrams the share drawn has a binomial standard deviation of
// √(0.36 × 0.64 / n) (1.5 points for 1000): 4 of them allowed. Loss counted in one direction only
// (20 %) falls outside.
func udpLossEachWay(t *testing.T, args []string) {
	labScript(t, "udp-loss", "lab-b1", "20")
	t.Cleanup(func() { labScript(t, "udp-loss", "lab-b1", "off") })
	lossy := probe(t, runJSON[report.PathReport](t, args...), "udp")
	if lossy.RTT.Sent != 1000 {
		t.Fatalf("udp with loss: %d datagrams sent, want 1000", lossy.RTT.Sent)
	}
	const want = 1 - 0.8*0.8
	sd := 100 * math.Sqrt(want*(1-want)/float64(lossy.RTT.Sent))
	t.Logf("with 20 %% dropped each way at lab-b1: %.1f %% of %d datagrams lost (%.0f ± %.1f %% expected)", lossy.RTT.LossPercent, lossy.RTT.Sent, 100*want, 4*sd)
	if math.Abs(lossy.RTT.LossPercent-100*want) > 4*sd {
		t.Errorf("%.1f %% of %d datagrams lost, want %.0f ± %.1f %%: 20 %% dropped each way (4 binomial standard deviations)", lossy.RTT.LossPercent, lossy.RTT.Sent, 100*want, 4*sd)
	}
}

// udpFiltered drops all UDP at the server's node (as a policy allowing only TCP would): the UDP
// probes are skipped with the reason, the rest is measured, and the run succeeds.
func udpFiltered(t *testing.T, ns string) {
	labScript(t, "udp-loss", "lab-b1", "100")
	t.Cleanup(func() { labScript(t, "udp-loss", "lab-b1", "off") })
	r := runJSON[report.PathReport](t, "path", "-n", ns, "deploy/client", "deploy/web", "--probes", "rtt,udp,path-mtu")
	skipped := strings.Join(r.Skipped, "\n")
	for _, want := range []string{"udp: no answer to any of 1000 datagrams", "path-mtu: no answer", "may allow only TCP"} {
		if !strings.Contains(skipped, want) {
			t.Errorf("skipped lacks %q: %v", want, r.Skipped)
		}
	}
	if probe(t, r, "icmp").RTT.Received == 0 {
		t.Error("icmp not measured")
	}
}

// pingMedian runs iputils ping in a network namespace and returns the median of its replies'
// times in µs.
func pingMedian(t *testing.T, netns, ip string, count int, interval string) float64 {
	t.Helper()
	out, err := exec.Command("nsenter", "--net="+netns, "ping", "-n", "-c", strconv.Itoa(count), "-i", interval, ip).Output()
	if err != nil {
		t.Fatalf("ping: %v\n%s", err, out)
	}
	var ms []float64
	for _, m := range pingTime.FindAllStringSubmatch(string(out), -1) {
		v, _ := strconv.ParseFloat(m[1], 64)
		ms = append(ms, v*1000)
	}
	if len(ms) < count/2 {
		t.Fatalf("ping: %d replies of %d", len(ms), count)
	}
	return median(ms)
}

// pingBound is how far the agent's ICMP p50 may be from iputils ping's median on the same pair
// (5 % + 150 µs): on the lab with the zone delay on, the median of 30 pings taken at different
// moments spread by up to 23, 91 and 80 µs on the same-node, same-zone and cross-zone paths, and
// the agent's p50 was within 9, 56 and 76 µs of the pings around it
// (benchmarks/notes/2026-12-03-ping-bounds.md). A timer wake-up added to each RTT (fault
// rtt-wakeup: a 300 µs sleep, about 1.1 ms in the agent on the lab) exceeds it.
func pingBound(ping float64) float64 { return 0.05*ping + 150 }

var pingTime = regexp.MustCompile(`time=([\d.]+) ms`)

func median(vs []float64) float64 {
	s := slices.Clone(vs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func probe(t *testing.T, r *report.PathReport, name string) *agent.ProbeResult {
	t.Helper()
	for _, p := range r.Probes {
		if p.Name == name && p.RTT != nil {
			return p
		}
	}
	t.Fatalf("no %s result in %+v", name, r.Probes)
	return nil
}

// With lab-b1's pod side at MTU 1400, the path-MTU probe finds 1400 on paths into it and 1500
// elsewhere, and says the interfaces disagree; TCP's MSS follows.
func TestPathMTUThroughANarrowNode(t *testing.T) {
	cs, ns := lab(t)
	workloads(t, cs, ns)
	labScript(t, "mtu", "lab-b1", "1400")
	t.Cleanup(func() { labScript(t, "mtu", "lab-b1", "off") })
	narrow := runJSON[report.PathReport](t, "path", "-n", ns, "deploy/client", "deploy/web", "--probes", "path-mtu,tcp", "--duration", "1s")
	wide := runJSON[report.PathReport](t, "path", "-n", ns, "deploy/client", "sts/db", "--probes", "path-mtu")
	figs := report.Figures(narrow.FigureValues())
	if got := figs["path-mtu.bytes"].Value; got != 1400 {
		t.Errorf("into lab-b1: path MTU %v, want 1400", got)
	}
	// TCP and IP headers: 40 bytes over IPv4, 60 over IPv6 (an IPv6-primary lab), 12 more with time stamps.
	hdr := 40.0
	if narrow.IPFamily == "IPv6" {
		hdr = 60
	}
	if got := figs["tcp-1.mss"].Value; got != 1400-hdr && got != 1400-hdr-12 {
		t.Errorf("into lab-b1 over %s: MSS %v, want %v (or %v with time stamps)", narrow.IPFamily, got, 1400-hdr, 1400-hdr-12)
	}
	if !strings.Contains(strings.Join(narrow.Warnings, "\n"), "interface MTUs disagree (1500 at SRC, 1400 at DST") {
		t.Errorf("no MTU warning: %v", narrow.Warnings)
	}
	if got := report.Figures(wide.FigureValues())["path-mtu.bytes"].Value; got != 1500 {
		t.Errorf("lab-a1 → lab-a2: path MTU %v, want 1500", got)
	}
	pathMTUOverIPv6(t, cs, ns)
}

// pathMTUOverIPv6: with lab-b1's pod side at 1400 (as the caller left it), then at IPv6's
// minimum 1280, each family's probe into lab-b1 finds that size, the node refusing larger
// packets with ICMP "fragmentation needed" / ICMPv6 "Packet Too Big"; the lab refuses an MTU
// below 1280 where pods have IPv6.
func pathMTUOverIPv6(t *testing.T, cs kubernetes.Interface, ns string) {
	if web := onePod(t, cs, ns, "app=web"); familyIP(web, true) == "" {
		t.Fatalf("this test needs the dual-stack lab (LAB_IP_FAMILY 4,6, the default, or 6,4): web has %v", web.Status.PodIPs)
	}
	for _, mtu := range []int{1400, 1280} {
		labScript(t, "mtu", "lab-b1", strconv.Itoa(mtu))
		r := runJSON[report.PathReport](t, "path", "-n", ns, "deploy/client", "deploy/web", "--probes", "path-mtu", "--ip-family", "both")
		for _, p := range r.Probes {
			if p.PMTU == nil {
				continue
			}
			t.Logf("MTU %d into lab-b1: %s (%s) %+v", mtu, p.Name, p.IPFamily, *p.PMTU)
			if p.PMTU.PathMTU != mtu || !p.PMTU.FragNeeded {
				t.Errorf("%s (%s) into lab-b1 at MTU %d: path MTU %d, refused by a hop: %v; want %d, refused", p.Name, p.IPFamily, mtu, p.PMTU.PathMTU, p.PMTU.FragNeeded, mtu)
			}
		}
		if n := len(r.Probes); n != 2 {
			t.Errorf("MTU %d: %d probes, want path-mtu and path-mtu-v6", mtu, n)
		}
	}
	if out, err := exec.Command("../../hack/lab/lab.sh", "mtu", "lab-b1", "1279").CombinedOutput(); err == nil || !strings.Contains(string(out), "IPv6 needs at least 1280") {
		t.Errorf("lab.sh mtu lab-b1 1279 on a lab with IPv6: %v %s; want refused (IPv6 needs 1280)", err, out)
	}
}

// diff on real runs: two runs without a change show no change beyond the spread; with the zone
// delay switched on between them, the RTT regression is reported and --fail-if-regressed
// exits 3.
func TestDiffSeesTheZoneDelay(t *testing.T) {
	cs, ns := lab(t)
	workloads(t, cs, ns)
	dir := t.TempDir()
	run := func(name string) string {
		out, stderr, err := netbench(t, "path", "-n", ns, "deploy/client", "deploy/web", "--probes", "rtt", "-o", "json")
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		f := filepath.Join(dir, name)
		if err := os.WriteFile(f, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		return f
	}
	diff := func(old, cur string) (*report.DiffReport, int) {
		out, stderr, err := netbench(t, "diff", old, cur, "-o", "json", "--fail-if-regressed", "50")
		code := exitCode(t, err)
		if code != 0 && code != cmdutil.ExitGateFailed {
			t.Fatalf("diff: exit %d\n%s", code, stderr)
		}
		return decodeStrict[report.DiffReport](t, out), code
	}
	// Two runs with nothing changed pass the 50 % gate. (Diff's own 10 % verdict may still call a
	// figure regressed: on the busy 2-core CI machine the cross-zone icmp.p50 went from 151 to
	// 185 µs between two runs seconds apart, out of both runs' ranges, a real change of the path.)
	a, b := run("a.json"), run("b.json")
	same, code := diff(a, b)
	if code != 0 || len(same.Figures) < 4 {
		t.Errorf("no change made, yet: exit %d, %+v", code, same.Figures)
	}
	labScript(t, "delay", "300us", "2ms")
	t.Cleanup(func() { labScript(t, "delay", "off") })
	c := run("c.json")
	slower, code := diff(a, c)
	if code != cmdutil.ExitGateFailed || slower.Regressions == 0 {
		t.Fatalf("with 2 ms more each way: exit %d, %+v", code, slower.Figures)
	}
	for _, f := range slower.Figures {
		if f.Name == "icmp.p50" && (f.Verdict != report.Regressed || f.Change < 3500) {
			t.Errorf("icmp.p50: %+v, want regressed by about 4 ms", f)
		}
	}
	human, _, _ := netbench(t, "diff", a, c)
	if !strings.Contains(human, "** regressed") {
		t.Errorf("the table does not mark the regression:\n%s", human)
	}
}
