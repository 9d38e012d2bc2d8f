package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/internal/netpolicy"
)

// A Service over web-v1, which no policy selects, and web-v2, isolated by a deny-all-ingress
// policy that selects web-v2's label only. A client pod calls web-v1's pod by its IP four
// times a second, each on a new connection, throughout a `ladder deploy/web-v2 --service svc/web
// --allow-policy` run (the server agent's and the endpoint agents' ports opened), a
// `ladder svc/web --allow-policy` interrupted with SIGINT once it measures, and another
// SIGKILLed a few seconds into measuring, and after it: every call is answered. Meanwhile every temporary policy seen selects only pods a policy of
// the namespace already isolated in that direction. Once every agent of the SIGKILLed run has
// ended, the next run of another command deletes the policies it left.
func TestAllowPolicyNeverIsolatesAPod(t *testing.T) {
	cs, ns := lab(t)
	v1IP, v2IP := allowPolicyApp(t, cs, ns)
	calls := startCaller(t, cs, ns, v1IP)
	if code := callOnce(t, calls.netns, v2IP); code == "200" {
		t.Fatalf("web-v2 (%s) answered from the client although %s/deny-v2 isolates it: NetworkPolicy is not enforced", v2IP, ns)
	}
	w := watchPolicies(t, cs, ns)
	ladder := []string{"ladder", "-n", ns, "svc/web", "--allow-policy", "--probes", "rtt", "--connections-per-rung", "20"}

	calls.phase(t, "baseline", func() { time.Sleep(3 * time.Second) })
	calls.phase(t, "ladder deploy/web-v2 --service svc/web --allow-policy", func() {
		r := ladderJSON(t, "-n", ns, "deploy/web-v2", "--service", "svc/web", "--allow-policy", "--probes", "rtt", "--connections-per-rung", "20")
		if r.Policy == nil || len(r.Policy.Temporary) != 2 || !r.Policy.Removed {
			t.Fatalf("policy check %+v: want two temporary policies (the server agent's and the endpoint agents'), removed", r.Policy)
		}
		if r.Service == nil || r.Service.SpreadSkipped != "" {
			t.Errorf("service %+v: want where connections land measured", r.Service)
		}
		t.Logf("temporary: %v", r.Policy.Temporary)
	})
	if left := netbenchPolicies(t, cs, ns); len(left) > 0 {
		t.Errorf("policies left after the run: %v", left)
	}
	calls.phase(t, "ladder svc/web --allow-policy, SIGINT", func() {
		signalWhenMeasuring(t, syscall.SIGINT, time.Second, ladder...)
	})
	if left := netbenchPolicies(t, cs, ns); len(left) > 0 {
		t.Errorf("policies left after SIGINT: %v", left)
	}
	var killed []string
	calls.phase(t, "ladder svc/web --allow-policy, SIGKILL, and after", func() {
		signalWhenMeasuring(t, syscall.SIGKILL, 3*time.Second, ladder...)
		killed = netbenchPolicies(t, cs, ns)
		time.Sleep(5 * time.Second)
	})
	if len(killed) == 0 {
		t.Fatal("the SIGKILLed run left no policy: nothing to sweep")
	}
	w.stop(t)

	calls.phase(t, "next run", func() { sweptOnceOver(t, cs, ns, killed) })
	calls.stop(t)
}

// allowPolicyApp deploys web-v1 (lab-b1) and web-v2 (lab-b2) behind Service web, isolates
// web-v2's ingress, and returns both pods' IPs.
func allowPolicyApp(t *testing.T, cs kubernetes.Interface, ns string) (v1IP, v2IP string) {
	t.Helper()
	ctx := context.Background()
	for _, d := range []*appsv1.Deployment{webVersion("v1", "lab-b1"), webVersion("v2", "lab-b2"), deployment("caller", "lab-a1", "netbench.lab/sample-app:1", nil)} {
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "web"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deny := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny-v2"}, Spec: networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"version": "v2"}},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(ctx, deny, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web-v1", "web-v2", "caller"} {
		waitRollout(t, cs, ns, name)
	}
	time.Sleep(2 * time.Second) // the enforcers' informers see the policy
	return podIP(t, cs, ns, "app=web,version=v1"), podIP(t, cs, ns, "app=web,version=v2")
}

// webVersion is deployment web-<version> on node, its pods labelled app=web, version=<version>.
func webVersion(version, node string) *appsv1.Deployment {
	d := deployment("web-"+version, node, "netbench.lab/sample-app:1", nil)
	labels := func() map[string]string { return map[string]string{"app": "web", "version": version} }
	d.Spec.Selector.MatchLabels, d.Spec.Template.Labels = labels(), labels()
	return d
}

func podIP(t *testing.T, cs kubernetes.Interface, ns, selector string) string {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil || len(pods.Items) != 1 || pods.Items[0].Status.PodIP == "" {
		t.Fatalf("one running pod with %s: %v %d", selector, err, len(pods.Items))
	}
	return pods.Items[0].Status.PodIP
}

// caller makes HTTP calls to one address from inside the client pod's network namespace, each
// on a new connection (a NetworkPolicy judges connections when they open), four a second (a
// call not answered takes 2 s), counted per phase.
type caller struct {
	netns string
	cmd   *exec.Cmd
	done  chan struct{}

	mu      sync.Mutex
	current string
	made    map[string]int
	failed  map[string][]string
	reused  int // answers on a connection already open: they would prove nothing
}

// startCaller starts the calls from pod app=caller to ip, port 8080.
func startCaller(t *testing.T, cs kubernetes.Interface, ns, ip string) *caller {
	t.Helper()
	c := &caller{netns: podNetns(t, "lab-a1", podIP(t, cs, ns, "app=caller")), done: make(chan struct{}),
		current: "setup", made: map[string]int{}, failed: map[string][]string{}}
	c.cmd = exec.Command("nsenter", "--net="+c.netns, "stdbuf", "-oL", "curl", "-s", "-m", "2", "-o", "/dev/null", "-w", "%{http_code} %{num_connects}\n",
		"-H", "Connection: close", "--rate", "4/s", fmt.Sprintf("http://%s:8080/?call=[1-1000000]", ip))
	c.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := c.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go c.read(out)
	t.Cleanup(func() { c.kill() })
	return c
}

// read counts each call's answer in the current phase.
func (c *caller) read(out io.Reader) {
	defer close(c.done)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		code, connects, _ := strings.Cut(sc.Text(), " ")
		c.mu.Lock()
		c.made[c.current]++
		switch {
		case code != "200":
			c.failed[c.current] = append(c.failed[c.current], time.Now().Format("15:04:05.000")+" "+code)
		case connects != "1":
			c.reused++
		}
		c.mu.Unlock()
	}
}

// phase runs fn with the calls counted under name, then fails unless calls were made and
// every one was answered (also when fn fails the test).
func (c *caller) phase(t *testing.T, name string, fn func()) {
	t.Helper()
	c.mu.Lock()
	c.current = name
	c.mu.Unlock()
	defer c.count(t, name, time.Now())
	fn()
}

// count ends a phase: its calls, and the failed ones.
func (c *caller) count(t *testing.T, name string, start time.Time) {
	t.Helper()
	time.Sleep(600 * time.Millisecond) // the call under way when the phase ended
	c.mu.Lock()
	made, failed := c.made[name], c.failed[name]
	c.current = "between phases"
	c.mu.Unlock()
	t.Logf("%s (%s): %d calls to web-v1, %d answered", name, time.Since(start).Round(100*time.Millisecond), made, made-len(failed))
	if made == 0 || len(failed) > 0 {
		t.Errorf("%s: %d of %d calls to web-v1 not answered (time and HTTP code: %v)", name, len(failed), made, failed)
	}
}

func (c *caller) kill() {
	if c.cmd.Process != nil {
		_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
	}
}

// stop ends the calls and fails if any call outside the phases was not answered.
func (c *caller) stop(t *testing.T) {
	t.Helper()
	c.kill()
	_ = c.cmd.Wait()
	<-c.done
	if f := c.failed["between phases"]; len(f) > 0 {
		t.Errorf("calls to web-v1 not answered between phases: %v", f)
	}
	if c.reused > 0 {
		t.Errorf("%d calls were answered on a connection already open", c.reused)
	}
}

// callOnce is the HTTP code of one call to ip:8080 from inside netns ("000": no answer in 2 s).
func callOnce(t *testing.T, netns, ip string) string {
	t.Helper()
	out, _ := exec.Command("nsenter", "--net="+netns, "curl", "-s", "-m", "2", "-o", "/dev/null", "-w", "%{http_code}", "http://"+ip+":8080/").Output()
	return strings.TrimSpace(string(out))
}

// signalWhenMeasuring runs the plugin with args and sends it sig after the first rung's
// client started plus after; it fails unless the plugin announced temporary policies.
func signalWhenMeasuring(t *testing.T, sig syscall.Signal, after time.Duration, args ...string) {
	t.Helper()
	cmd := exec.Command(plugin(t), append([]string{"--kubeconfig", kubeconfigPath()}, args...)...)
	cmd.Env = append(os.Environ(), "NETBENCH_PROGRESS=always")
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stderr)
	created, measuring := false, false
	for !measuring && sc.Scan() {
		created = created || strings.Contains(sc.Text(), "--allow-policy created")
		measuring = strings.Contains(sc.Text(), ", rung ")
	}
	time.Sleep(after)
	_ = cmd.Process.Signal(sig)
	go func() {
		for sc.Scan() {
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err == nil {
			t.Errorf("exit 0 after %s", sig)
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("the plugin did not exit within 30 s of %s", sig)
	}
	if !created || !measuring {
		t.Errorf("announced temporary policies %v, measured %v: want both before %s", created, measuring, sig)
	}
}

// policyWatch lists the namespace's temporary policies every 250 ms and checks, against the
// live pods and the namespace's own policies, that each selects only pods already isolated in
// each direction it declares.
type policyWatch struct {
	quit, done chan struct{}
	mu         sync.Mutex
	seen       map[string]bool
	violations []string
}

func watchPolicies(t *testing.T, cs kubernetes.Interface, ns string) *policyWatch {
	t.Helper()
	w := &policyWatch{quit: make(chan struct{}), done: make(chan struct{}), seen: map[string]bool{}}
	go func() {
		defer close(w.done)
		for {
			w.check(cs, ns)
			select {
			case <-w.quit:
				return
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	t.Cleanup(func() { w.halt() })
	return w
}

// check evaluates the temporary policies of the moment.
func (w *policyWatch) check(cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	all, err := cs.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	var own, temporary []networkingv1.NetworkPolicy
	for _, p := range all.Items {
		if p.Labels["app.kubernetes.io/managed-by"] == "kubectl-netbench" {
			temporary = append(temporary, p)
		} else {
			own = append(own, p)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	for i := range temporary {
		tp := &temporary[i]
		w.seen[tp.Name+" ("+tp.Annotations["netbench.kubectl.dev/isolated-by"]+")"] = true
		for _, dir := range tp.Spec.PolicyTypes {
			for j := range pods.Items {
				p := &pods.Items[j]
				if netpolicy.Selects(tp, p) && len(netpolicy.Isolating(own, p, dir)) == 0 {
					w.violations = append(w.violations, fmt.Sprintf("%s selects %s (%v) for %s, which no policy of the namespace isolates", tp.Name, p.Name, p.Labels, dir))
				}
			}
		}
	}
}

func (w *policyWatch) halt() {
	select {
	case <-w.quit:
	default:
		close(w.quit)
	}
	<-w.done
}

// stop ends the watch and fails on any temporary policy that selected a pod not isolated.
func (w *policyWatch) stop(t *testing.T) {
	t.Helper()
	w.halt()
	w.mu.Lock()
	defer w.mu.Unlock()
	var seen []string
	for n := range w.seen {
		seen = append(seen, n)
	}
	t.Logf("temporary policies seen: %v", seen)
	if len(seen) == 0 {
		t.Error("no temporary policy was seen while the runs went on")
	}
	for _, v := range w.violations {
		t.Error(v)
	}
}

// sweptOnceOver waits for every agent of the SIGKILLed run to end (its lease lapses), then runs
// path: it deletes the killed run's policies, although their not-after time lies ahead, and
// says why.
func sweptOnceOver(t *testing.T, cs kubernetes.Interface, ns string, killed []string) {
	t.Helper()
	np, err := cs.NetworkingV1().NetworkPolicies(ns).Get(context.Background(), killed[0], metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	run := np.Labels["netbench.kubectl.dev/run-id"]
	start := time.Now()
	if err := waitFor(45*time.Second, func() bool { return runEnded(t, cs, ns, run) }); err != nil {
		t.Fatalf("the killed run %s still has an agent running after 45 s", run)
	}
	ended := time.Since(start).Round(time.Second)
	_, stderr, err := netbench(t, "path", "-n", ns, "deploy/caller", "deploy/web-v1", "--probes", "rtt")
	if err != nil {
		t.Fatalf("path: %v\n%s", err, stderr)
	}
	for _, name := range killed {
		if !strings.Contains(stderr, "NetworkPolicy: deleted "+ns+"/"+name+" left by an earlier run (") || !strings.Contains(stderr, "every agent of its run has ended)") {
			t.Errorf("stderr does not say %s was deleted because its run is over:\n%s", name, stderr)
		}
	}
	if left := netbenchPolicies(t, cs, ns); len(left) > 0 {
		t.Errorf("policies left after the next run: %v", left)
	}
	t.Logf("left by the SIGKILLed run %s: %v; its agents ended %s after the check began; the next run deleted them", run, killed, ended)
}

// runEnded says whether every agent of run in ns has ended: its temporary pods done, its
// ephemeral containers terminated.
func runEnded(t *testing.T, cs kubernetes.Interface, ns, run string) bool {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Labels["netbench.kubectl.dev/run-id"] == run && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			return false
		}
		for _, st := range p.Status.EphemeralContainerStatuses {
			if strings.HasPrefix(st.Name, "netbench-"+run+"-") && st.State.Terminated == nil {
				return false
			}
		}
	}
	return true
}
