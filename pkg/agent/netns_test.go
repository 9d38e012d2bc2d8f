package agent

import (
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
