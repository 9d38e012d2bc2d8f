package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/report"
)

func labNode(name, zone string, mod ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: zone, corev1.LabelTopologyRegion: "r1"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	for _, m := range mod {
		m(n)
	}
	return n
}

// ladderCluster: web-1 on n2 in zone-b with n3 (cordoned) beside it, n1 in zone-a.
func ladderCluster(t *testing.T) *fakeCluster {
	f := newFakeCluster(t, twoPods()...)
	for _, n := range []*corev1.Node{labNode("n1", "zone-a"), labNode("n2", "zone-b"), labNode("n3", "zone-b", func(n *corev1.Node) { n.Spec.Unschedulable = true })} {
		if err := f.cs.Tracker().Add(n); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func newTestLadderOptions(f *fakeCluster) (*LadderOptions, *strings.Builder) {
	out := &strings.Builder{}
	o := NewLadderOptions(nil, genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: &strings.Builder{}})
	f.options(&o.commonOptions)
	o.DstArg, o.Probes, o.Output = "web-1", []string{"rtt"}, "json"
	return o, out
}

// Every measurable rung gets its own client pod on its node, one after the other, each deleted
// before the next; the cordoned node's rung is listed with the reason; nothing is left.
func TestLadderRun(t *testing.T) {
	f := ladderCluster(t)
	f.script[RoleServer], f.script[RoleClient] = thenHold(serverReady), then(clientOK)
	var created []string
	f.onCreate = func(p *corev1.Pod) { created = append(created, p.Name+"@"+nodeOf(p)) }
	o, out := newTestLadderOptions(f)
	o.Rounds = 2
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var r report.LadderReport
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
		t.Fatal(err)
	}
	var rungs []string
	for _, rung := range r.Rungs {
		rungs = append(rungs, rung.Name+"="+rung.Node+rung.Skipped)
	}
	want := "same-node=n2,same-zone=no usable node in zone zone-b: n3 is cordoned,cross-zone zone-a=n1"
	if strings.Join(rungs, ",") != want {
		t.Errorf("rungs %v, want %s", rungs, want)
	}
	if got := strings.Join(created, " "); got != "netbench-run1-client-1-1@n2 netbench-run1-client-3-1@n1 netbench-run1-client-1-2@n2 netbench-run1-client-3-2@n1" {
		t.Errorf("client pods created %s: want one per rung and round, round-robin, on the rung's node", got)
	}
	if left := agentPods(t, f); len(left) != 0 {
		t.Errorf("agent pods left: %v", left)
	}
}

// A refusal at the second rung ends the run with the rung named; the first rung's pod and the
// server are gone.
func TestLadderRunFailsInTheMiddle(t *testing.T) {
	f := ladderCluster(t)
	f.script[RoleServer], f.script[RoleClient] = thenHold(serverReady), then(clientOK)
	f.onCreate = func(p *corev1.Pod) {
		if strings.HasSuffix(p.Name, "-3-1") {
			f.createErr = errors.New(`pods "x" is forbidden: exceeded quota: q`)
		}
	}
	o, _ := newTestLadderOptions(f)
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	err := o.Run(context.Background())
	if err == nil || !strings.HasPrefix(err.Error(), "rung cross-zone zone-a (node n1): starting the client agent: ") {
		t.Fatalf("err %v", err)
	}
	if left := agentPods(t, f); len(left) != 0 {
		t.Errorf("agent pods left: %v", left)
	}
}

// Bad flags are refused before anything is read from the cluster.
func TestLadderValidate(t *testing.T) {
	for _, tc := range []struct {
		set  func(o *LadderOptions)
		want string
	}{
		{func(o *LadderOptions) { o.Rounds = 0 }, "--repeat 0: want 1-20"},
		{func(o *LadderOptions) { o.Rounds = 21 }, "--repeat 21: want 1-20"},
		{func(o *LadderOptions) { o.NodeSelector = "a=(" }, `--nodes "a=(": `},
		{func(o *LadderOptions) { o.Duration = 1 }, "--duration 1ns: want 1s to 1h"},
	} {
		f := ladderCluster(t)
		o, _ := newTestLadderOptions(f)
		tc.set(o)
		if err := o.Validate(); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("err %v, want %q", err, tc.want)
		}
	}
}

func nodeOf(p *corev1.Pod) string {
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	return a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchFields[0].Values[0]
}
