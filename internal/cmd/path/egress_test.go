package path

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// egressResult is an agent's result event of an egress probe whose far side saw seen.
func egressResult(seen string) agent.Event {
	lat := v1alpha1.Latency{Count: 3, P50Micros: 900}
	return agent.Event{Type: agent.EventResult, Probe: agent.ProbeEgress, Result: &agent.ProbeResult{Name: agent.ProbeEgress, Kind: agent.ProbeEgress,
		Egress: &v1alpha1.EgressResult{Target: "https://outside.example/ip", Scheme: "https", Host: "outside.example", Port: "443", NewConnections: 3,
			Connect: lat, FirstByteNew: &lat, FirstByteReused: &lat, SeenSource: seen}}}
}

// DST a URL: one agent, in SRC's pod, with the egress probe as its whole job; the report names
// the destination and whose address the far side saw; nothing is left.
func TestEgressRun(t *testing.T) {
	for _, tc := range []struct {
		seen, want string
		gateway    bool
	}{
		{"10.0.0.4", "the far side saw the pod's own address 10.0.0.4 (no SNAT)", false},
		{"192.0.2.1", "the far side saw node n1's address 192.0.2.1 (SNAT on the node)", false},
		{"::ffff:192.0.2.1", "the far side saw node n1's address ::ffff:192.0.2.1 (SNAT on the node)", false},
		{"203.0.113.9", "the far side saw 203.0.113.9, neither the pod's own address nor the node's (a NAT or egress gateway", true},
		{"", "the far side did not echo the address it saw", true},
	} {
		t.Run("seen "+tc.seen, func(t *testing.T) {
			pods := fakecluster.TwoPods()
			pods[0].Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.4"}}
			f := fakecluster.New(t, pods...)
			node := &corev1.Node{}
			node.Name, node.Status.Addresses = "n1", []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "192.0.2.1"}}
			if _, err := f.Clientset.CoreV1().Nodes().Create(context.Background(), node, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			f.Script[string(session.RoleClient)] = fakecluster.Then(fakecluster.Events(egressResult(tc.seen), agent.Event{Type: agent.EventExit, Message: "job finished"}))
			o, out := newTestPathOptions(f)
			o.DstArg, o.Probes = "https://outside.example/ip?token=s3cret", probeGroups
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := o.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			var r report.PathReport
			if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
				t.Fatal(err)
			}
			if r.Path.Class != v1alpha1.Egress || !strings.Contains(r.Path.Reason, tc.want) {
				t.Errorf("path %+v, want class egress and %q", r.Path, tc.want)
			}
			if r.Destination.External != "https://outside.example/ip" || strings.Contains(out.String(), "s3cret") {
				t.Errorf("destination %+v: want the URL without its query, which appears nowhere", r.Destination)
			}
			if c := r.EgressCost; tc.gateway && (c == nil || c.PricePerGBUSD != 0.045 || c.MonthlyUSDPerGbps != 14580) || !tc.gateway && c != nil || r.Cost != nil {
				t.Errorf("egress cost %+v, cross-zone cost %+v: want AWS's NAT price (324,000 GB a month at 1 Gbit/s) only where a gateway may be on the way, and no cross-zone cost", c, r.Cost)
			}
			if len(r.Probes) != 1 || r.Probes[0].Egress == nil || r.Source.Pod != "client-1" {
				t.Errorf("probes %+v source %+v", r.Probes, r.Source)
			}
			if left := fakecluster.AgentPods(t, f); len(left) != 0 {
				t.Errorf("agent pods left: %v", left)
			}
		})
	}
}

// A destination the agent cannot measure fails the run with the agent's one line.
func TestEgressRunFails(t *testing.T) {
	f := fakecluster.New(t, fakecluster.TwoPods()...)
	f.Script[string(session.RoleClient)] = fakecluster.Then(fakecluster.Events(agent.Event{Type: agent.EventError, Probe: agent.ProbeEgress,
		Message: "name not found: nowhere.example does not resolve (NXDOMAIN or no address)"}, agent.Event{Type: agent.EventExit}))
	o, _ := newTestPathOptions(f)
	o.DstArg, o.Probes = "http://nowhere.example/", probeGroups
	err := o.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "egress probe in shop/client-1: name not found: nowhere.example does not resolve") || strings.Contains(err.Error(), "\n") {
		t.Fatalf("error %v, want the agent's one line", err)
	}
	if left := fakecluster.AgentPods(t, f); len(left) != 0 {
		t.Errorf("agent pods left: %v", left)
	}
}
