package plugin

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// addPolicies stores a default-deny policy (both directions) and those that allow TCP to the
// pods labelled app=web on ports (one NetworkPolicyPort each; a range when endPort is set)
// from every pod of ns, and every pod's egress there.
func addPolicies(t *testing.T, cs kubernetes.Interface, ns string, port, endPort int32) {
	t.Helper()
	tcp, p := corev1.ProtocolTCP, intstr.FromInt32(port)
	np := networkingv1.NetworkPolicyPort{Protocol: &tcp, Port: &p}
	if endPort != 0 {
		np.EndPort = &endPort
	}
	all := metav1.LabelSelector{}
	for _, pol := range []networkingv1.NetworkPolicy{
		{ObjectMeta: metav1.ObjectMeta{Name: "default-deny", Namespace: ns}, Spec: networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: networkingv1.NetworkPolicySpec{
			PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Ingress:     []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{{PodSelector: &all}}, Ports: []networkingv1.NetworkPolicyPort{np}}}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "egress", Namespace: ns}, Spec: networkingv1.NetworkPolicySpec{
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeEgress},
			Egress:      []networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{{PodSelector: &all}}, Ports: []networkingv1.NetworkPolicyPort{np}}}}},
	} {
		if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(context.Background(), &pol, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

func policiesLeft(t *testing.T, cs kubernetes.Interface, ns string) []string {
	t.Helper()
	l, err := cs.NetworkingV1().NetworkPolicies(ns).List(context.Background(), metav1.ListOptions{LabelSelector: ManagedByLabel + "=" + ManagedByValue})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range l.Items {
		names = append(names, p.Name)
	}
	return names
}

// In a default-deny namespace that allows only the app's port, the ladder's clients measure
// the app's port from every rung and start no server agent; the agent probes are listed as
// blocked by the policy. With --allow-policy the server starts behind temporary policies that
// select the run's clients and DST, and they are gone at the end. Either way the run deletes
// the temporary policy a killed run left, past its not-after time.
func TestLadderUnderDefaultDeny(t *testing.T) {
	for _, allow := range []bool{false, true} {
		f := ladderCluster(t)
		web, _ := f.cs.CoreV1().Pods("shop").Get(context.Background(), "web-1", metav1.GetOptions{})
		web.Labels = map[string]string{"app": "web"}
		_ = f.cs.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), web, "shop")
		addPolicies(t, f.cs, "shop", 8080, 0)
		addLeftover(t, f.cs, "shop", "netbench-killed-server")
		appOK := events(rttResult("app-tcp-rtt", agent.ProbeTCPRTT), agent.Event{Type: agent.EventExit, Message: "job finished"})
		f.script[RoleServer], f.script[RoleClient] = thenHold(serverReady), then(appOK)
		if allow {
			f.script[RoleClient] = then(events(rttResult("icmp", agent.ProbeICMP), rttResult("tcp-rtt", agent.ProbeTCPRTT),
				rttResult("app-tcp-rtt", agent.ProbeTCPRTT), agent.Event{Type: agent.EventExit, Message: "job finished"}))
		}
		o, out := newTestLadderOptions(f)
		o.Port, o.AllowPolicy, o.Mode = 8080, allow, ModePod
		if err := o.Validate(); err != nil {
			t.Fatal(err)
		}
		if err := o.Run(context.Background()); err != nil {
			t.Fatalf("allow %v: %v", allow, err)
		}
		var r report.LadderReport
		if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
			t.Fatal(err)
		}
		servers := slices.ContainsFunc(f.proxiedBy, func(s string) bool { return strings.HasPrefix(s, "server:") })
		if r.Policy == nil {
			t.Fatal("no policy check in the report")
		}
		if left := policiesLeft(t, f.cs, "shop"); len(left) != 0 {
			t.Errorf("allow %v: policies left: %v", allow, left)
		}
		if !allow {
			if servers || len(r.Policy.Blocked) == 0 || !slices.Contains(r.Policy.Blocked[0].Policies, "shop/default-deny") {
				t.Errorf("server started %v, blocked %+v: want no server, the agent port blocked by shop/default-deny", servers, r.Policy.Blocked)
			}
			for _, rung := range r.Rungs {
				if rung.Skipped == "" && (len(rung.Results) != 1 || len(rung.Results[0].Probes) != 0 || len(rung.Results[0].AppPort) != 1) {
					t.Errorf("rung %s: %+v, want the app port only", rung.Name, rung.Results)
				}
			}
			continue
		}
		if len(r.Policy.Temporary) != 2 || !r.Policy.Removed || len(r.Policy.Blocked) != 0 {
			t.Errorf("policy %+v: want two temporary policies, removed, nothing blocked", r.Policy)
		}
	}
}

// addLeftover stores a temporary policy of a killed run whose not-after time has passed.
func addLeftover(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels:      map[string]string{ManagedByLabel: ManagedByValue, RunIDLabel: "killed", RoleLabel: string(RolePolicy)},
		Annotations: map[string]string{NotAfterAnnotation: "2020-01-01T00:00:00Z"}},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(context.Background(), np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// The matrix in a namespace whose policies block its agents fails before creating anything
// and names the policy; with --allow-policy it measures behind one temporary policy that
// selects its agents only, deleted at the end; where a policy allows a port range, the agents
// move into it and ICMP, which no ported rule allows, is skipped.
func TestMatrixUnderDefaultDeny(t *testing.T) {
	f := newFleetCluster(4, 2)
	addPolicies(t, f.cs, "netbench", 8080, 0)
	_, err := runMatrix(t, f, func(o *MatrixOptions) {})
	if err == nil || !strings.Contains(err.Error(), "netbench/default-deny") || !strings.Contains(err.Error(), "--allow-policy") {
		t.Fatalf("err %v: want the policy named and --allow-policy suggested", err)
	}
	if left := f.remaining(); len(left) != 0 {
		t.Errorf("left %v", left)
	}

	r, err := runMatrix(t, f, func(o *MatrixOptions) { o.AllowPolicy = true })
	if err != nil {
		t.Fatal(err)
	}
	if r.Policy == nil || !slices.Equal(r.Policy.Temporary, []string{"netbench/netbench-run1-mesh"}) || !r.Policy.Removed || r.Probe != "icmp" {
		t.Errorf("policy %+v, probe %s: want one temporary policy, removed, and ICMP measured", r.Policy, r.Probe)
	}
	if left := append(f.remaining(), policiesLeft(t, f.cs, "netbench")...); len(left) != 0 {
		t.Errorf("left %v", left)
	}

	g := newFleetCluster(4, 2)
	addPolicies(t, g.cs, "netbench", 9000, 9100)
	pol, _ := g.cs.NetworkingV1().NetworkPolicies("netbench").Get(context.Background(), "web", metav1.GetOptions{})
	pol.Spec.PodSelector = metav1.LabelSelector{}
	_, _ = g.cs.NetworkingV1().NetworkPolicies("netbench").Update(context.Background(), pol, metav1.UpdateOptions{})
	r, err = runMatrix(t, g, func(o *MatrixOptions) {})
	if err != nil {
		t.Fatal(err)
	}
	if r.Policy.AgentPort != 9100 || r.Probe != agent.ProbeTCPRTT || len(r.Policy.Blocked) != 1 || r.Policy.Blocked[0].Probes[0] != "icmp" {
		t.Errorf("policy %+v, probe %s: want port 9100, ICMP blocked, tcp-rtt measured", r.Policy, r.Probe)
	}
}
