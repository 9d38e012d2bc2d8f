package fakecluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
)

// Cluster is the one fake cluster of the command tests: a fake clientset that behaves as a
// cluster does where agents start at once, with scripted agent output and a recorded pod proxy
// (New: path, ladder, dns), and with a DaemonSet controller and agents that answer jobs
// (NewFleet: matrix).
type Cluster struct {
	t         *testing.T
	Clientset *fake.Clientset

	Mu    sync.Mutex
	Token string // the session's run token
	// Script returns the output of an agent by role (the last part of its name).
	Script map[string]func(ctx context.Context) io.ReadCloser
	// Denied permissions ("patch pods/ephemeralcontainers"); waiting makes agent containers
	// wait with that reason instead of running.
	Denied   map[string]bool
	Waiting  string
	PatchErr error
	// RevokeAtPatch is a permission taken away when the patch fails with patchErr.
	RevokeAtPatch string
	ProxiedBy     []string // "role: METHOD path" of each proxied call
	ProxyErr      error    // control calls (lease, done) fail with it
	// GoneBeforeDone: the server exits before it is told to stop (its client told it first).
	GoneBeforeDone bool
	JobErr         error // the job hand-over fails with it
	// OnCreate sees each pod about to be created; createErr, when set, refuses it.
	OnCreate  func(*corev1.Pod)
	CreateErr error
	Proxied   []string
	nextIP    int

	// The DaemonSet side (NewFleet): a matrix's agents.
	watcher *watch.FakeWatcher
	Zones   map[string]string // node → zone
	IPs     map[string]string // pod IP → node
	Slow    string
	SlowBy  float64
	Jobs    atomic.Int64
	// inFlight tracks the nodes in a job at this moment, to catch a node used twice at once.
	inFlight map[string]bool
	Overlap  []string
	// BeforeJob, when set, runs before each job is answered (tests interrupt there).
	BeforeJob func()
	// LookAlikes, when set, makes pods someone else creates once the DaemonSet exists: each is
	// seen right after the DaemonSet's pod on its node (the last word on that node in the watch).
	LookAlikes func(ds *appsv1.DaemonSet) []*corev1.Pod
	// Posted records each proxied call as "POD PATH", jobTargets each job's "HOST:PORT".
	Posted, JobTargets []string
}

func New(t *testing.T, pods ...*corev1.Pod) *Cluster {
	var objs []runtime.Object
	for _, p := range pods {
		objs = append(objs, p)
	}
	f := &Cluster{t: t, Clientset: fake.NewClientset(objs...), Script: map[string]func(context.Context) io.ReadCloser{}, Denied: map[string]bool{}}
	f.Clientset.PrependReactor("create", "selfsubjectaccessreviews", review(&f.Mu, f.Denied))
	f.Clientset.PrependReactor("patch", "pods", f.patchEphemeral)
	f.Clientset.PrependReactor("create", "pods", f.createPod)
	f.HonourDryRun()
	return f
}

// review answers a SelfSubjectAccessReview: allowed unless denied names its "VERB RESOURCE"
// (or "VERB pods/SUBRESOURCE"); New and NewFleet both answer with it.
func review(mu sync.Locker, denied map[string]bool) k8stesting.ReactionFunc {
	return func(a k8stesting.Action) (bool, runtime.Object, error) {
		r := a.(k8stesting.CreateAction).GetObject().(*authorizationv1.SelfSubjectAccessReview)
		ra := r.Spec.ResourceAttributes
		name := ra.Verb + " " + ra.Resource
		if ra.Subresource != "" {
			name = ra.Verb + " pods/" + ra.Subresource
		}
		mu.Lock()
		r.Status.Allowed = !denied[name]
		mu.Unlock()
		return true, r, nil
	}
}

func (f *Cluster) containerStatus(name string) corev1.ContainerStatus {
	st := corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
	if f.Waiting != "" {
		st.State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: f.Waiting, Message: "pull failed"}}
	}
	return st
}

// patchEphemeral adds the patched ephemeral container to the pod, running.
func (f *Cluster) patchEphemeral(a k8stesting.Action) (bool, runtime.Object, error) {
	pa := a.(k8stesting.PatchAction)
	if pa.GetSubresource() != "ephemeralcontainers" {
		return false, nil, nil
	}
	if f.PatchErr != nil {
		f.Mu.Lock()
		if f.RevokeAtPatch != "" {
			f.Denied[f.RevokeAtPatch] = true
		}
		f.Mu.Unlock()
		return true, nil, f.PatchErr
	}
	var patch struct {
		Spec struct {
			EphemeralContainers []corev1.EphemeralContainer `json:"ephemeralContainers"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(pa.GetPatch(), &patch); err != nil {
		return true, nil, err
	}
	obj, err := f.Clientset.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), pa.GetNamespace(), pa.GetName())
	if err != nil {
		return true, nil, err
	}
	p := obj.(*corev1.Pod).DeepCopy()
	for _, ec := range patch.Spec.EphemeralContainers {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, ec)
		p.Status.EphemeralContainerStatuses = append(p.Status.EphemeralContainerStatuses, f.containerStatus(ec.Name))
	}
	return true, p, f.Clientset.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, p.Namespace)
}

// createPod makes a temporary agent pod run at once with an IP of its own.
func (f *Cluster) createPod(a k8stesting.Action) (bool, runtime.Object, error) {
	p := a.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
	if f.OnCreate != nil {
		f.OnCreate(p)
	}
	if f.CreateErr != nil {
		return true, nil, f.CreateErr
	}
	f.Mu.Lock()
	f.nextIP++
	p.Status.Phase, p.Status.PodIP = corev1.PodRunning, fmt.Sprintf("10.0.9.%d", f.nextIP)
	f.Mu.Unlock()
	p.Status.ContainerStatuses = []corev1.ContainerStatus{f.containerStatus("agent")}
	return false, nil, nil
}

func (f *Cluster) ProxiedCalls() []string {
	f.Mu.Lock()
	defer f.Mu.Unlock()
	return append([]string(nil), f.Proxied...)
}

// Events renders agent events as the agent prints them.
func Events(evs ...agent.Event) string {
	var b strings.Builder
	for i, ev := range evs {
		ev.APIVersion = agent.APIVersion
		ev.Time = time.Date(2026, 1, 1, 0, 0, i, 0, time.UTC)
		line, _ := json.Marshal(ev)
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.String()
}

// Then prints out and ends the stream.
func Then(out string) func(context.Context) io.ReadCloser {
	return func(context.Context) io.ReadCloser { return io.NopCloser(strings.NewReader(out)) }
}

// ThenHold prints out and keeps the stream open until ctx ends, as a running server's does.
func ThenHold(out string) func(context.Context) io.ReadCloser {
	return func(ctx context.Context) io.ReadCloser {
		pr, pw := io.Pipe()
		go func() {
			_, _ = io.WriteString(pw, out)
			<-ctx.Done()
			pw.Close()
		}()
		return pr
	}
}

func TwoPods() []*corev1.Pod {
	return []*corev1.Pod{
		NewPod(func(p *corev1.Pod) { p.Name, p.Spec.NodeName, p.Status.PodIP = "client-1", "n1", "10.0.0.4" }),
		NewPod(func(p *corev1.Pod) { p.Spec.NodeName = "n2" }),
	}
}

func RttResult(name, kind string) agent.Event {
	return agent.Event{Type: agent.EventResult, Probe: name, Result: &agent.ProbeResult{Name: name, Kind: kind}}
}

func GenericStreams() genericiooptions.IOStreams { return genericiooptions.NewTestIOStreamsDiscard() }

func GenericStreamsTo(out io.Writer) genericiooptions.IOStreams {
	return genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: io.Discard}
}

func DNSResultSample() *probes.DNSResult {
	return &probes.DNSResult{Resolver: resolver.Glibc, Nameserver: "10.96.0.10:53", Config: resolver.Config{Ndots: 5}, Repeats: 1,
		Names: []probes.DNSName{{Name: "example.com", Variants: []probes.DNSVariant{
			{Label: "as configured", Ndots: 5, Queries: 8, AnsweredBy: "example.com."},
			{Label: "trailing dot", Ndots: 5, Queries: 2, AnsweredBy: "example.com."},
		}}}}
}

// Terminate marks a pod's container terminated after d, as the kubelet would report it.
func (f *Cluster) Terminate(pod, container string, d time.Duration) {
	time.Sleep(d)
	p, err := f.Clientset.CoreV1().Pods("shop").Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		return
	}
	for i := range p.Status.EphemeralContainerStatuses {
		if p.Status.EphemeralContainerStatuses[i].Name == container {
			p.Status.EphemeralContainerStatuses[i].State = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
		}
	}
	_ = f.Clientset.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), p, "shop")
}
