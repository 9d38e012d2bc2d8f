package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/hostile"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// During a matrix run, a pod that copies the run's labels (read from the DaemonSet the run
// created), is ready on a measured node and keeps changing so that the pods' watch sees it all
// along, gets nothing from the run — no job, no lease renewal, no token — and has no row in the
// report; the run does not wait for it to go. Under another controller it is left alone and
// every pair is measured. Without one, the DaemonSet adopts it: it then names the DaemonSet as
// its controller, yet runs another program, and still nothing reaches it; the DaemonSet counts
// it as its pod on lab-a1 (an admission policy keeps the DaemonSet's own pod off lab-a1, as a
// look-alike created first would), so lab-a1's pairs are reported unmeasured, naming it.
func TestMatrixTrustsOnlyItsDaemonSet(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	t.Run("another controller", func(t *testing.T) {
		if seen := lookAlikeRun(t, cs, ns, configMapOwner(t, cs, ns)); !seen.ready {
			t.Fatal("the look-alike was never ready during the run: the case proves nothing")
		}
	})
	t.Run("none: adopted by the DaemonSet", func(t *testing.T) {
		defer holdDaemonSetPodsOff(t, ns, "lab-a1")()
		seen := lookAlikeRun(t, cs, ns, nil, "--start-timeout", "30s")
		if !seen.ready || !seen.adopted {
			t.Fatalf("the look-alike was not adopted and ready (%s): the case proves nothing", seen)
		}
	})
}

// holdDaemonSetPodsOff installs a ValidatingAdmissionPolicy that refuses, in ns, the pods a
// DaemonSet creates for node; the returned func removes it.
func holdDaemonSetPodsOff(t *testing.T, ns, node string) func() {
	t.Helper()
	expression := "!(has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, r.kind == 'DaemonSet') && " +
		"has(object.spec.affinity) && has(object.spec.affinity.nodeAffinity) && " +
		"has(object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) && " +
		"object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms.exists(t, " +
		"has(t.matchFields) && t.matchFields.exists(f, f.values.exists(v, v == '" + node + "'))))"
	return denyPods(t, "hold-daemon-pods-"+ns, ns, expression, "the DaemonSet's pod for "+node+" is held off")
}

// lookAlikeRun runs a matrix over the four nodes (with args) and a look-alike on lab-a1 (under
// controller, when set), checks that nothing of the run reached it and that the report holds the
// DaemonSet's agents alone, and says what was seen of the look-alike.
func lookAlikeRun(t *testing.T, cs kubernetes.Interface, ns string, controller *metav1.OwnerReference, args ...string) lookAlikeSeen {
	t.Helper()
	args = append([]string{"--kubeconfig", kubeconfigPath(), "matrix", "-n", ns, "-o", "json", "--scope", "nodes", "--count", "100"}, args...)
	cmd := exec.Command(plugin(t), args...)
	var out, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() { _ = cmd.Process.Signal(syscall.SIGINT) })
	ds := waitMatrixDaemonSet(t, cs, ns, 60*time.Second, func(*appsv1.DaemonSet) bool { return true })
	fake, rec := lookAlike(t, cs, ns, ds, "lab-a1", agentPort(t, ds), controller)
	var seen lookAlikeSeen
	if fake != nil {
		seen = touchUntil(cs, ns, fake.Name, exited)
	} else {
		fake = &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "look-alike"}}
		t.Log("the look-alike was deleted (the DaemonSet controller keeps the older of two pods on a node) before it ran")
	}
	runErr := <-exited
	t.Logf("look-alike %s (%s): %s; %d TCP connections to its port (readiness probes)", fake.Name, fake.Status.PodIP, seen, rec.conns())
	if runErr != nil {
		t.Fatalf("matrix with a look-alike present: %v\n%s", runErr, stderr.String())
	}
	if reqs := rec.requests(); len(reqs) > 0 {
		t.Errorf("the look-alike was sent %d requests (the run's token with them): %v", len(reqs), reqs)
	}
	r := decodeStrict[v1alpha1.MatrixReport](t, out.String())
	for _, n := range r.Nodes {
		if n.Pod == fake.Name || (n.IP != "" && n.IP == fake.Status.PodIP) || (n.Pod != "" && !strings.HasPrefix(n.Pod, ds.Name+"-")) {
			t.Errorf("report row %+v: not one of the DaemonSet's agents", n)
		}
	}
	checkPairs(t, r, controller == nil)
	deletePod(t, cs, ns, fake.Name)
	nothingLeft(t, cs, ns)
	return seen
}

// checkPairs fails unless the 12 pairs of the four nodes are in the report, each measured;
// with lab-a1 excused, its pairs must say that its only pod, the look-alike, is not trusted.
func checkPairs(t *testing.T, r *v1alpha1.MatrixReport, excuseA1 bool) {
	t.Helper()
	if len(r.Pairs) != 12 {
		t.Errorf("%d pairs: want the 12 of the four nodes", len(r.Pairs))
	}
	for _, p := range r.Pairs {
		if excuseA1 && (p.From == "lab-a1" || p.To == "lab-a1") {
			if !strings.Contains(p.Error, "look-alike is not trusted") {
				t.Errorf("pair %s → %s: error %q: want lab-a1's agent not ready, naming the look-alike as not trusted", p.From, p.To, p.Error)
			}
			continue
		}
		if p.Error != "" || p.Samples < 95 {
			t.Errorf("pair %s → %s: %d samples, error %q", p.From, p.To, p.Samples, p.Error)
		}
	}
}

// configMapOwner creates a ConfigMap and returns a controller reference to it: a pod under it
// is not an orphan, so no DaemonSet adopts it.
func configMapOwner(t *testing.T, cs kubernetes.Interface, ns string) *metav1.OwnerReference {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "look-alike-owner"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return metav1.NewControllerRef(cm, corev1.SchemeGroupVersion.WithKind("ConfigMap"))
}

// A peer that read the DaemonSet's spec (its token digest) sends each agent, mid-run, echo
// datagrams sealed with it, as key and as token: none is answered. After the plugin is
// SIGKILLed mid-run, nobody renews the agents' lease: within a minute (the
// 45 s lease, renewed until the kill, and the poll's second) every agent's port refuses connections, and over the next 30 s no agent container restarts (they
// idle instead of exiting, which their DaemonSet would answer with restarts); cleanup then
// deletes the DaemonSet.
func TestMatrixKilledAgentsStopServing(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	cmd := exec.Command(plugin(t), "--kubeconfig", kubeconfigPath(), "matrix", "-n", ns, "--scope", "nodes", "--count", "500")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	ds := waitMatrixDaemonSet(t, cs, ns, 90*time.Second, func(d *appsv1.DaemonSet) bool {
		return d.Status.DesiredNumberScheduled > 0 && d.Status.NumberReady == d.Status.DesiredNumberScheduled
	})
	port := agentPort(t, ds)
	agents := agentPods(t, cs, ns, ds)
	from := prober(t, cs, ns)
	for _, p := range agents {
		if err := dialFrom(from, p.Status.PodIP, port); err != nil {
			t.Fatalf("agent %s does not serve before the kill: %v", p.Name, err)
		}
	}
	time.Sleep(3 * time.Second) // jobs in flight
	forgedAtMatrixAgents(t, from, agents, port, specDigest(ds.Spec.Template.Spec.Containers[0].Args))
	_ = cmd.Process.Signal(syscall.SIGKILL)
	_ = cmd.Wait()
	killed := time.Now()
	stopped := map[string]time.Duration{}
	err := wait.PollUntilContextTimeout(context.Background(), time.Second, time.Minute, true, func(context.Context) (bool, error) {
		for _, p := range agents {
			if _, done := stopped[p.Name]; !done && errors.Is(dialFrom(from, p.Status.PodIP, port), syscall.ECONNREFUSED) {
				stopped[p.Name] = time.Since(killed).Round(time.Second)
			}
		}
		return len(stopped) == len(agents), nil
	})
	t.Logf("ports closed after the kill (lease %s): %v", leaseOf(ds), stopped)
	if err != nil {
		t.Fatalf("a minute after the kill, %d of %d agents still accept connections", len(agents)-len(stopped), len(agents))
	}
	restarts := restartCounts(t, cs, ns, ds)
	time.Sleep(30 * time.Second)
	later := restartCounts(t, cs, ns, ds)
	t.Logf("restart counts when the ports closed: %v; 30 s later: %v", restarts, later)
	for pod, n := range later {
		if n != restarts[pod] || n.restarts > 0 || !n.running {
			t.Errorf("agent %s: %+v, was %+v: want its container running (idle), never restarted", pod, n, restarts[pod])
		}
	}
	for _, p := range agents {
		last := lastLine(t, cs, ns, p.Name)
		if !strings.Contains(last, "idle until stopped") {
			t.Errorf("agent %s's last words %q: want it to say it idles", p.Name, last)
		}
	}
	out, _, err := netbench(t, "cleanup", "-n", ns)
	if err != nil || !strings.Contains(out, "deleted DaemonSet") {
		t.Errorf("cleanup (%v):\n%s", err, out)
	}
	nothingLeft(t, cs, ns)
}

// waitMatrixDaemonSet waits for the matrix's DaemonSet in ns to satisfy cond.
func waitMatrixDaemonSet(t *testing.T, cs kubernetes.Interface, ns string, d time.Duration, cond func(*appsv1.DaemonSet) bool) *appsv1.DaemonSet {
	t.Helper()
	var found *appsv1.DaemonSet
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, d, true, func(ctx context.Context) (bool, error) {
		l, err := cs.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{LabelSelector: managed})
		if err != nil || len(l.Items) != 1 || !cond(&l.Items[0]) {
			return false, nil
		}
		found = &l.Items[0]
		return true, nil
	})
	if err != nil {
		t.Fatalf("no matrix DaemonSet as wanted in %s within %s", ns, d)
	}
	return found
}

func agentPort(t *testing.T, ds *appsv1.DaemonSet) int {
	t.Helper()
	for _, p := range ds.Spec.Template.Spec.Containers[0].Ports {
		return int(p.ContainerPort)
	}
	t.Fatal("the DaemonSet's agent declares no port")
	return 0
}

func leaseOf(ds *appsv1.DaemonSet) string {
	args := ds.Spec.Template.Spec.Containers[0].Args
	for i, a := range args {
		if a == "--lease" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return "none"
}

// agentPods are the pods the DaemonSet controls.
func agentPods(t *testing.T, cs kubernetes.Interface, ns string, ds *appsv1.DaemonSet) []corev1.Pod {
	t.Helper()
	l, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: managed})
	if err != nil {
		t.Fatal(err)
	}
	var out []corev1.Pod
	for _, p := range l.Items {
		if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == ds.UID {
			out = append(out, p)
		}
	}
	if len(out) == 0 {
		t.Fatal("the DaemonSet has no pod")
	}
	return out
}

type containerState struct {
	restarts int32
	running  bool
}

// restartCounts are the agent containers' restart counts and whether they run, by pod.
func restartCounts(t *testing.T, cs kubernetes.Interface, ns string, ds *appsv1.DaemonSet) map[string]containerState {
	t.Helper()
	out := map[string]containerState{}
	for _, p := range agentPods(t, cs, ns, ds) {
		for _, s := range p.Status.ContainerStatuses {
			out[p.Name] = containerState{restarts: s.RestartCount, running: s.State.Running != nil}
		}
	}
	return out
}

func lastLine(t *testing.T, cs kubernetes.Interface, ns, pod string) string {
	t.Helper()
	return finalLine(logs(t, cs, ns, pod, "agent"))
}

// deletePod deletes a pod now (one already gone is fine).
func deletePod(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	var grace int64
	err := cs.CoreV1().Pods(ns).Delete(context.Background(), name, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting pod %s: %v", name, err)
	}
}

// lookAlike creates a pod with the labels of the DaemonSet's pods on node (under controller, when set),
// whose port is served by a recorder in this process (listening in the pod's network
// namespace) and probed for readiness as the agents are; it returns the running pod (nil if it
// was deleted before it ran) and the recorder.
func lookAlike(t *testing.T, cs kubernetes.Interface, ns string, ds *appsv1.DaemonSet, node string, port int, controller *metav1.OwnerReference) (*corev1.Pod, *recorder) {
	t.Helper()
	p := pod("look-alike", node, "netbench.lab/pause:1", nil, agentLabels(t, cs, ns, ds))
	if controller != nil {
		p.OwnerReferences = []metav1.OwnerReference{*controller}
	}
	p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "netbench", ContainerPort: int32(port)}}
	p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
		PeriodSeconds: 1, FailureThreshold: 1}
	createPod(t, cs, ns, p)
	running := runningOrGone(t, cs, ns, p.Name, 60*time.Second)
	if running == nil {
		return nil, &recorder{}
	}
	ln := listenIn(t, podNetns(t, node, running.Status.PodIP), ":"+strconv.Itoa(port))
	rec := &recorder{}
	srv := &http.Server{Handler: rec, ReadHeaderTimeout: 5 * time.Second, ConnState: rec.connState}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return running, rec
}

// agentLabels are the labels the DaemonSet gives its pods: the run's, and its revision's hash
// (so that the DaemonSet, if it adopts a pod carrying them, counts it as up to date). They are
// read from the DaemonSet's ControllerRevision, not from a pod of it: with its pod for lab-a1
// refused, the DaemonSet may keep trying lab-a1 first and make no pod at all until the
// look-alike stands there.
func agentLabels(t *testing.T, cs kubernetes.Interface, ns string, ds *appsv1.DaemonSet) map[string]string {
	t.Helper()
	var hash string
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		revs, err := cs.AppsV1().ControllerRevisions(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		for _, r := range revs.Items {
			if ref := metav1.GetControllerOf(&r); ref != nil && ref.UID == ds.UID {
				hash = r.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]
				return hash != "", nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("the DaemonSet has no ControllerRevision within 30 s")
	}
	labels := maps.Clone(ds.Spec.Template.Labels)
	labels[appsv1.DefaultDaemonSetUniqueLabelKey] = hash
	return labels
}

// runningOrGone waits until the pod runs with an IP (and returns it) or is deleted or ended
// (nil), and fails the test if neither happens within d.
func runningOrGone(t *testing.T, cs kubernetes.Interface, ns, name string, d time.Duration) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, d, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return true, nil
		case err != nil:
			return false, nil
		case p.DeletionTimestamp != nil || finished(p):
			return true, nil
		case p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "":
			found = p
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("pod %s neither ran nor went within %s", name, d)
	}
	return found
}

// recorder answers every HTTP request 200 and records it.
type recorder struct {
	mu     sync.Mutex
	reqs   []string
	nconns int
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	r.reqs = append(r.reqs, fmt.Sprintf("%s %s (token header: %v)", req.Method, req.URL.Path, req.Header.Get(agent.TokenHeader) != ""))
	r.mu.Unlock()
	_, _ = w.Write([]byte("ok\n"))
}

func (r *recorder) connState(_ net.Conn, s http.ConnState) {
	if s == http.StateNew {
		r.mu.Lock()
		r.nconns++
		r.mu.Unlock()
	}
}

func (r *recorder) requests() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.reqs...)
}

func (r *recorder) conns() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.nconns
}

// lookAlikeSeen is what touchUntil saw of the look-alike.
type lookAlikeSeen struct {
	ready, adopted bool // ready at some point; controlled by a DaemonSet at some point
}

func (s lookAlikeSeen) String() string {
	return fmt.Sprintf("ready during the run: %v, adopted by the DaemonSet: %v", s.ready, s.adopted)
}

// touchUntil changes an annotation of the pod every 300 ms until done delivers (putting it
// back into the run's pod watch each time), and says what it saw of the pod meanwhile.
func touchUntil(cs kubernetes.Interface, ns, name string, done chan error) lookAlikeSeen {
	var seen lookAlikeSeen
	for i := 0; ; i++ {
		select {
		case err := <-done:
			done <- err
			return seen
		case <-time.After(300 * time.Millisecond):
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"touched":"%d"}}}`, i)
		p, err := cs.CoreV1().Pods(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		if err != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			seen.ready = seen.ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "DaemonSet" {
			seen.adopted = true
		}
	}
}

// prober is the network namespace of a pause pod on lab-a1: the place connections to the
// agents are tried from.
func prober(t *testing.T, cs kubernetes.Interface, ns string) string {
	t.Helper()
	createPod(t, cs, ns, pod("prober", "lab-a1", "netbench.lab/pause:1", nil, nil))
	p := waitPod(t, cs, ns, "prober", 60*time.Second, "running", running)
	return podNetns(t, "lab-a1", p.Status.PodIP)
}

// dialFrom connects to ip:port from the network namespace netns, and closes the connection.
func dialFrom(netns, ip string, port int) error {
	var c net.Conn
	err := inNetns(netns, func() error {
		var err error
		c, err = net.DialTimeout("tcp", net.JoinHostPort(ip, strconv.Itoa(port)), 2*time.Second)
		return err
	})
	if c != nil {
		c.Close()
	}
	return err
}

// listenIn listens on addr in the network namespace netns (the socket stays there).
func listenIn(t *testing.T, netns, addr string) net.Listener {
	t.Helper()
	var ln net.Listener
	if err := inNetns(netns, func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	}); err != nil {
		t.Fatalf("listening on %s in %s: %v", addr, netns, err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln
}

// inNetns runs fn on an OS thread of its own moved into the network namespace netns; sockets fn
// opens belong to that namespace. The thread goes back to this process's namespace, or is
// dropped if it cannot.
func inNetns(netns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		own, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			errc <- err
			return
		}
		defer own.Close()
		target, err := os.Open(netns)
		if err != nil {
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("entering %s: %w", netns, err)
			return
		}
		err = fn()
		if unix.Setns(int(own.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// forgedAtMatrixAgents sends every matrix agent, from netns at once, echo datagrams sealed with
// what the DaemonSet's spec shows, and fails on any answer.
func forgedAtMatrixAgents(t *testing.T, netns string, agents []corev1.Pod, port int, digest string) {
	t.Helper()
	d, err := hostile.NewNetnsDialer(netns)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	var wg sync.WaitGroup
	for _, p := range agents {
		wg.Go(func() {
			if n := forgedAnswers(t, d, net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port)), digest); n > 0 {
				t.Errorf("matrix agent %s answered %d datagrams sealed with the DaemonSet's digest", p.Name, n)
			}
		})
	}
	wg.Wait()
}
