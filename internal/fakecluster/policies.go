package fakecluster

import (
	"context"
	"slices"
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/netpolicy"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
)

// AddPolicies stores a default-deny policy (both directions) and those that allow TCP to the
// pods labelled app=web on ports (one NetworkPolicyPort each; a range when endPort is set)
// from every pod of ns, and every pod's egress there.
func AddPolicies(t *testing.T, cs kubernetes.Interface, ns string, port, endPort int32) {
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

func PoliciesLeft(t *testing.T, cs kubernetes.Interface, ns string) []string {
	t.Helper()
	l, err := cs.NetworkingV1().NetworkPolicies(ns).List(context.Background(), metav1.ListOptions{LabelSelector: managedBy})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range l.Items {
		names = append(names, p.Name)
	}
	return names
}

// AddLeftover stores a temporary policy of a killed run whose not-after time has passed.
func AddLeftover(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
		Labels:      map[string]string{"app.kubernetes.io/managed-by": "kubectl-netbench", "netbench.kubectl.dev/run-id": "killed", "netbench.kubectl.dev/role": "network-policy"},
		Annotations: map[string]string{"netbench.kubectl.dev/not-after": "2020-01-01T00:00:00Z"}},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(context.Background(), np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

var (
	IngressOnly = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
	EgressOnly  = []networkingv1.PolicyType{networkingv1.PolicyTypeEgress}
	NotCanary   = metav1.LabelSelectorRequirement{Key: "track", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"canary"}}
)

// AppPod is a running pod of namespace shop with an address and labels.
func AppPod(name, ip string, l map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name, Labels: l},
		Spec:   corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip}}
}

// Netpol is a policy of namespace shop with a selector and types, and no rules.
func Netpol(name string, sel metav1.LabelSelector, types []networkingv1.PolicyType) *networkingv1.NetworkPolicy {
	return &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: sel, PolicyTypes: types}}
}

func MatchLabels(l map[string]string) metav1.LabelSelector {
	return metav1.LabelSelector{MatchLabels: l}
}

// OnlyIsolated fails when a temporary policy selects, in a direction it declares, a pod that no
// policy of before isolates in that direction.
func OnlyIsolated(t *testing.T, before []*networkingv1.NetworkPolicy, temporary []networkingv1.NetworkPolicy, pods []*corev1.Pod) {
	t.Helper()
	var existing []networkingv1.NetworkPolicy
	for _, p := range before {
		existing = append(existing, *p)
	}
	for i := range temporary {
		tp := &temporary[i]
		for _, dir := range tp.Spec.PolicyTypes {
			for _, p := range pods {
				if netpolicy.Selects(tp, p) && len(netpolicy.Isolating(existing, p, dir)) == 0 {
					t.Errorf("%s selects %s for %s, which no policy isolated", tp.Name, p.Name, dir)
				}
			}
		}
	}
}

func IPPeer(cidr string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: cidr}}
}

func APIServerRule(port int) networkingv1.NetworkPolicyIngressRule {
	return networkingv1.NetworkPolicyIngressRule{From: []networkingv1.NetworkPolicyPeer{IPPeer("10.77.0.1/32")}, Ports: netpolicy.Ports(port, corev1.ProtocolTCP)}
}

func TempPolicy(name string, sel metav1.LabelSelector, types []networkingv1.PolicyType, in []networkingv1.NetworkPolicyIngressRule, eg []networkingv1.NetworkPolicyEgressRule) networkingv1.NetworkPolicy {
	return networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: networkingv1.NetworkPolicySpec{PodSelector: sel, PolicyTypes: types, Ingress: in, Egress: eg}}
}

func UpdatePolicy(cs *fake.Clientset, name string, mod func(*networkingv1.NetworkPolicy)) error {
	np, err := cs.NetworkingV1().NetworkPolicies("shop").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	mod(np)
	_, err = cs.NetworkingV1().NetworkPolicies("shop").Update(context.Background(), np, metav1.UpdateOptions{})
	return err
}

// ManagedPolicies are the namespace/name of the temporary policies in shop.
func ManagedPolicies(t *testing.T, cs *fake.Clientset) []string {
	t.Helper()
	var out []string
	for _, n := range PoliciesLeft(t, cs, "shop") {
		out = append(out, "shop/"+n)
	}
	return out
}

// PolicyNames are the policies' names, sorted.
func PolicyNames(nps []networkingv1.NetworkPolicy) []string {
	var out []string
	for _, p := range nps {
		out = append(out, p.Name)
	}
	slices.Sort(out)
	return out
}

var (
	ServerReady = Events(agent.Event{Type: agent.EventReady, Port: 7000})
	ClientOK    = Events(
		agent.Event{Type: agent.EventProgress, Probe: "icmp"},
		RttResult("icmp", agent.ProbeICMP), RttResult("tcp-rtt", agent.ProbeTCPRTT),
		agent.Event{Type: agent.EventExit, Message: "job finished"})
)

// AgentPods lists the temporary agent pods left in the fake cluster.
func AgentPods(t *testing.T, f *Cluster) []string {
	t.Helper()
	pods, err := f.Clientset.CoreV1().Pods("shop").List(context.Background(), metav1.ListOptions{LabelSelector: managedBy})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	return names
}

// PolicyCluster is a fake cluster with namespace shop, the API server's EndpointSlice, the pods
// and the policies.
func PolicyCluster(pods []*corev1.Pod, policies ...*networkingv1.NetworkPolicy) *fake.Clientset {
	objs := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{corev1.LabelMetadataName: "shop"}}},
		&discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes",
			Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}}, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.77.0.1"}}}},
	}
	for _, p := range pods {
		objs = append(objs, p)
	}
	for _, p := range policies {
		objs = append(objs, p)
	}
	return fake.NewClientset(objs...)
}

// managedBy selects what any run of the plugin created (the fixtures spell the session's labels
// out: this package is imported by the session's own tests).
const managedBy = "app.kubernetes.io/managed-by=kubectl-netbench"
