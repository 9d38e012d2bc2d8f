// Package e2e holds the end-to-end tests that run against the lab cluster (hack/lab). They skip
// when no lab is reachable; `make e2e` and .ci/run bring the lab up first.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

const (
	defaultKubeconfig = "/var/lib/netbench-lab/admin.kubeconfig"
	agentImage        = "ghcr.io/kubectl-netbench/agent:dev"
)

var labNodes = []struct{ name, zone string }{{"lab-a1", "zone-a"}, {"lab-a2", "zone-a"}, {"lab-b1", "zone-b"}, {"lab-b2", "zone-b"}}

// noLab skips the test, or fails it naming the lab when NETBENCH_E2E_REQUIRE_LAB=1 (CI's switch:
// a lab that is down, or died mid-suite, must fail the run rather than skip the rest of it).
func noLab(t *testing.T, format string, args ...any) {
	t.Helper()
	if os.Getenv("NETBENCH_E2E_REQUIRE_LAB") == "1" {
		t.Fatalf("the lab is required (NETBENCH_E2E_REQUIRE_LAB=1): "+format, args...)
	}
	t.Skipf(format, args...)
}

// beside marks a test that switches nothing the whole lab shares (no lab.sh switch, no kube-proxy
// mode) and compares no time with a reference: such tests run together, after every other test of
// the package has finished (go test -parallel; hack/test.sh sets how many at once), so the timing
// comparisons run with the lab to themselves. TestBesideTestsSwitchNothing holds them to it.
func beside(t *testing.T) {
	t.Helper()
	t.Parallel()
}

// siblings marks a subtest that runs at once with its sibling subtests (its parent waits for
// them): parts of one test that switch nothing and time nothing. TestBesideTestsSwitchNothing
// holds every function calling it to beside's rules.
func siblings(t *testing.T) {
	t.Helper()
	t.Parallel()
}

// lab connects to the lab and makes a namespace for the test, deleted when it ends.
func lab(t *testing.T) (kubernetes.Interface, string) {
	t.Helper()
	path := os.Getenv("NETBENCH_LAB_KUBECONFIG")
	if path == "" {
		path = defaultKubeconfig
	}
	if _, err := os.Stat(path); err != nil {
		noLab(t, "no lab cluster (%s not found): run `make lab-up` first", path)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	// The API server must answer within 5 s: one that is gone or hangs is no lab.
	quick := rest.CopyConfig(cfg)
	quick.Timeout = 5 * time.Second
	if _, err := kubernetes.NewForConfigOrDie(quick).Discovery().ServerVersion(); err != nil {
		noLab(t, "lab cluster not reachable through %s: %v", path, err)
	}
	ns := "e2e-" + rand.String(6)
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Then its pods, each with a second to stop: the namespace controller reaches them only
		// after a pass over every resource type, and a fidelity test waits for them (alone). The
		// namespace goes first: while it terminates, no controller may make new pods in it.
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
		grace := int64(1)
		_ = cs.CoreV1().Pods(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{GracePeriodSeconds: &grace}, metav1.ListOptions{})
	})
	if mutationTests(t)[topName(t)] || comparesRuns[topName(t)] {
		waitAloneBeside(t, cs, ns)
	}
	return cs, ns
}

func restricted() *corev1.SecurityContext {
	f, nonRoot := false, true
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: &f,
		RunAsNonRoot:             &nonRoot,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

func pod(name, node, image string, args []string, labels map[string]string) *corev1.Pod {
	var grace int64 = 1
	var env []corev1.EnvVar
	if v := fault.Value(); v != "" && image == agentImage {
		env = []corev1.EnvVar{{Name: fault.Env, Value: v}} // a mutation run (hack/mutations.sh)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels},
		Spec: corev1.PodSpec{
			NodeName:                      node,
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			Containers: []corev1.Container{{
				Name: "main", Image: image, ImagePullPolicy: corev1.PullIfNotPresent, Args: args, Env: env,
				SecurityContext: restricted(),
			}},
		},
	}
	if image == agentImage {
		// As the plugin's temporary agent pods do: lab-b2's runtime grants no unprivileged ICMP.
		p.Spec.SecurityContext = &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ping_group_range", Value: session.PingGroupRange}}}
	}
	return p
}

func createPod(t *testing.T, cs kubernetes.Interface, ns string, p *corev1.Pod) {
	t.Helper()
	if _, err := cs.CoreV1().Pods(ns).Create(context.Background(), p, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating pod %s: %v", p.Name, err)
	}
}

// waitPod waits until cond holds for the pod, failing with the pod's state on timeout.
func waitPod(t *testing.T, cs kubernetes.Interface, ns, name string, timeout time.Duration, what string, cond func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var last *corev1.Pod
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		p, err := cs.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		last = p
		return cond(p), nil
	})
	if err != nil {
		t.Fatalf("pod %s not %s in %s: %+v", name, what, timeout, last.Status)
	}
	return last
}

func running(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }
func finished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

func logs(t *testing.T, cs kubernetes.Interface, ns, name, container string) string {
	t.Helper()
	b, err := cs.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{Container: container}).DoRaw(context.Background())
	if err != nil {
		t.Fatalf("logs of %s/%s: %v", name, container, err)
	}
	return string(b)
}

// agentResults parses the JSON-lines events an agent printed.
func agentResults(t *testing.T, out string) map[string]*agent.ProbeResult {
	t.Helper()
	res := map[string]*agent.ProbeResult{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var ev agent.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("not an agent event: %q", line)
		}
		if ev.Type == agent.EventError {
			t.Errorf("agent error: %s: %s", ev.Probe, ev.Message)
		}
		if ev.Type == agent.EventResult {
			res[ev.Probe] = ev.Result
		}
	}
	return res
}

func jobArgs(t *testing.T, job agent.Job) []string {
	t.Helper()
	b, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	return []string{"run", "--deadline", "2m", "--job", string(b)}
}

// Every node's pods reach every other node's pods by pod IP (TCP and ICMP), and the nodes carry
// the zone labels a cloud would set.
func TestPodsReachEachOtherByPodIP(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	for _, n := range labNodes {
		node, err := cs.CoreV1().Nodes().Get(context.Background(), n.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if z := node.Labels["topology.kubernetes.io/zone"]; z != n.zone {
			t.Errorf("node %s zone label %q, want %q", n.name, z, n.zone)
		}
		if node.Labels["topology.kubernetes.io/region"] == "" {
			t.Errorf("node %s has no region label", n.name)
		}
	}
	const token = "e2e-token"
	ips := map[string]string{}
	for _, n := range labNodes {
		createPod(t, cs, ns, pod("srv-"+n.name, n.name, agentImage, []string{"serve", "--listen", ":7000", "--token", token, "--deadline", "5m"}, nil))
	}
	for _, n := range labNodes {
		p := waitPod(t, cs, ns, "srv-"+n.name, 90*time.Second, "running", running)
		ips[n.name] = p.Status.PodIP
	}
	for _, from := range labNodes {
		var probes []agent.ProbeSpec
		for _, to := range labNodes {
			addr := net.JoinHostPort(ips[to.name], "7000")
			probes = append(probes,
				agent.ProbeSpec{Kind: agent.ProbeTCPRTT, Name: "tcp-" + to.name, Address: addr, Count: 3, IntervalMillis: 20},
				agent.ProbeSpec{Kind: agent.ProbeICMP, Name: "icmp-" + to.name, Address: addr, Count: 3, IntervalMillis: 20},
			)
		}
		job := agent.Job{APIVersion: agent.APIVersion, Host: ips[from.name], Port: 7000, Token: token, Probes: probes}
		createPod(t, cs, ns, pod("cli-"+from.name, from.name, agentImage, jobArgs(t, job), nil))
	}
	for _, from := range labNodes {
		p := waitPod(t, cs, ns, "cli-"+from.name, 90*time.Second, "finished", finished)
		res := agentResults(t, logs(t, cs, ns, p.Name, "main"))
		for _, to := range labNodes {
			for _, k := range []string{"tcp-", "icmp-"} {
				r := res[k+to.name]
				if r == nil || r.RTT == nil || r.RTT.Received != 3 {
					t.Errorf("%s → %s (%s): %+v", from.name, to.name, k, r)
				}
			}
		}
		if p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("client on %s: %s", from.name, p.Status.Phase)
		}
	}
}

// A pod resolves the kubernetes Service and an external name through CoreDNS, with the real
// glibc and musl resolvers, and an unknown external name fails.
func TestPodResolvesThroughClusterDNS(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	names := []string{"kubernetes.default", "example.com", "does-not-exist.example.net"}
	for _, libc := range []string{"glibc", "musl"} {
		createPod(t, cs, ns, pod("resolve-"+libc, "", "netbench.lab/resolver-"+libc+":1", append([]string{"--count", "1"}, names...), nil))
	}
	for _, libc := range []string{"glibc", "musl"} {
		p := waitPod(t, cs, ns, "resolve-"+libc, 90*time.Second, "finished", finished)
		out := logs(t, cs, ns, p.Name, "main")
		for _, want := range []string{"lookup kubernetes.default ok 10.96.0.1", "lookup example.com ok 10.77.0.250", "lookup does-not-exist.example.net error"} {
			if !strings.Contains(out, want) {
				t.Errorf("%s resolver output lacks %q:\n%s", libc, want, out)
			}
		}
	}
}

// A ClusterIP Service routes to a pod on another node (kube-proxy on the client's node).
func TestClusterIPServiceAcrossNodes(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	labels := map[string]string{"app": "sample"}
	app := pod("sample", "lab-b1", "netbench.lab/sample-app:1", nil, labels)
	createPod(t, cs, ns, app)
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "sample"},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{
			{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)},
		}},
	}
	created, err := cs.CoreV1().Services(ns).Create(context.Background(), svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitPod(t, cs, ns, "sample", 90*time.Second, "ready", func(p *corev1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	})
	waitServiceRouted(t, "lab-a1", created.Spec.ClusterIP)
	job := agent.Job{APIVersion: agent.APIVersion, Probes: []agent.ProbeSpec{
		{Kind: agent.ProbeTCPRTT, Name: "by-ip", Address: net.JoinHostPort(created.Spec.ClusterIP, "80"), Count: 5, IntervalMillis: 50},
		{Kind: agent.ProbeHTTP, Name: "by-name", URL: fmt.Sprintf("http://sample.%s.svc.cluster.local/", ns), QPS: 50, Connections: 2, DurationSeconds: 1},
	}}
	cli := pod("client", "lab-a1", agentImage, jobArgs(t, job), nil)
	createPod(t, cs, ns, cli)
	p := waitPod(t, cs, ns, "client", 90*time.Second, "finished", finished)
	res := agentResults(t, logs(t, cs, ns, "client", "main"))
	if r := res["by-ip"]; r == nil || r.RTT == nil || r.RTT.Received != 5 {
		t.Errorf("tcp to the ClusterIP: %s", describe(r))
	}
	// Reachability by name, not a rate: every request answered, at least one on each of the two
	// connections. How many fit in the second is the machine's: beside seven other tests the
	// agent was seen to reach only 26 of the 50 asked, and in a CI run 4 (every one answered),
	// its own accounting showing it waited 1.58 s of its 1.89 s for a CPU.
	if r := res["by-name"]; r == nil || r.HTTP == nil || r.HTTP.Errors != 0 || r.HTTP.Requests < 2 {
		t.Errorf("http to the Service name: %s", describe(r))
	}
	if p.Status.Phase != corev1.PodSucceeded {
		t.Errorf("client pod %s", p.Status.Phase)
	}
}

// An ephemeral container added through the API runs in the pod, shares its network namespace
// and sees the same /etc/resolv.conf as the pod's own container.
func TestEphemeralContainerSharesPodNetwork(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	createPod(t, cs, ns, pod("target", "lab-a2", agentImage, []string{"inspect", "--idle"}, nil))
	p := waitPod(t, cs, ns, "target", 90*time.Second, "running", running)
	p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debugger", Image: agentImage, ImagePullPolicy: corev1.PullIfNotPresent,
			Args: []string{"inspect"}, SecurityContext: restricted(),
		},
		TargetContainerName: "main",
	})
	if _, err := cs.CoreV1().Pods(ns).UpdateEphemeralContainers(context.Background(), "target", p, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("adding an ephemeral container: %v", err)
	}
	p = waitPod(t, cs, ns, "target", 60*time.Second, "with a finished ephemeral container", func(p *corev1.Pod) bool {
		for _, s := range p.Status.EphemeralContainerStatuses {
			if s.Name == "debugger" && s.State.Terminated != nil {
				return true
			}
		}
		return false
	})
	for _, s := range p.Status.EphemeralContainerStatuses {
		if s.State.Terminated.ExitCode != 0 {
			t.Fatalf("ephemeral container exit %d: %s", s.State.Terminated.ExitCode, s.State.Terminated.Message)
		}
	}
	var mainView, ephView agent.Inspection
	for c, v := range map[string]*agent.Inspection{"main": &mainView, "debugger": &ephView} {
		if err := json.NewDecoder(bytes.NewReader([]byte(logs(t, cs, ns, "target", c)))).Decode(v); err != nil {
			t.Fatalf("%s: %v", c, err)
		}
	}
	if !slices.Contains(ephView.Addresses, p.Status.PodIP) {
		t.Errorf("ephemeral container sees %v, not the pod IP %s", ephView.Addresses, p.Status.PodIP)
	}
	if ephView.ResolvConf != mainView.ResolvConf {
		t.Errorf("resolv.conf differs:\nephemeral:\n%s\nmain:\n%s", ephView.ResolvConf, mainView.ResolvConf)
	}
	for _, want := range []string{"search " + ns + ".svc.cluster.local svc.cluster.local cluster.local", "nameserver 10.96.0.10", "options ndots:5"} {
		if !strings.Contains(ephView.ResolvConf, want) {
			t.Errorf("pod resolv.conf lacks %q:\n%s", want, ephView.ResolvConf)
		}
	}
}

// restrict makes the namespace enforce Pod Security "restricted".
func restrict(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	n, err := cs.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	n.Labels["pod-security.kubernetes.io/enforce"] = "restricted"
	if _, err := cs.CoreV1().Namespaces().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// nodeNetns names the network namespace of a lab node (lab-a1: nblab-a1).
func nodeNetns(node string) string { return "nblab-" + strings.TrimPrefix(node, "lab-") }

// waitServiceRouted waits until kube-proxy on node has programmed a route with endpoints for
// the ClusterIP (an iptables KUBE-SVC jump, or an element of the nftables service-ips map): a
// Service whose pod is ready can still be refused on a node whose kube-proxy has not synced yet.
func waitServiceRouted(t *testing.T, node, clusterIP string) {
	t.Helper()
	netns := nodeNetns(node)
	routed := func() bool {
		out, _ := exec.Command("ip", "netns", "exec", netns, "iptables-save", "-t", "nat").Output()
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "-d "+clusterIP+"/32") && strings.Contains(l, "-j KUBE-SVC-") {
				return true
			}
		}
		return nftRoutes(node, clusterIP)
	}
	deadline := time.Now().Add(30 * time.Second)
	for !routed() {
		if time.Now().After(deadline) {
			t.Fatalf("kube-proxy on %s did not route %s within 30 s", node, clusterIP)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// nftRoutes says whether kube-proxy in nftables mode on node has the ClusterIP in its map.
func nftRoutes(node, clusterIP string) bool {
	family := "ip"
	if strings.Contains(clusterIP, ":") {
		family = "ip6"
	}
	out, _ := exec.Command("ip", "netns", "exec", nodeNetns(node), "nft", "list", "map", family, "kube-proxy", "service-ips").Output()
	return strings.Contains(string(out), clusterIP+" . ")
}

// waitServiceEndpoints waits until kube-proxy on node sends the ClusterIP's proto/port to want
// endpoints (the KUBE-SEP jumps of its iptables KUBE-SVC chain), as it does once it has applied
// a change of the Service's endpoints or topology. In nftables mode it waits 3 s instead.
func waitServiceEndpoints(t *testing.T, node, clusterIP, proto string, port, want int) {
	t.Helper()
	// kube-proxy's IPv6 rules are ip6tables' (a ClusterIP of an IPv6-primary lab's Service).
	save, host := "iptables-save", "/32"
	if strings.Contains(clusterIP, ":") {
		save, host = "ip6tables-save", "/128"
	}
	svc := regexp.MustCompile(`^-A KUBE-SERVICES -d ` + regexp.QuoteMeta(clusterIP) + host + ` -p ` + proto + ` .*--dport ` + strconv.Itoa(port) + ` -j (KUBE-SVC-\S+)`)
	endpoints := func() (int, bool) {
		out, _ := exec.Command("ip", "netns", "exec", nodeNetns(node), save, "-t", "nat").Output()
		lines := strings.Split(string(out), "\n")
		chain := ""
		for _, l := range lines {
			if m := svc.FindStringSubmatch(l); m != nil {
				chain = m[1]
			}
		}
		if chain == "" {
			return 0, false
		}
		n := 0
		for _, l := range lines {
			if strings.HasPrefix(l, "-A "+chain+" ") && strings.Contains(l, "-j KUBE-SEP-") {
				n++
			}
		}
		return n, true
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		n, iptables := endpoints()
		switch {
		case !iptables && nftRoutes(node, clusterIP):
			time.Sleep(3 * time.Second)
			return
		case n == want:
			return
		case time.Now().After(deadline):
			t.Fatalf("kube-proxy on %s sends %s %s/%d to %d endpoints after 30 s, want %d; its last lines about the Service:\n%s", node, clusterIP, proto, port, n, want, strings.Join(proxyLinesAbout(node, clusterIP, 6), "\n"))
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// describe prints a probe result with its parts, not their addresses.
func describe(r *agent.ProbeResult) string {
	b, err := json.Marshal(r)
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// proxyLinesAbout returns the last n lines kube-proxy on node logged about a ClusterIP (its
// topology decisions are logged at the lab's verbosity), from the lab's log.
func proxyLinesAbout(node, clusterIP string, n int) []string {
	data, err := os.ReadFile("/var/lib/netbench-lab/logs/kube-proxy-" + node + ".log")
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, `"`+clusterIP+":") || strings.Contains(line, `"[`+clusterIP+"]:") {
			out = append(out, line)
		}
	}
	return out[max(0, len(out)-n):]
}
