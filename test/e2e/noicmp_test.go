package e2e

import (
	"strings"
	"testing"
	"time"
)

// lab-b2's runtime grants no unprivileged ICMP (hack/lab/lab.sh, NO_PING_NODE): its pods'
// net.ipv4.ping_group_range is the kernel's "1 0". From an application's pod there, the
// ephemeral agent (no CAP_NET_RAW) cannot ping: `path` exits 0, its icmp probe says why it was not
// run, and the round trip is the TCP handshake's (tcp-rtt), in the JSON and in the human report.
// A temporary agent on the same node (`--mode pod`) asks for the sysctl in its own pod and pings.
func TestPathWithoutICMP(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	workloads(t, cs, ns)
	createPod(t, cs, ns, pod("noping", "lab-b2", "netbench.lab/sample-app:1", nil, map[string]string{"app": "noping"}))
	waitPod(t, cs, ns, "noping", 2*time.Minute, "running", running)

	args := []string{"-n", ns, "pod/noping", "deploy/client", "--probes", "rtt"}
	r := pathJSON(t, args...)
	icmp, tcp := resultNamed(r, "icmp"), resultNamed(r, "tcp-rtt")
	if icmp == nil || !strings.Contains(icmp.Skipped, "ICMP not permitted") {
		t.Errorf("icmp from an application's pod on lab-b2: %s, want it skipped, saying ICMP is not permitted (a lab made before lab-b2's runtime stopped granting unprivileged ICMP: make lab-down lab-up)", describe(icmp))
	}
	if tcp == nil || tcp.RTT == nil || tcp.RTT.Received == 0 {
		t.Errorf("tcp-rtt: %s, want the TCP handshake's round trip", describe(tcp))
	}
	out, stderr, err := netbench(t, append([]string{"path"}, args...)...)
	if err != nil {
		t.Fatalf("path without ICMP: %v\n%s", err, stderr)
	}
	if want := "skipped: icmp: ICMP not permitted"; !strings.Contains(out, want) || !strings.Contains(out, "the TCP handshake RTT is measured instead") || !strings.Contains(out, "tcp-rtt  tcp-connect") {
		t.Errorf("the human report, want %q with the TCP handshake RTT instead:\n%s", want, out)
	}
	t.Logf("report:\n%s", out)

	p := pathJSON(t, append(args, "--mode", "pod")...)
	if icmp := resultNamed(p, "icmp"); icmp == nil || icmp.Skipped != "" || icmp.RTT == nil || icmp.RTT.Received == 0 {
		t.Errorf("icmp from a temporary agent pod on lab-b2: %s, want it measured (the pod asks for ping_group_range)", describe(icmp))
	} else {
		t.Logf("--mode pod on lab-b2: icmp %s, p50 %.0f µs", icmp.RTT.Method, icmp.RTT.RTT.P50Micros)
	}
}
