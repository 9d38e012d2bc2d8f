package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/agent"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/probes"
)

// fleetCluster is a fake clientset that behaves as a cluster does for a matrix: a DaemonSet's
// pods appear at once, ready, on the nodes its affinity names (delivered on the pods' watch);
// deleting the DaemonSet deletes them; each agent answers a job with an RTT that depends on
// the zones of its pair, plus slowBy on pairs that involve the slow node.
type fleetCluster struct {
	cs      *fake.Clientset
	watcher *watch.FakeWatcher
	zones   map[string]string // node → zone
	ips     map[string]string // pod IP → node
	denied  map[string]bool   // "create daemonsets"
	slow    string
	slowBy  float64
	jobs    atomic.Int64
	// inFlight tracks the nodes in a job at this moment, to catch a node used twice at once.
	mu       sync.Mutex
	inFlight map[string]bool
	overlap  []string
	// beforeJob, when set, runs before each job is answered (tests interrupt there).
	beforeJob func()
}

func newFleetCluster(nodes, zones int) *fleetCluster {
	f := &fleetCluster{cs: fake.NewClientset(), watcher: watch.NewFakeWithChanSize(nodes+16, false),
		zones: map[string]string{}, ips: map[string]string{}, denied: map[string]bool{}, inFlight: map[string]bool{}}
	_ = f.cs.Tracker().Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "netbench"}})
	for i := range nodes {
		name, zone := fmt.Sprintf("node-%05d", i), fmt.Sprintf("zone-%c", 'a'+i%zones)
		n := labNode(name, zone)
		n.Labels[corev1.LabelHostname] = name
		_ = f.cs.Tracker().Add(n)
		f.zones[name] = zone
	}
	f.cs.PrependReactor("create", "selfsubjectaccessreviews", func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		r.Status.Allowed = !f.denied[r.Spec.ResourceAttributes.Verb+" "+r.Spec.ResourceAttributes.Resource]
		return true, r, nil
	})
	f.cs.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, f.watcher, nil })
	f.cs.PrependReactor("create", "daemonsets", f.createDaemonSet)
	f.cs.PrependReactor("delete", "daemonsets", f.deleteDaemonSet)
	return f
}

// createDaemonSet places one ready pod on each node the DaemonSet's affinity selects.
func (f *fleetCluster) createDaemonSet(a k8stesting.Action) (bool, runtime.Object, error) {
	ds := a.(k8stesting.CreateAction).GetObject().(*appsv1.DaemonSet)
	for _, term := range ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		var nodes []string
		for _, e := range append(term.MatchExpressions, term.MatchFields...) {
			nodes = append(nodes, e.Values...)
		}
		for _, n := range nodes {
			ip := fmt.Sprintf("10.%d.%d.%d", len(f.ips)/65536, len(f.ips)/256%256, len(f.ips)%256)
			f.ips[ip] = n
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: ds.Name + "-" + n, Namespace: ds.Namespace, Labels: ds.Spec.Template.Labels},
				Spec: corev1.PodSpec{NodeName: n},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
					Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
			_ = f.cs.Tracker().Add(p)
			f.watcher.Add(p)
		}
	}
	return false, nil, nil // the tracker stores the DaemonSet
}

// deleteDaemonSet deletes its pods as the garbage collector would.
func (f *fleetCluster) deleteDaemonSet(a k8stesting.Action) (bool, runtime.Object, error) {
	ns := a.GetNamespace()
	pods, _ := f.cs.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), ns)
	for _, p := range pods.(*corev1.PodList).Items {
		_ = f.cs.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), ns, p.Name)
	}
	return false, nil, nil
}

// request answers a job posted to the agent of pod (named DS-NODE): tcp-rtt and icmp results.
func (f *fleetCluster) request(ctx context.Context, _, pod string, _ int, _, _ string, body []byte) ([]byte, error) {
	f.jobs.Add(1)
	var job agent.Job
	if err := json.Unmarshal(body, &job); err != nil {
		return nil, err
	}
	from, to := pod[strings.LastIndex(pod, "-node-")+1:], f.ips[job.Host]
	if err := f.enter(from, to); err != nil {
		return nil, err
	}
	defer f.leave(from, to)
	if f.beforeJob != nil {
		f.beforeJob()
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	rtt := 200.0
	if f.zones[from] != f.zones[to] {
		rtt = 2000
	}
	if from == f.slow || to == f.slow {
		rtt += f.slowBy
	}
	var out bytes.Buffer
	em := agent.NewEmitter(&out)
	for _, p := range job.Probes {
		l := probes.Latency{Count: int64(p.Count), P50Micros: rtt, P99Micros: 1.5 * rtt}
		em.Emit(agent.Event{Type: agent.EventResult, Probe: p.Kind, Result: &agent.ProbeResult{Name: p.Kind, Kind: p.Kind,
			RTT: &probes.RTTResult{Method: p.Kind, Sent: p.Count, Received: p.Count, RTT: l}}})
	}
	return out.Bytes(), nil
}

func (f *fleetCluster) enter(nodes ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range nodes {
		if f.inFlight[n] {
			f.overlap = append(f.overlap, n)
		}
		f.inFlight[n] = true
	}
	return nil
}

func (f *fleetCluster) leave(nodes ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, n := range nodes {
		delete(f.inFlight, n)
	}
}

// options are matrix options on this cluster, writing JSON to out.
func (f *fleetCluster) options(out io.Writer) *MatrixOptions {
	o := NewMatrixOptions(nil, genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: io.Discard})
	o.client, o.namespace, o.Output = f.cs, "netbench", "json"
	o.NewRunID = func() string { return "run1" }
	o.Progress = func(string, ...any) {}
	o.configureSession = func(s *Session) { s.Request = f.request }
	return o
}

// apiCalls counts the calls the run made to the API server: the clientset's and the proxied jobs.
func (f *fleetCluster) apiCalls() int { return len(f.cs.Actions()) + int(f.jobs.Load()) }

// remaining lists what the run left in its namespace.
func (f *fleetCluster) remaining() []string {
	var left []string
	dss, _ := f.cs.AppsV1().DaemonSets("netbench").List(context.Background(), metav1.ListOptions{})
	for _, d := range dss.Items {
		left = append(left, "daemonset/"+d.Name)
	}
	pods, _ := f.cs.CoreV1().Pods("netbench").List(context.Background(), metav1.ListOptions{})
	for _, p := range pods.Items {
		left = append(left, "pod/"+p.Name)
	}
	return left
}
