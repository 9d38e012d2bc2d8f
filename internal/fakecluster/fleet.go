package fakecluster

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
)

func NewFleet(nodes, zones int) *Cluster {
	f := &Cluster{Clientset: fake.NewClientset(), watcher: watch.NewFakeWithChanSize(nodes+16, false),
		Zones: map[string]string{}, IPs: map[string]string{}, Denied: map[string]bool{}, inFlight: map[string]bool{}}
	_ = f.Clientset.Tracker().Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "netbench"}})
	for i := range nodes {
		name, zone := fmt.Sprintf("node-%05d", i), fmt.Sprintf("zone-%c", 'a'+i%zones)
		n := LabNode(name, zone)
		n.Labels[corev1.LabelHostname] = name
		_ = f.Clientset.Tracker().Add(n)
		f.Zones[name] = zone
	}
	f.Clientset.PrependReactor("create", "selfsubjectaccessreviews", review(&f.Mu, f.Denied))
	f.Clientset.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) { return true, f.watcher, nil })
	f.Clientset.PrependReactor("create", "daemonsets", f.createDaemonSet)
	f.Clientset.PrependReactor("delete", "daemonsets", f.deleteDaemonSet)
	f.HonourDryRun()
	return f
}

// createDaemonSet gives the DaemonSet a UID and places one ready pod of its template, which it
// controls, on each node its affinity selects, with the look-alikes.
func (f *Cluster) createDaemonSet(a k8stesting.Action) (bool, runtime.Object, error) {
	ds := a.(k8stesting.CreateAction).GetObject().(*appsv1.DaemonSet)
	ds.UID = types.UID("uid-" + ds.Name)
	created := metav1.NewTime(time.Now().Add(-time.Minute))
	var others []*corev1.Pod
	for _, term := range ds.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		var nodes []string
		for _, e := range append(term.MatchExpressions, term.MatchFields...) {
			nodes = append(nodes, e.Values...)
		}
		for _, n := range nodes {
			p := f.readyPod(ds.Name+"-"+n, ds.Namespace, n, ds.Spec.Template.Labels)
			p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ds, appsv1.SchemeGroupVersion.WithKind("DaemonSet"))}
			p.CreationTimestamp = created
			p.Spec = *ds.Spec.Template.Spec.DeepCopy()
			p.Spec.NodeName = n
			f.addPod(p)
			if others == nil && f.LookAlikes != nil {
				others = f.LookAlikes(ds)
			}
			for _, o := range others {
				if o.Spec.NodeName == n {
					f.addPod(o) // right after the agent on its node, before the run settles
				}
			}
		}
	}
	return false, nil, nil // the tracker stores the DaemonSet
}

// readyPod is a running, ready pod on node with the next pod IP.
func (f *Cluster) readyPod(name, namespace, node string, labels map[string]string) *corev1.Pod {
	ip := fmt.Sprintf("10.%d.%d.%d", len(f.IPs)/65536, len(f.IPs)/256%256, len(f.IPs)%256)
	f.IPs[ip] = node
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels, CreationTimestamp: metav1.Now()},
		Spec: corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
}

func (f *Cluster) addPod(p *corev1.Pod) {
	_ = f.Clientset.Tracker().Add(p)
	f.watcher.Add(p)
}

// deleteDaemonSet deletes the pods it controls as the garbage collector would (look-alikes stay).
func (f *Cluster) deleteDaemonSet(a k8stesting.Action) (bool, runtime.Object, error) {
	ns, uid := a.GetNamespace(), types.UID("uid-"+a.(k8stesting.DeleteAction).GetName())
	pods, _ := f.Clientset.Tracker().List(corev1.SchemeGroupVersion.WithResource("pods"), corev1.SchemeGroupVersion.WithKind("Pod"), ns)
	for _, p := range pods.(*corev1.PodList).Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == uid {
			_ = f.Clientset.Tracker().Delete(corev1.SchemeGroupVersion.WithResource("pods"), ns, p.Name)
		}
	}
	return false, nil, nil
}

// Request answers a job posted to the agent of pod (named DS-NODE): tcp-rtt and icmp results;
// a lease renewal is answered empty.
func (f *Cluster) Request(ctx context.Context, _, pod string, _ int, _, path string, body []byte) ([]byte, error) {
	f.Jobs.Add(1)
	f.Mu.Lock()
	f.Posted = append(f.Posted, pod+" "+path)
	f.Mu.Unlock()
	if path == agent.PathLease {
		return nil, nil
	}
	var job agent.Job
	if err := json.Unmarshal(body, &job); err != nil {
		return nil, err
	}
	f.Mu.Lock()
	f.JobTargets = append(f.JobTargets, net.JoinHostPort(job.Host, strconv.Itoa(job.Port)))
	f.Mu.Unlock()
	from, to := pod[strings.LastIndex(pod, "-node-")+1:], f.IPs[job.Host]
	if err := f.enter(from, to); err != nil {
		return nil, err
	}
	defer f.leave(from, to)
	if f.BeforeJob != nil {
		f.BeforeJob()
	}
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	rtt := 200.0
	if f.Zones[from] != f.Zones[to] {
		rtt = 2000
	}
	if from == f.Slow || to == f.Slow {
		rtt += f.SlowBy
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

func (f *Cluster) enter(nodes ...string) error {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	for _, n := range nodes {
		if f.inFlight[n] {
			f.Overlap = append(f.Overlap, n)
		}
		f.inFlight[n] = true
	}
	return nil
}

func (f *Cluster) leave(nodes ...string) {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	for _, n := range nodes {
		delete(f.inFlight, n)
	}
}

// APICalls counts the calls the run made to the API server: the clientset's and the proxied jobs.
func (f *Cluster) APICalls() int { return len(f.Clientset.Actions()) + int(f.Jobs.Load()) }

// Remaining lists what the run left in its namespace.
func (f *Cluster) Remaining() []string {
	var left []string
	dss, _ := f.Clientset.AppsV1().DaemonSets("netbench").List(context.Background(), metav1.ListOptions{})
	for _, d := range dss.Items {
		left = append(left, "daemonset/"+d.Name)
	}
	pods, _ := f.Clientset.CoreV1().Pods("netbench").List(context.Background(), metav1.ListOptions{})
	for _, p := range pods.Items {
		left = append(left, "pod/"+p.Name)
	}
	return left
}
