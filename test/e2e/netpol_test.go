package e2e

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// defaultDeny makes ns default-deny in both directions, allowing only TCP 8080 between its
// pods (ingress to app=web, egress to anything) and DNS egress.
func defaultDeny(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	tcp, udp := corev1.ProtocolTCP, corev1.ProtocolUDP
	p8080, p53 := intstr.FromInt32(8080), intstr.FromInt32(53)
	all := metav1.LabelSelector{}
	for _, np := range []networkingv1.NetworkPolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: "default-deny"}, Spec: networkingv1.NetworkPolicySpec{PodSelector: all,
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web-8080"}, Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &all}}, Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &p8080}}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "egress-8080-dns"}, Spec: networkingv1.NetworkPolicySpec{PodSelector: all,
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress: []networkingv1.NetworkPolicyEgressRule{
				{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &all}}, Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &p8080}}},
				{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &udp, Port: &p53}, {Protocol: &tcp, Port: &p53}}},
			}}},
	} {
		if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(context.Background(), &np, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(2 * time.Second) // the enforcers' informers see the policies
}

// netbenchPolicies are the NetworkPolicies the plugin created in ns.
func netbenchPolicies(t *testing.T, cs kubernetes.Interface, ns string) []string {
	t.Helper()
	l, err := cs.NetworkingV1().NetworkPolicies(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kubectl-netbench"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range l.Items {
		names = append(names, p.Name)
	}
	return names
}

// With the lab enforcing NetworkPolicy, in a default-deny namespace that allows only the app's
// port 8080: the agent-to-agent probes are listed as skipped, naming the policy, the app-port
// probes are measured, the exit is 0; with --allow-policy every probe of the agents runs
// (ICMP too in pod mode, where the temporary policy selects the run's agent pods only), and no
// NetworkPolicy of the run is left, also after Ctrl-C.
func TestPathUnderDefaultDeny(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	workloads(t, cs, ns)
	defaultDeny(t, cs, ns)

	t.Run("blocked", func(t *testing.T) {
		r := runJSON[v1alpha1.PathReport](t, "path", "-n", ns, "deploy/client", "deploy/web", "--port", "8080", "--probes", "rtt,http")
		if len(r.Probes) != 0 {
			t.Errorf("agent probes ran: %d", len(r.Probes))
		}
		for _, p := range r.AppPort {
			if samples(p) == 0 {
				t.Errorf("app-port probe %s has no samples: %s", p.Name, describe(p))
			}
		}
		if len(r.AppPort) != 2 {
			t.Errorf("app-port probes: %d, want 2", len(r.AppPort))
		}
		if r.Policy == nil || len(r.Policy.Blocked) == 0 || !slices.Contains(r.Policy.Blocked[0].Policies, ns+"/default-deny") {
			t.Fatalf("policy check %+v: want the agent port blocked by %s/default-deny", r.Policy, ns)
		}
		for _, probe := range []string{"icmp", "tcp-rtt", "http"} {
			if !slices.ContainsFunc(r.Skipped, func(s string) bool {
				return strings.HasPrefix(s, probe+": ") && strings.Contains(s, ns+"/default-deny")
			}) {
				t.Errorf("%s not listed as skipped by %s/default-deny: %q", probe, ns, r.Skipped)
			}
		}
		t.Logf("skipped: %q; app probes %d", r.Skipped, len(r.AppPort))
	})

	for _, mode := range []string{"ephemeral", "pod"} {
		t.Run("allow-policy "+mode, func(t *testing.T) {
			r := pathJSON(t, "-n", ns, "deploy/client", "deploy/web", "--port", "8080", "--probes", "rtt,http,udp", "--allow-policy", "--mode", mode)
			got := map[string]bool{}
			for _, p := range r.Probes {
				if p.Skipped == "" && samples(p) > 0 {
					got[p.Name] = true
				}
			}
			want := []string{"tcp-rtt", "http", "udp"}
			if mode == "pod" {
				want = append(want, "icmp")
			}
			for _, w := range want {
				if !got[w] {
					t.Errorf("probe %s not measured (measured %v, skipped %q)", w, got, r.Skipped)
				}
			}
			if r.Policy == nil || len(r.Policy.Temporary) == 0 || !r.Policy.Removed {
				t.Errorf("policy check %+v: want temporary policies, removed", r.Policy)
			}
			if left := netbenchPolicies(t, cs, ns); len(left) > 0 {
				t.Errorf("NetworkPolicies left: %v", left)
			}
			t.Logf("%s: temporary %v, skipped %q", mode, r.Policy.Temporary, r.Skipped)
		})
	}

	t.Run("allow-policy interrupted", func(t *testing.T) {
		cmd := exec.Command(plugin(t), "--kubeconfig", kubeconfigPath(), "path", "-n", ns, "deploy/client", "deploy/web",
			"--allow-policy", "--probes", "http", "--duration", "20s", "--start-timeout", "20s")
		cmd.Env = append(os.Environ(), "NETBENCH_PROGRESS=always")
		stderr, _ := cmd.StderrPipe()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stderr)
		created := false
		for sc.Scan() {
			created = created || strings.Contains(sc.Text(), "--allow-policy created")
			if strings.Contains(sc.Text(), "measuring: http") {
				_ = cmd.Process.Signal(syscall.SIGINT)
				break
			}
		}
		for sc.Scan() {
		}
		if err := cmd.Wait(); err == nil {
			t.Error("exit 0 after SIGINT")
		}
		if !created {
			t.Error("no temporary policy was announced")
		}
		if left := netbenchPolicies(t, cs, ns); len(left) > 0 {
			t.Errorf("NetworkPolicies left after Ctrl-C: %v", left)
		}
	})
}

// A policy that allows the pod's egress only inside its namespace stops its DNS: dns says so
// before it starts anything, naming the policy, and exits non-zero; the pod gains no agent.
func TestDNSEgressPolicyCause(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	workloads(t, cs, ns)
	all := metav1.LabelSelector{}
	np := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "same-namespace-only"}, Spec: networkingv1.NetworkPolicySpec{
		PodSelector: all, PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
		Egress: []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &all}}}}}}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(context.Background(), &np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := netbench(t, "dns", "-n", ns, "deploy/client", "example.com")
	if err == nil || !strings.Contains(stderr, "NetworkPolicy "+ns+"/same-namespace-only") || !strings.Contains(stderr, "DNS egress") {
		t.Fatalf("exit %v, stderr %q: want a non-zero exit naming %s/same-namespace-only as the cause", err, stderr, ns)
	}
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=client"})
	if err != nil || len(pods.Items) != 1 || len(pods.Items[0].Spec.EphemeralContainers) != 0 {
		t.Errorf("the pod gained an agent: %v %v", err, pods)
	}
	t.Logf("stderr: %s", strings.TrimSpace(stderr))
}

// samples is how many round trips or requests a probe measured.
func samples(r *agent.ProbeResult) int64 {
	switch {
	case r.RTT != nil:
		return int64(r.RTT.Received)
	case r.HTTP != nil:
		return r.HTTP.Requests - r.HTTP.Errors
	}
	return 0
}

// The ladder and the matrix in the same default-deny namespace: the ladder measures the app's
// port and the Service from every rung with no server agent, naming the policy that blocks
// the agents' port and skipping the count of where connections land; with --allow-policy every
// probe runs and the connections are counted. The matrix refuses before creating anything,
// naming the policy; with --allow-policy it measures every pair behind a temporary policy. No
// NetworkPolicy of a run is left.
func TestLadderAndMatrixUnderDefaultDeny(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	workloads(t, cs, ns)
	defaultDeny(t, cs, ns)

	t.Run("ladder blocked", func(t *testing.T) {
		r := ladderJSON(t, "-n", ns, "svc/web", "--probes", "rtt", "--connections-per-rung", "50")
		if r.Policy == nil || len(r.Policy.Blocked) == 0 || !slices.Contains(r.Policy.Blocked[0].Policies, ns+"/default-deny") {
			t.Fatalf("policy check %+v: want the agents' port blocked by %s/default-deny", r.Policy, ns)
		}
		if r.Service == nil || !strings.Contains(r.Service.SpreadSkipped, ns+"/default-deny") {
			t.Errorf("service %+v: want the spread skipped naming %s/default-deny", r.Service, ns)
		}
		for _, rung := range r.Rungs {
			if rung.Skipped != "" {
				continue
			}
			got := map[string]int64{}
			for _, p := range rung.Results[0].AppPort {
				got[p.Name] = samples(p)
			}
			if len(rung.Results[0].Probes) != 0 || got["app-tcp-rtt"] == 0 || got["svc-tcp-rtt"] == 0 {
				t.Errorf("rung %s: agent probes %d, app and Service samples %v: want the app's port and the Service measured only",
					rung.Name, len(rung.Results[0].Probes), got)
			}
		}
		if left := netbenchPolicies(t, cs, ns); len(left) > 0 {
			t.Errorf("NetworkPolicies left: %v", left)
		}
	})

	t.Run("ladder allow-policy", func(t *testing.T) {
		r := ladderJSON(t, "-n", ns, "svc/web", "--probes", "rtt", "--connections-per-rung", "50", "--allow-policy")
		if r.Policy == nil || len(r.Policy.Temporary) == 0 || !r.Policy.Removed {
			t.Fatalf("policy check %+v: want temporary policies, removed", r.Policy)
		}
		if r.Service == nil || r.Service.SpreadSkipped != "" {
			t.Errorf("service %+v: want where connections land measured", r.Service)
		}
		for _, rung := range r.Rungs {
			if rung.Skipped != "" {
				continue
			}
			for _, p := range rung.Results[0].Probes {
				if p.Name == "tcp-rtt" && samples(p) == 0 {
					t.Errorf("rung %s: tcp-rtt to the server agent measured nothing", rung.Name)
				}
			}
			if rung.Spread == nil || rung.Spread.Answered == 0 {
				t.Errorf("rung %s: spread %+v: want answered connections", rung.Name, rung.Spread)
			}
		}
		if left := netbenchPolicies(t, cs, ns); len(left) > 0 {
			t.Errorf("NetworkPolicies left: %v", left)
		}
		t.Logf("temporary %v", r.Policy.Temporary)
	})

	t.Run("matrix", func(t *testing.T) {
		_, stderr, err := netbench(t, "matrix", "-n", ns, "--pairs-per-cell", "1")
		if err == nil || !strings.Contains(stderr, ns+"/default-deny") || !strings.Contains(stderr, "--allow-policy") {
			t.Fatalf("exit %v, stderr %q: want a refusal naming %s/default-deny", err, stderr, ns)
		}
		nothingLeft(t, cs, ns)
		r := matrixJSON(t, "-n", ns, "--pairs-per-cell", "1", "--allow-policy")
		if r.Policy == nil || len(r.Policy.Temporary) != 1 || !r.Policy.Removed || r.Probe != agent.ProbeICMP {
			t.Errorf("policy %+v, probe %s: want one temporary policy, removed, and ICMP measured", r.Policy, r.Probe)
		}
		nothingLeft(t, cs, ns)
		if left := netbenchPolicies(t, cs, ns); len(left) > 0 {
			t.Errorf("NetworkPolicies left: %v", left)
		}
	})
}

// ipBlocks are judged per address family, on the lab's dual-stack pods: a policy admitting to
// web only the client's IPv4 address (and the nodes and API server, outside the pod range)
// lets --ip-family both measure over IPv4 and lists every IPv6 twin as blocked by it, naming
// it; with --allow-policy the temporary policy admits the client's address of each family and
// the TCP probes of both families are measured (ICMP stays closed to an ephemeral agent: the
// temporary policy opens its TCP and UDP port).
func TestPolicyPerFamily(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	workloads(t, cs, ns)
	client := onePod(t, cs, ns, "app=client")
	v4 := familyIP(client, false)
	if v4 == "" || familyIP(client, true) == "" {
		t.Fatalf("the client pod is not dual-stack (%v): this test needs the dual-stack lab", client.Status.PodIPs)
	}
	octets := strings.Split(v4, ".")
	podRange := octets[0] + "." + octets[1] + ".0.0/16"
	np := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "web-from-client-ipv4"}, Spec: networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		Ingress: []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{
			{IPBlock: &networkingv1.IPBlock{CIDR: v4 + "/32"}},
			{IPBlock: &networkingv1.IPBlock{CIDR: "0.0.0.0/0", Except: []string{podRange}}}, // nodes, the API server
		}}}}}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(context.Background(), &np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the enforcers' informers see it
	measured := func(r *v1alpha1.PathReport) map[string]bool {
		got := map[string]bool{}
		for _, p := range r.Probes {
			got[p.Name] = p.Skipped == "" && samples(p) > 0
		}
		return got
	}

	r := pathJSON(t, "-n", ns, "deploy/client", "deploy/web", "--ip-family", "both", "--probes", "rtt")
	got := measured(r)
	for _, p := range []string{"icmp", "tcp-rtt"} {
		if !got[p] || got[p+"-v6"] {
			t.Errorf("%s measured %v, %s-v6 measured %v: want IPv4 alone (skipped %q)", p, got[p], p, got[p+"-v6"], r.Skipped)
		}
		if !slices.ContainsFunc(r.Skipped, func(s string) bool {
			return strings.HasPrefix(s, p+"-v6: ") && strings.Contains(s, ns+"/web-from-client-ipv4")
		}) {
			t.Errorf("%s-v6 not listed as skipped by %s/web-from-client-ipv4: %q", p, ns, r.Skipped)
		}
	}

	r = pathJSON(t, "-n", ns, "deploy/client", "deploy/web", "--ip-family", "both", "--probes", "rtt", "--allow-policy")
	got = measured(r)
	if !got["tcp-rtt"] || !got["tcp-rtt-v6"] {
		t.Errorf("with --allow-policy: measured %v, want tcp-rtt and tcp-rtt-v6 (skipped %q, policy %+v)", got, r.Skipped, r.Policy)
	}
	if left := netbenchPolicies(t, cs, ns); len(left) > 0 {
		t.Errorf("NetworkPolicies left: %v", left)
	}
}
