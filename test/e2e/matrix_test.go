package e2e

import (
	"context"
	"fmt"
	"maps"
	"math"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

const managed = "app.kubernetes.io/managed-by=kubectl-netbench"

func matrixJSON(t *testing.T, args ...string) *v1alpha1.MatrixReport {
	t.Helper()
	r := runJSON[v1alpha1.MatrixReport](t, append([]string{"matrix"}, args...)...)
	if r.Kind != "MatrixReport" || r.APIVersion != v1alpha1.APIVersion || len(r.Pairs) == 0 || len(r.Zones) == 0 || r.Plan.Pairs != len(r.Pairs) {
		t.Fatalf("required fields missing: %+v", r)
	}
	// A reply lost on the lab's user-space delay line is loss the report counts, not an error: at
	// most 2 of a pair's 50 echoes may go missing (one of 50 was lost in a full e2e run).
	for _, p := range r.Pairs {
		if p.Error != "" || p.Samples < 48 || p.Samples > 50 {
			t.Errorf("pair %s → %s: %d samples, error %q", p.From, p.To, p.Samples, p.Error)
		}
	}
	return r
}

// nothingLeft fails unless no DaemonSet or pod of netbench is left in ns (pods may take a moment
// to go after their DaemonSet).
func nothingLeft(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	if ds, err := cs.AppsV1().DaemonSets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: managed}); err != nil || len(ds.Items) > 0 {
		t.Errorf("DaemonSets left in %s: %v %v", ns, len(ds.Items), err)
	}
	noAgentPods(t, cs, ns)
}

// pingers starts a pause pod on each node and returns their IPs and network namespaces: ground
// truth on the same pod paths the agents measure.
func pingers(t *testing.T, cs kubernetes.Interface, ns string, nodes ...string) (ips, netns map[string]string) {
	t.Helper()
	ips, netns = map[string]string{}, map[string]string{}
	for _, n := range nodes {
		createPod(t, cs, ns, pod("ping-"+n, n, "netbench.lab/pause:1", nil, nil))
	}
	for _, n := range nodes {
		p := waitPod(t, cs, ns, "ping-"+n, 60*time.Second, "running", running)
		ips[n], netns[n] = p.Status.PodIP, podNetns(t, n, p.Status.PodIP)
	}
	return ips, netns
}

// With the zone delay on (300 µs same zone, 2 ms cross zone, one way): --scope zones gives a
// 2 × 2 zone matrix whose cross-zone cells exceed the same-zone ones by the configured delay,
// and --scope nodes over three nodes a 3 × 3 node matrix whose every cell is within reach of
// iputils ping between pods on the same two nodes, run in the test.
func TestMatrixZoneDelay(t *testing.T) {
	cs, ns := lab(t)
	labScript(t, "delay", "300us", "2ms")
	t.Cleanup(func() { labScript(t, "delay", "off") })

	z := matrixJSON(t, "-n", ns, "--pairs-per-cell", "2")
	if len(z.Zones) != 4 || len(z.NodeGrid) != 0 || z.Probe != "icmp" {
		t.Fatalf("zone cells %+v, node cells %d, probe %s: want 2 × 2 from icmp", z.Zones, len(z.NodeGrid), z.Probe)
	}
	cell := map[string]float64{}
	for _, c := range z.Zones {
		cell[c.From+">"+c.To] = c.P50Micros
		t.Logf("%s → %s: p50 %.0f µs, p99 %.0f µs over %d pairs", c.From, c.To, c.P50Micros, c.P99Micros, c.Pairs)
	}
	for _, p := range z.Pairs {
		t.Logf("  pair %s → %s: p50 %.0f µs, p99 %.0f µs over %d samples", p.From, p.To, p.P50Micros, p.P99Micros, p.Samples)
	}
	// Round trips cross the zone boundary twice: 2 × (2 ms − 300 µs) = 3.4 ms more than same zone.
	for _, cross := range []string{"zone-a>zone-b", "zone-b>zone-a"} {
		for _, same := range []string{"zone-a>zone-a", "zone-b>zone-b"} {
			if d := cell[cross] - cell[same]; math.Abs(d-3400) > 600 {
				t.Errorf("%s − %s = %.0f µs: want 3400 ± 600 µs (the configured delay)", cross, same, d)
			}
		}
	}
	nothingLeft(t, cs, ns)

	three := []string{"lab-a1", "lab-b1", "lab-b2"}
	ips, netns := pingers(t, cs, ns, three...)
	missed := nodeCellsOffPing(t, cs, ns, three, ips, netns, nil)
	if len(missed) > 0 {
		t.Logf("outside ping's reach, measured again: %s", strings.Join(slices.Sorted(maps.Keys(missed)), ", "))
		for _, miss := range nodeCellsOffPing(t, cs, ns, three, ips, netns, missed) {
			t.Error(miss)
		}
	}
}

// nodeCellsOffPing runs a 3 × 3 node matrix over the three nodes, with ping on each of its pod
// paths before and after it, and returns the cells (of only, when not nil) whose p50 lies outside
// ping's reach (pingMiss), by "from>to". The caller measures such cells a second time and fails
// those that miss again: once in a full CI run, one cell read 4,750 µs where ping read
// 4,275-4,325 µs before and after it and the matrix's five other cells lay 14-169 µs above ping's
// (the lab's delay lines share the two cores with the whole cluster). A defect of the probe (such
// as fault rtt-wakeup, +1 ms on every cell) misses both times.
func nodeCellsOffPing(t *testing.T, cs kubernetes.Interface, ns string, three []string, ips, netns, only map[string]string) map[string]string {
	t.Helper()
	before := pingsBefore(t, netns, three, func(node string) string { return ips[node] })
	n := matrixJSON(t, "-n", ns, "--scope", "nodes", "--nodes", "kubernetes.io/hostname!=lab-a2")
	if len(n.Nodes) != 3 || len(n.NodeGrid) != 6 || len(n.Excluded) != 1 || n.Excluded[0].Node != "lab-a2" {
		t.Fatalf("nodes %v, %d node cells, excluded %v: want a 3 × 3 node matrix without lab-a2", n.Nodes, len(n.NodeGrid), n.Excluded)
	}
	missed := map[string]string{}
	for _, c := range n.NodeGrid {
		key := c.From + ">" + c.To
		if _, again := only[key]; only != nil && !again {
			continue
		}
		if miss := pingMiss(t, "", c, netns[c.From], ips[c.To], before[key]); miss != "" {
			missed[key] = miss
		}
	}
	nothingLeft(t, cs, ns)
	return missed
}

// A node whose every path is 2 ms longer one way is named as the outlier, and no other node is.
func TestMatrixNamesTheSlowNode(t *testing.T) {
	cs, ns := lab(t)
	labScript(t, "slow-node", "lab-b1", "2ms")
	t.Cleanup(func() { labScript(t, "slow-node", "lab-b1", "off") })
	r := matrixJSON(t, "-n", ns, "--scope", "nodes")
	var nodes []string
	for _, o := range r.Outliers {
		t.Logf("outlier: %s", o.Message)
		if o.Kind == "node" {
			nodes = append(nodes, o.Node)
		}
	}
	if strings.Join(nodes, ",") != "lab-b1" {
		t.Errorf("outlying nodes %v: want lab-b1 alone", nodes)
	}
	for _, s := range r.Summary {
		t.Logf("%s: %.2f× (%+.0f µs) over %d pairs", s.Node, s.Ratio, s.ExcessMicros, s.Compared)
		if s.Node == "lab-b1" && (s.ExcessMicros < 1500 || s.ExcessMicros > 2600) {
			t.Errorf("lab-b1 excess %.0f µs: want about the 2 ms it was given", s.ExcessMicros)
		}
	}
	cmd := exec.Command(plugin(t), "--kubeconfig", kubeconfigPath(), "matrix", "-n", ns, "--scope", "nodes", "--count", "20")
	cmd.Env = append(os.Environ(), "NETBENCH_PROGRESS=always")
	var out, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &stderr
	if err := cmd.Run(); err != nil || !strings.Contains(out.String(), "lab-b1 is slow") {
		t.Errorf("the human report does not name lab-b1 (%v):\n%s", err, out.String())
	}
	for _, want := range []string{"plan: 12 pairs among 4 agents on 4 nodes, 6 rounds of up to 10 at once", "agents ready: 4/4", "measured 12/12 pairs, ETA 0s"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("progress lacks %q:\n%s", want, stderr.String())
		}
	}
	nothingLeft(t, cs, ns)
}

// Nothing of a run is left after an error (agents that cannot start) or Ctrl-C at any phase;
// after SIGKILL no agent serves or restarts once its deadline has passed (each idles), and
// cleanup deletes the DaemonSet.
func TestMatrixCleanup(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	t.Run("agents that cannot start", func(t *testing.T) {
		_, stderr, err := netbench(t, "matrix", "-n", ns, "--image", "netbench.lab/absent:1", "--start-timeout", "10s")
		lines := strings.Split(strings.TrimSpace(stderr), "\n")
		if err == nil || len(lines) != 2 || !strings.HasPrefix(lines[0], "plan: ") || !strings.Contains(lines[1], "the agents did not start") {
			t.Errorf("want the plan, then one line saying the agents did not start (%v):\n%s", err, stderr)
		}
		nothingLeft(t, cs, ns)
	})
	for _, after := range []time.Duration{300 * time.Millisecond, 1500 * time.Millisecond, 4 * time.Second} {
		t.Run("Ctrl-C after "+after.String(), func(t *testing.T) {
			stderr, err := interruptAfter(t, after, "matrix", "-n", ns, "--scope", "nodes", "--count", "200")
			if err == nil {
				t.Fatalf("an interrupted run exited 0:\n%s", stderr)
			}
			nothingLeft(t, cs, ns)
		})
	}
	t.Run("SIGKILL", func(t *testing.T) {
		cmd := exec.Command(plugin(t), "--kubeconfig", kubeconfigPath(), "matrix", "-n", ns, "--pairs-per-cell", "1", "--count", "200", "--start-timeout", "20s")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		var notAfter time.Time
		err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
			ds, err := cs.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{LabelSelector: managed})
			if err != nil || len(ds.Items) != 1 || ds.Items[0].Status.NumberReady < 2 {
				return false, nil
			}
			notAfter, err = time.Parse(time.RFC3339, ds.Items[0].Annotations["netbench.kubectl.dev/not-after"])
			return err == nil, err
		})
		if err != nil {
			t.Fatalf("agents never ready: %v", err)
		}
		_ = cmd.Process.Signal(syscall.SIGKILL)
		_ = cmd.Wait()
		t.Logf("plugin killed; agents end by %s (in %s)", notAfter.Format(time.RFC3339), time.Until(notAfter).Round(time.Second))
		if time.Until(notAfter) > 3*time.Minute {
			t.Fatalf("not-after %s is too far for this plan", notAfter)
		}
		time.Sleep(time.Until(notAfter) + 3*time.Second)
		waitNoneLive(t, cs, ns, managed, 20*time.Second, "agents serving or restarting after their deadline", func(p corev1.Pod) []string {
			var live []string
			for _, s := range p.Status.ContainerStatuses {
				if s.Ready {
					live = append(live, p.Name+" (ready)")
				}
				if s.RestartCount > 0 {
					live = append(live, fmt.Sprintf("%s (%d restarts)", p.Name, s.RestartCount))
				}
			}
			return live
		})
		out, _, err := netbench(t, "cleanup", "-n", ns)
		if err != nil || !strings.Contains(out, "deleted DaemonSet") {
			t.Errorf("cleanup (%v):\n%s", err, out)
		}
		nothingLeft(t, cs, ns)
	})
}

// The agents run in a namespace enforcing Pod Security "restricted"; a user whose Role lacks
// DaemonSets gets one line naming them before anything is created, and the README's matrix Role
// is enough.
func TestMatrixRestrictedAndRBAC(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	restrict(t, cs, ns)
	r := matrixJSON(t, "-n", ns, "--pairs-per-cell", "1", "--throughput", "1s")
	t.Logf("restricted namespace: RTT from %s over %d pairs", r.Probe, len(r.Pairs))
	for _, c := range r.Zones {
		if c.Gbps == nil || *c.Gbps <= 0 {
			t.Errorf("cell %s → %s: no throughput with --throughput 1s", c.From, c.To)
		} else {
			t.Logf("%s → %s: %.2f Gbit/s", c.From, c.To, *c.Gbps)
		}
	}

	ctx := context.Background()
	user := "matrix-user-" + ns
	bind := func(kind, role string) {
		if kind == "ClusterRole" {
			crb := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: user},
				RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: kind, Name: role},
				Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
			if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, crb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = cs.RbacV1().ClusterRoleBindings().Delete(context.Background(), user, metav1.DeleteOptions{})
			})
			return
		}
		rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: role},
			RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: kind, Name: role},
			Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: user}}}
		if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(b)
	nodesRole := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: user}, Rules: parseRoleRules(t, readme, "netbench-nodes")}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, nodesRole, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.RbacV1().ClusterRoles().Delete(context.Background(), user, metav1.DeleteOptions{}) })
	bind("ClusterRole", user)
	for _, name := range []string{"netbench-pods", "netbench-matrix"} {
		if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: parseRoleRules(t, readme, name)}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	bind("Role", "netbench-pods")
	_, stderr, err := netbench(t, "--as", user, "matrix", "-n", ns)
	if err == nil || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || !strings.Contains(stderr, "create daemonsets.apps") || !strings.Contains(stderr, "nothing was started") {
		t.Errorf("without DaemonSets: want one line naming create daemonsets.apps (%v):\n%s", err, stderr)
	}
	nothingLeft(t, cs, ns)
	bind("Role", "netbench-matrix")
	if out, stderr, err := netbench(t, "--as", user, "matrix", "-n", ns, "--pairs-per-cell", "1"); err != nil || !strings.Contains(out, "RTT p50 / p99 by zone") {
		t.Errorf("with the README's matrix Role (%v):\n%s\n%s", err, out, stderr)
	}
	nothingLeft(t, cs, ns)
}

// The rate probes in a matrix (--rates): every measured pair has each rate, the one its result
// says, and a closed loop's: its rate beside Little's law's (clients ÷ mean latency) within
// 0.3-1.1 (the loop's own gaps; a unit error is 1,000× off); the worst tcp-crr cell gates. Not
// beside other tests: the rate probes load both cores (beside them, the same-zone IPv6 RTT of
// TestMatrixBothFamilies strayed 250 µs from ping's).
func TestMatrixRates(t *testing.T) {
	_, ns := lab(t)
	r := matrixJSON(t, "-n", ns, "--pairs-per-cell", "1", "--rates", "1s", "--fail-if", "worst.tcp-crr.rate < 1")
	for _, c := range r.Zones {
		t.Logf("%s → %s: rates %v per second", c.From, c.To, c.PerSecond)
	}
	for _, p := range r.Pairs {
		for _, kind := range []string{v1alpha1.ProbeTCPRR, v1alpha1.ProbeUDPRR, v1alpha1.ProbeTCPCRR} {
			i := slices.IndexFunc(p.Results, func(res *v1alpha1.ProbeResult) bool { return res.Kind == kind && res.Rate != nil })
			v, ok := p.PerSecond[kind]
			if i < 0 || !ok || v <= 0 {
				t.Errorf("pair %s → %s: no %s rate with --rates 1s: %v (%s)", p.From, p.To, kind, p.PerSecond, p.RateError)
				continue
			}
			x := p.Results[i].Rate
			// The pair's figure is its result's, rounded to 0.1 (a tolerance of 0.05 failed on
			// the float of a value halfway).
			if little := v / x.LittleLawPerSecond; v != report.Round1(x.PerSecond) || !(little >= 0.3 && little <= 1.1) {
				t.Errorf("pair %s → %s: %s %.1f per second (its result %.1f) on %d clients, Little's law %.1f: ratio %.2f, want 0.3-1.1",
					p.From, p.To, kind, v, x.PerSecond, x.Connections, x.LittleLawPerSecond, little)
			}
		}
	}
}
