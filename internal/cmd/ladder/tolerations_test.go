package ladder

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/placement"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

var (
	controlPlaneTaint = corev1.Taint{Key: "node-role.kubernetes.io/control-plane", Effect: corev1.TaintEffectNoSchedule}
	gpuTaint          = corev1.Taint{Key: "gpu", Value: "yes", Effect: corev1.TaintEffectNoSchedule}
	spotTaint         = corev1.Taint{Key: "spot", Effect: corev1.TaintEffectNoExecute}
)

// Clients on other nodes than DST's take DST's tolerations but never one of a control-plane
// taint; a toleration of every taint becomes one per other taint of the cluster's nodes.
func TestLadderClientTolerations(t *testing.T) {
	nodes := []placement.Node{
		{Name: "cp", Taints: []corev1.Taint{controlPlaneTaint, {Key: "node-role.kubernetes.io/master", Effect: corev1.TaintEffectNoSchedule}}},
		{Name: "gpu-1", Taints: []corev1.Taint{gpuTaint}},
		{Name: "gpu-2", Taints: []corev1.Taint{gpuTaint}},
		{Name: "spot", Taints: []corev1.Taint{spotTaint}},
	}
	secs := int64(60)
	tests := []struct {
		name string
		tol  []corev1.Toleration
		want []corev1.Toleration
	}{
		{"none", nil, nil},
		{"a workload's own", []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "yes"}},
			[]corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpEqual, Value: "yes"}}},
		{"the control plane's, by key", []corev1.Toleration{
			{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			{Key: "node-role.kubernetes.io/master", Operator: corev1.TolerationOpExists},
		}, nil},
		{"every taint (a DaemonSet's)", []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, []corev1.Toleration{
			{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule},
			{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute},
		}},
		{"every NoExecute taint, for a while", []corev1.Toleration{{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs}},
			[]corev1.Toleration{{Key: "spot", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &secs}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, clientTolerations(tc.tol, nodes)); d != "" {
				t.Errorf("tolerations (-want +got):\n%s", d)
			}
		})
	}
}

// DST tolerates every taint and a control-plane node comes first in its zone-a: the cross-zone
// client goes to the other node of zone-a, without DST's blanket toleration; the same-node
// client, on DST's node, keeps DST's tolerations.
func TestLadderClientsStayOffControlPlanes(t *testing.T) {
	all := []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	f := fakecluster.New(t, fakecluster.NewPod(func(p *corev1.Pod) { p.Name, p.Spec.NodeName, p.Status.PodIP = "client-1", "n1", "10.0.0.4" }),
		fakecluster.NewPod(func(p *corev1.Pod) { p.Spec.NodeName, p.Spec.Tolerations = "n2", all }))
	got := clientTolerationsOn(t, f, fakecluster.LabNode("a0-control-plane", "zone-a", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{controlPlaneTaint} }),
		fakecluster.LabNode("n1", "zone-a"), fakecluster.LabNode("n2", "zone-b"))
	o, _ := newTestLadderOptions(f)
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := map[string][]corev1.Toleration{"n2": all, "n1": nil}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("client tolerations by node (-want +got):\n%s", d)
	}
}

// A node tainted for the agents (zone-a's only one): without --toleration its rung is skipped
// with the taint named; with it, the cross-zone client runs there and tolerates that taint.
func TestLadderTolerationFlag(t *testing.T) {
	dedicated := corev1.Taint{Key: "netbench.lab/agents", Value: "only", Effect: corev1.TaintEffectNoSchedule}
	for _, tc := range []struct {
		flag     []string
		skipped  string
		tolerate bool
	}{
		{nil, "has taint netbench.lab/agents=only:NoSchedule that", false},
		{[]string{"netbench.lab/agents=only:NoSchedule"}, "", true},
	} {
		t.Run(fmt.Sprint(tc.flag), func(t *testing.T) {
			f := fakecluster.New(t, fakecluster.NewPod(func(p *corev1.Pod) { p.Name, p.Spec.NodeName, p.Status.PodIP = "client-1", "n1", "10.0.0.4" }),
				fakecluster.NewPod(func(p *corev1.Pod) { p.Spec.NodeName = "n2" }))
			got := clientTolerationsOn(t, f, fakecluster.LabNode("n1", "zone-a", func(n *corev1.Node) { n.Spec.Taints = []corev1.Taint{dedicated} }),
				fakecluster.LabNode("n2", "zone-b"))
			o, out := newTestLadderOptions(f)
			o.TolerationSpecs = tc.flag
			r := runLadder(t, o, out)
			skipped := map[string]string{}
			for _, rung := range r.Rungs {
				skipped[rung.Name] = rung.Skipped
			}
			if s := skipped["cross-zone zone-a"]; (tc.skipped == "") != (s == "") || !strings.Contains(s, tc.skipped) {
				t.Errorf("cross-zone rung skipped %q, want %q", s, tc.skipped)
			}
			tol, onN1 := got["n1"]
			if onN1 != tc.tolerate || (onN1 && !tol[len(tol)-1].ToleratesTaint(klog.Background(), &dedicated, true)) {
				t.Errorf("client on the tainted node: %v with tolerations %v, want %v", onN1, tol, tc.tolerate)
			}
		})
	}
}

// clientTolerationsOn adds nodes to f, scripts a server and clients that succeed, and returns
// the map the run fills: each client pod's tolerations by its node.
func clientTolerationsOn(t *testing.T, f *fakecluster.Cluster, nodes ...*corev1.Node) map[string][]corev1.Toleration {
	t.Helper()
	for _, n := range nodes {
		if err := f.Clientset.Tracker().Add(n); err != nil {
			t.Fatal(err)
		}
	}
	f.Script[string(session.RoleServer)], f.Script[string(session.RoleClient)] = fakecluster.ThenHold(fakecluster.ServerReady), fakecluster.Then(fakecluster.ClientOK)
	got := map[string][]corev1.Toleration{}
	f.OnCreate = func(p *corev1.Pod) {
		if p.Labels[session.RoleLabel] == string(session.RoleClient) {
			got[nodeOf(p)] = p.Spec.Tolerations
		}
	}
	return got
}
