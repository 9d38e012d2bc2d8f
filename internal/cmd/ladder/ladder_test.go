package ladder

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil/cmdtest"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// ladderCluster: web-1 on n2 in zone-b with n3 (cordoned) beside it, n1 in zone-a.
func ladderCluster(t *testing.T) *fakecluster.Cluster {
	f := fakecluster.New(t, fakecluster.TwoPods()...)
	for _, n := range []*corev1.Node{fakecluster.LabNode("n1", "zone-a"), fakecluster.LabNode("n2", "zone-b"), fakecluster.LabNode("n3", "zone-b", func(n *corev1.Node) { n.Spec.Unschedulable = true })} {
		if err := f.Clientset.Tracker().Add(n); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// runLadder validates and runs the ladder and reads its JSON report.
func runLadder(t *testing.T, o *LadderOptions, out *strings.Builder) *report.LadderReport {
	t.Helper()
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
	return &r
}

func newTestLadderOptions(f *fakecluster.Cluster) (*LadderOptions, *strings.Builder) {
	out := &strings.Builder{}
	o := NewLadderOptions(nil, genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: &strings.Builder{}})
	cmdtest.UseCluster(f, &o.CommonOptions)
	o.DstArg, o.Probes, o.Output = "web-1", []string{"rtt"}, "json"
	return o, out
}

// Every measurable rung gets its own client pod on its node, one after the other, each deleted
// before the next; the cordoned node's rung is listed with the reason; nothing is left.
func TestLadderRun(t *testing.T) {
	f := ladderCluster(t)
	f.Script[string(session.RoleServer)], f.Script[string(session.RoleClient)] = fakecluster.ThenHold(fakecluster.ServerReady), fakecluster.Then(fakecluster.ClientOK)
	var created []string
	f.OnCreate = func(p *corev1.Pod) { created = append(created, p.Name+"@"+nodeOf(p)) }
	o, out := newTestLadderOptions(f)
	o.Rounds = 2
	r := runLadder(t, o, out)
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
	if left := fakecluster.AgentPods(t, f); len(left) != 0 {
		t.Errorf("agent pods left: %v", left)
	}
}

// A refusal at the second rung ends the run with the rung named; the first rung's pod and the
// server are gone.
func TestLadderRunFailsInTheMiddle(t *testing.T) {
	f := ladderCluster(t)
	f.Script[string(session.RoleServer)], f.Script[string(session.RoleClient)] = fakecluster.ThenHold(fakecluster.ServerReady), fakecluster.Then(fakecluster.ClientOK)
	f.OnCreate = func(p *corev1.Pod) {
		if strings.HasSuffix(p.Name, "-3-1") {
			f.CreateErr = errors.New(`pods "x" is forbidden: exceeded quota: q`)
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
	if left := fakecluster.AgentPods(t, f); len(left) != 0 {
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

// svcCluster adds to ladderCluster a Service "web" over web-1 (n2, zone-b) and web-2 (n1,
// zone-a), its EndpointSlice, and a temporary Service a killed run left; the fake control plane
// gives every Service it creates an EndpointSlice over the same pods.
func svcCluster(t *testing.T) *fakecluster.Cluster {
	f := ladderCluster(t)
	web2 := fakecluster.NewPod(func(p *corev1.Pod) { p.Name, p.Spec.NodeName, p.Status.PodIP = "web-2", "n1", "10.0.0.6" })
	tcp := corev1.ProtocolTCP
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"}, ClusterIP: "10.96.0.20",
		Ports: []corev1.ServicePort{{Port: 80, Protocol: tcp, TargetPort: intstr.FromInt(8080)}}}}
	stale := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "netbench-old", Namespace: "shop", Labels: map[string]string{session.ManagedByLabel: session.ManagedByValue},
		Annotations: map[string]string{session.NotAfterAnnotation: "2020-01-01T00:00:00Z"}}}
	for _, o := range []runtime.Object{web2, svc, stale, endpointSlice("web")} {
		if err := f.Clientset.Tracker().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	f.Clientset.PrependReactor("create", "services", func(a k8stesting.Action) (bool, runtime.Object, error) {
		s := a.(k8stesting.CreateAction).GetObject().(*corev1.Service)
		s.Spec.ClusterIP = "10.96.0.99"
		return false, nil, f.Clientset.Tracker().Add(endpointSlice(s.Name))
	})
	return f
}

func endpointSlice(svc string) *discoveryv1.EndpointSlice { return hintedSlice(svc, false) }

// hintedSlice is endpointSlice with each endpoint's zone hint when hinted.
func hintedSlice(svc string, hinted bool) *discoveryv1.EndpointSlice {
	ready := true
	ep := func(pod, node, zone string) discoveryv1.Endpoint {
		e := discoveryv1.Endpoint{TargetRef: &corev1.ObjectReference{Kind: "Pod", Name: pod}, NodeName: &node, Zone: &zone,
			Conditions: discoveryv1.EndpointConditions{Ready: &ready}}
		if hinted {
			e.Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: zone}}}
		}
		return e
	}
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: svc + "-x", Namespace: "shop", Labels: map[string]string{discoveryv1.LabelServiceName: svc}},
		Endpoints: []discoveryv1.Endpoint{ep("web-1", "n2", "zone-b"), ep("web-2", "n1", "zone-a")}}
}

// A Service routed by zone hints: the ladder waits for its temporary copy's EndpointSlice to
// carry the same hints before it counts where connections land (the copy's slice gets them
// only later here), and says so when they never come.
func TestLadderServiceWaitsForHints(t *testing.T) {
	defer func(d time.Duration) { hintsWait = d }(hintsWait)
	hintsWait = time.Second
	for _, tc := range []struct {
		name    string
		hintsAt int // the copy's slice carries hints from this list of it on (0: never)
		caveat  string
	}{{"hints come", 3, ""}, {"hints never come", 0, "did not get the Service's topology hints within 1s (endpoint web-1: \"none\", the Service's \"zones=zone-b\")"}} {
		t.Run(tc.name, func(t *testing.T) {
			f := svcCluster(t)
			if err := f.Clientset.Tracker().Update(discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), hintedSlice("web", true), "shop"); err != nil {
				t.Fatal(err)
			}
			lists := 0
			f.Clientset.PrependReactor("list", "endpointslices", func(a k8stesting.Action) (bool, runtime.Object, error) {
				sel := a.(k8stesting.ListAction).GetListRestrictions().Labels.String()
				name, ok := strings.CutPrefix(sel, discoveryv1.LabelServiceName+"=netbench-")
				if !ok {
					return false, nil, nil
				}
				lists++
				return true, &discoveryv1.EndpointSliceList{Items: []discoveryv1.EndpointSlice{*hintedSlice("netbench-"+name, tc.hintsAt > 0 && lists >= tc.hintsAt)}}, nil
			})
			f.Script[string(session.RoleServer)], f.Script[string(session.RoleEndpoint)], f.Script[string(session.RoleClient)] = fakecluster.ThenHold(fakecluster.ServerReady), fakecluster.ThenHold(fakecluster.ServerReady), fakecluster.Then(fakecluster.ClientOK)
			o, out := newTestLadderOptions(f)
			o.Service = "svc/web"
			o.StartTimeout = 3 * time.Second
			r := runLadder(t, o, out)
			if r.Service == nil || !strings.Contains(r.Service.SpreadCaveat, tc.caveat) || (tc.caveat == "") != (r.Service.SpreadCaveat == "") {
				t.Errorf("caveat %q, want %q", r.Service.SpreadCaveat, tc.caveat)
			}
			if tc.hintsAt > 0 && lists < tc.hintsAt {
				t.Errorf("the copy's slices were listed %d times: the ladder did not wait for its hints", lists)
			}
		})
	}
}

// With a Service, endpoint agents start in its pods on one port, a temporary copy of it is
// created and deleted, every rung's job measures through the ClusterIP and where connections
// land, and a temporary Service a killed run left behind is deleted.
func TestLadderRunService(t *testing.T) {
	f := svcCluster(t)
	f.Script[string(session.RoleServer)], f.Script[string(session.RoleEndpoint)], f.Script[string(session.RoleClient)] = fakecluster.ThenHold(fakecluster.ServerReady), fakecluster.ThenHold(fakecluster.ServerReady), fakecluster.Then(fakecluster.ClientOK)
	o, out := newTestLadderOptions(f)
	o.Service = "svc/web"
	r := runLadder(t, o, out)
	if s := r.Service; s == nil || s.ReadyEndpoints != 2 || s.MeasuredEndpoints != 2 || s.TemporaryService != "netbench-run1" || s.AgentPort < 20000 || s.AgentPort >= 32768 { // below the kernel's ephemeral ports
		t.Fatalf("service %+v", r.Service)
	}
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "deleted temporary Service shop/netbench-old left by an earlier run") {
		t.Errorf("warnings %v: the stale Service was not cleaned", r.Warnings)
	}
	svcs, _ := f.Clientset.CoreV1().Services("shop").List(context.Background(), metav1.ListOptions{})
	if len(svcs.Items) != 1 || svcs.Items[0].Name != "web" {
		t.Errorf("Services left: %v", svcs.Items)
	}
	pods, _ := f.Clientset.CoreV1().Pods("shop").List(context.Background(), metav1.ListOptions{})
	var endpoints []string
	for _, p := range pods.Items {
		for _, ec := range p.Spec.EphemeralContainers {
			if strings.Contains(ec.Name, "-endpoint-") {
				endpoints = append(endpoints, p.Name+":"+strings.Join(ec.Args, " "))
			}
		}
	}
	if len(endpoints) != 2 || !strings.Contains(endpoints[0], ":"+strconv.Itoa(r.Service.AgentPort)+" ") || !strings.Contains(strings.Join(endpoints, " "), "--zone zone-a") {
		t.Errorf("endpoint agents %v: want one per endpoint pod on port %d, with their identity", endpoints, r.Service.AgentPort)
	}
}

// The ladder's temporary client pods are locked down as every agent pod is.
func TestTemporaryLadderClientsAreLockedDown(t *testing.T) {
	t.Run("ladder clients", func(t *testing.T) {
		f := ladderCluster(t)
		f.Script[string(session.RoleServer)], f.Script[string(session.RoleClient)] = fakecluster.ThenHold(fakecluster.ServerReady), fakecluster.Then(fakecluster.ClientOK)
		var pods []*corev1.Pod
		f.OnCreate = func(p *corev1.Pod) { pods = append(pods, p.DeepCopy()) }
		o, _ := newTestLadderOptions(f)
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
		if err := o.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		cmdtest.LockedDown(t, pods)
	})
}
