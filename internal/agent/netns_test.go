package agent

import (
	"math"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/vethpair"
)

// Two hosts joined by a veth pair: the client in A measures the server in B over a real link.
func TestAgentAcrossVethEveryProbe(t *testing.T) {
	if why := vethpair.Available(); why != "" {
		t.Skip("veth test skipped: " + why)
	}
	p, err := vethpair.New("nbt", 41)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()

	t.Run("root client", func(t *testing.T) {
		s := startServer(t, p.NSB, "tok-veth", time.Minute)
		events, err := runJob(t, p.NSA, fullJob(p.AddrB, s.port, "tok-veth"), 0)
		if err != nil {
			t.Fatalf("agent run: %v (events %+v)", err, events)
		}
		checkFullJob(t, events, true)
		if r := results(events)[ProbeICMP]; r != nil && r.RTT != nil && r.RTT.Method != "icmp-unprivileged" && r.RTT.Method != "icmp-raw" {
			t.Errorf("icmp method %q", r.RTT.Method)
		}
		if ev := s.waitExit(t, 5*time.Second); ev.Message != "client said done" {
			t.Errorf("server exit %+v", ev)
		}
	})

	// The agent's image runs as uid 65532 without capabilities: ICMP then needs the namespace's
	// ping_group_range, and is skipped with the reason when it is closed.
	const nonRoot = 65532
	for _, tc := range []struct {
		name, groupRange string
		wantICMP         bool
	}{
		{"non-root, ping group range closed", "1 0", false},
		{"non-root, ping group range open", "0 2147483647", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := vethpair.SetPingGroupRange(p.NSA, tc.groupRange); err != nil {
				t.Fatal(err)
			}
			s := startServer(t, p.NSB, "tok-nr", time.Minute)
			job := Job{APIVersion: APIVersion, Host: p.AddrB, Port: s.port, Token: "tok-nr", Done: true,
				Probes: []ProbeSpec{{Kind: ProbeICMP, Count: 5, IntervalMillis: 10}, {Kind: ProbeTCPRTT, Count: 5, IntervalMillis: 10}}}
			events, err := runJob(t, p.NSA, job, nonRoot)
			if err != nil {
				t.Fatalf("agent run: %v (events %+v)", err, events)
			}
			res := results(events)
			icmp := res[ProbeICMP]
			switch {
			case icmp == nil:
				t.Fatal("no icmp result")
			case tc.wantICMP && (icmp.RTT == nil || icmp.RTT.Method != "icmp-unprivileged" || icmp.RTT.Received != 5):
				t.Errorf("want unprivileged ICMP, got %+v", icmp)
			case !tc.wantICMP && icmp.Skipped == "":
				t.Errorf("want icmp skipped with a reason, got %+v", icmp)
			}
			if tcp := res[ProbeTCPRTT]; tcp == nil || tcp.RTT == nil || tcp.RTT.Received != 5 {
				t.Errorf("tcp rtt must always be there: %+v", tcp)
			}
			s.waitExit(t, 5*time.Second)
		})
	}
}

var pingTime = regexp.MustCompile(`time=([0-9.]+) ms`)

// pingMedian runs iputils ping inside ns and returns its median RTT in µs (nearest rank).
func pingMedian(t *testing.T, ns, target string, count int) float64 {
	t.Helper()
	out, err := vethpair.Command(ns, "ping", "-n", "-c", strconv.Itoa(count), "-i", "0.01", target).Output()
	if err != nil {
		t.Fatalf("ping: %v", err)
	}
	var v []float64
	for _, m := range pingTime.FindAllSubmatch(out, -1) {
		f, _ := strconv.ParseFloat(string(m[1]), 64)
		v = append(v, f*1000)
	}
	if len(v) != count {
		t.Fatalf("ping got %d of %d replies", len(v), count)
	}
	sort.Float64s(v)
	return v[(len(v)+1)/2-1]
}

// The RTT probes agree with iputils ping on the same veth path. The bound is loose on purpose:
// it checks units and method (a ms/µs mix-up, a thread wake-up counted as network time on a
// path this short), not a timing goal; benchmarks/RESULTS.md holds the precise side-by-side.
func TestRTTAgreesWithPing(t *testing.T) {
	if why := vethpair.Available(); why != "" {
		t.Skip("veth test skipped: " + why)
	}
	if _, err := exec.LookPath("ping"); err != nil {
		t.Skip("ping (iputils-ping) is not installed")
	}
	p, err := vethpair.New("nbp", 42)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	s := startServer(t, p.NSB, "tok-rtt", time.Minute)
	ref := pingMedian(t, p.NSA, p.AddrB, 100)
	job := Job{APIVersion: APIVersion, Host: p.AddrB, Port: s.port, Token: "tok-rtt", Done: true,
		Probes: []ProbeSpec{{Kind: ProbeICMP, Count: 100, IntervalMillis: 10}, {Kind: ProbeTCPRTT, Count: 100, IntervalMillis: 10}}}
	events, err := runJob(t, p.NSA, job, 0)
	if err != nil {
		t.Fatalf("agent run: %v", err)
	}
	res := results(events)
	for _, k := range []string{ProbeICMP, ProbeTCPRTT} {
		r := res[k].RTT
		if r.Timestamps != "kernel" {
			t.Errorf("%s: timestamps %q, want kernel", k, r.Timestamps)
		}
		diff := math.Abs(r.RTT.P50Micros - ref)
		t.Logf("%s p50 %.1f µs, ping p50 %.1f µs", k, r.RTT.P50Micros, ref)
		if diff > 100 && diff > ref {
			t.Errorf("%s p50 %.1f µs, ping says %.1f µs on the same path", k, r.RTT.P50Micros, ref)
		}
	}
	s.waitExit(t, 5*time.Second)
}
