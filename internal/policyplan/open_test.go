package policyplan

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/netpolicy"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// --allow-policy for a pair of agents builds temporary policies that select only pods already
// isolated in the direction they declare: none for a pod no policy isolates, the measured
// pod's labels with the isolating policy's expressions otherwise (a sibling with one more label
// that the policy leaves alone is not selected), the run's labels for its own pods; the peers
// are existing pods' addresses, never labels (an unlabelled pod included).
func TestAllowanceSelectsOnlyIsolatedPods(t *testing.T) {
	client := fakecluster.AppPod("client", "10.0.0.4", map[string]string{"app": "client"})
	lonely := fakecluster.AppPod("lonely", "10.0.0.9", nil)
	webV1 := fakecluster.AppPod("web-v1", "10.0.0.5", map[string]string{"app": "web", "version": "v1"})
	webV2 := fakecluster.AppPod("web-v2", "10.0.0.6", map[string]string{"app": "web", "version": "v2"})
	canary := fakecluster.AppPod("web-v2-canary", "10.0.0.7", map[string]string{"app": "web", "version": "v2", "track": "canary"})
	pods := []*corev1.Pod{client, lonely, webV1, webV2, canary}
	denyV2 := fakecluster.Netpol("deny-v2", fakecluster.MatchLabels(map[string]string{"version": "v2"}), fakecluster.IngressOnly)
	denyStable := fakecluster.Netpol("deny-stable", metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}, MatchExpressions: []metav1.LabelSelectorRequirement{fakecluster.NotCanary}}, fakecluster.IngressOnly)
	denyEgress := fakecluster.Netpol("deny-egress", metav1.LabelSelector{}, fakecluster.EgressOnly)
	denyAll := fakecluster.Netpol("default-deny", metav1.LabelSelector{}, []networkingv1.PolicyType{networkingv1.PolicyTypeIngress, networkingv1.PolicyTypeEgress})
	clientIn := fakecluster.Netpol("client-in", metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"client"}}}}, fakecluster.IngressOnly)
	s := testSession(nil, session.ModePod)
	for _, tc := range []struct {
		name     string
		mode     string
		src, dst *corev1.Pod
		policies []*networkingv1.NetworkPolicy
		want     func(srv, cli int) []networkingv1.NetworkPolicy
	}{
		{name: "un-isolated target: no policy", mode: session.ModeEphemeral, src: client, dst: webV1, policies: []*networkingv1.NetworkPolicy{denyV2},
			want: func(int, int) []networkingv1.NetworkPolicy { return nil }},
		{name: "isolated target: its labels and the policy's expressions, not the canary sibling", mode: session.ModeEphemeral, src: client, dst: webV2,
			policies: []*networkingv1.NetworkPolicy{denyStable},
			want: func(srv, _ int) []networkingv1.NetworkPolicy {
				return []networkingv1.NetworkPolicy{fakecluster.TempPolicy("netbench-run1-server",
					metav1.LabelSelector{MatchLabels: webV2.Labels, MatchExpressions: []metav1.LabelSelectorRequirement{fakecluster.NotCanary}}, fakecluster.IngressOnly,
					[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{fakecluster.IPPeer("10.0.0.4/32")}, Ports: netpolicy.Ports(srv, corev1.ProtocolTCP, corev1.ProtocolUDP)}, fakecluster.APIServerRule(srv)}, nil)}
			}},
		{name: "unlabelled client: peers by address, its egress under a select-all policy", mode: session.ModeEphemeral, src: lonely, dst: webV2,
			policies: []*networkingv1.NetworkPolicy{denyV2, denyEgress},
			want: func(srv, _ int) []networkingv1.NetworkPolicy {
				return []networkingv1.NetworkPolicy{
					fakecluster.TempPolicy("netbench-run1-server", fakecluster.MatchLabels(webV2.Labels), fakecluster.IngressOnly,
						[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{fakecluster.IPPeer("10.0.0.9/32")}, Ports: netpolicy.Ports(srv, corev1.ProtocolTCP, corev1.ProtocolUDP)}, fakecluster.APIServerRule(srv)}, nil),
					fakecluster.TempPolicy("netbench-run1-client", metav1.LabelSelector{}, fakecluster.EgressOnly, nil,
						[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{fakecluster.IPPeer("10.0.0.6/32")}, Ports: netpolicy.Ports(srv, corev1.ProtocolTCP, corev1.ProtocolUDP)}}),
				}
			}},
		{name: "client isolated each way by a different policy: one policy per direction", mode: session.ModeEphemeral, src: client, dst: webV1,
			policies: []*networkingv1.NetworkPolicy{denyEgress, clientIn},
			want: func(srv, cli int) []networkingv1.NetworkPolicy {
				return []networkingv1.NetworkPolicy{
					fakecluster.TempPolicy("netbench-run1-client-1", fakecluster.MatchLabels(client.Labels), fakecluster.EgressOnly, nil,
						[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{fakecluster.IPPeer("10.0.0.5/32")}, Ports: netpolicy.Ports(srv, corev1.ProtocolTCP, corev1.ProtocolUDP)}}),
					fakecluster.TempPolicy("netbench-run1-client-2", metav1.LabelSelector{MatchLabels: client.Labels, MatchExpressions: clientIn.Spec.PodSelector.MatchExpressions}, fakecluster.IngressOnly,
						[]networkingv1.NetworkPolicyIngressRule{fakecluster.APIServerRule(cli)}, nil),
				}
			}},
		{name: "temporary agent pods: the run's labels, everything between them", mode: session.ModePod, src: client, dst: webV2,
			policies: []*networkingv1.NetworkPolicy{denyAll},
			want: func(srv, cli int) []networkingv1.NetworkPolicy {
				return []networkingv1.NetworkPolicy{
					fakecluster.TempPolicy("netbench-run1-server", fakecluster.MatchLabels(s.Labels(session.RoleServer)), fakecluster.IngressOnly,
						[]networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{session.PeerOf("shop", s.Labels(session.RoleClient))}}, fakecluster.APIServerRule(srv)}, nil),
					fakecluster.TempPolicy("netbench-run1-client", fakecluster.MatchLabels(s.Labels(session.RoleClient)), []networkingv1.PolicyType{networkingv1.PolicyTypeEgress, networkingv1.PolicyTypeIngress},
						[]networkingv1.NetworkPolicyIngressRule{fakecluster.APIServerRule(cli)},
						[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{session.PeerOf("shop", s.Labels(session.RoleServer))}}}),
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, o, _ := policyCluster(t, pods, tc.policies...)
			s := testSession(cs, tc.mode)
			sc := o.ReadPolicies(context.Background(), "shop")
			al := NewAllowance(s, sc, &session.Target{Namespace: "shop", Pod: tc.src}, &session.Target{Namespace: "shop", Pod: tc.dst})
			ops, err := al.Policies()
			if err != nil {
				t.Fatal(err)
			}
			got := PoliciesOf(ops)
			if diff := cmp.Diff(tc.want(al.SrvPort, al.CliPort), got); diff != "" {
				t.Errorf("temporary policies (-want +got):\n%s", diff)
			}
			fakecluster.OnlyIsolated(t, tc.policies, got, append(pods, policyPod(s, al.src, session.RoleClient), policyPod(s, al.dst, session.RoleServer)))
		})
	}
}

// Just before creating, the policies are read again: a temporary policy whose isolating policy
// was deleted, or changed its selector or its types since the run read it, is not created (it
// could isolate pods), and the run says why; otherwise it is created with its deadline and the
// policy it rests on, and the plan sees the policies as they are now.
func TestCreatePoliciesRereadsIsolatingPolicy(t *testing.T) {
	web := fakecluster.AppPod("web-v2", "10.0.0.6", map[string]string{"app": "web", "version": "v2"})
	client := fakecluster.AppPod("client", "10.0.0.4", map[string]string{"app": "client"})
	for _, tc := range []struct {
		name     string
		change   func(cs *fake.Clientset) error
		want     []string
		wantNote string
	}{
		{name: "unchanged: created", change: func(*fake.Clientset) error { return nil }, want: []string{"shop/netbench-run1-server"}},
		{name: "another policy deleted: created", change: func(cs *fake.Clientset) error {
			return cs.NetworkingV1().NetworkPolicies("shop").Delete(context.Background(), "unrelated", metav1.DeleteOptions{})
		}, want: []string{"shop/netbench-run1-server"}},
		{name: "deleted: not created", change: func(cs *fake.Clientset) error {
			return cs.NetworkingV1().NetworkPolicies("shop").Delete(context.Background(), "deny-v2", metav1.DeleteOptions{})
		}, wantNote: "NetworkPolicy shop/deny-v2, which isolated shop/web-v2 (ingress) when the run started, was deleted since"},
		{name: "selector changed: not created", change: func(cs *fake.Clientset) error {
			return fakecluster.UpdatePolicy(cs, "deny-v2", func(np *networkingv1.NetworkPolicy) {
				np.Spec.PodSelector = fakecluster.MatchLabels(map[string]string{"app": "web"})
			})
		}, wantNote: "changed its podSelector since"},
		{name: "now egress only: not created", change: func(cs *fake.Clientset) error {
			return fakecluster.UpdatePolicy(cs, "deny-v2", func(np *networkingv1.NetworkPolicy) { np.Spec.PolicyTypes = fakecluster.EgressOnly })
		}, wantNote: "no longer isolates in that direction"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, o, errOut := policyCluster(t, []*corev1.Pod{web, client},
				fakecluster.Netpol("deny-v2", fakecluster.MatchLabels(map[string]string{"version": "v2"}), fakecluster.IngressOnly), fakecluster.Netpol("unrelated", fakecluster.MatchLabels(map[string]string{"app": "db"}), fakecluster.IngressOnly))
			s := testSession(cs, session.ModeEphemeral)
			sc := o.ReadPolicies(context.Background(), "shop")
			ops, err := NewAllowance(s, sc, &session.Target{Namespace: "shop", Pod: client}, &session.Target{Namespace: "shop", Pod: web}).Policies()
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.change(cs); err != nil {
				t.Fatal(err)
			}
			got, err := sc.Create(context.Background(), s, ops, time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("created (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, fakecluster.ManagedPolicies(t, cs)); diff != "" {
				t.Errorf("in the cluster (-want +got):\n%s", diff)
			}
			if tc.wantNote != "" && (!strings.Contains(errOut.String(), "did not create shop/netbench-run1-server: ") || !strings.Contains(errOut.String(), tc.wantNote)) {
				t.Errorf("stderr %q: want the reason %q", errOut, tc.wantNote)
			}
			if tc.wantNote == "" {
				if errOut.Len() > 0 {
					t.Errorf("stderr %q: want nothing", errOut)
				}
				np, _ := cs.NetworkingV1().NetworkPolicies("shop").Get(context.Background(), "netbench-run1-server", metav1.GetOptions{})
				if np.Annotations[session.IsolatedByAnnotation] != "ingress: shop/deny-v2" || np.Annotations[session.NotAfterAnnotation] == "" {
					t.Errorf("annotations %v: want the isolating policy and the deadline", np.Annotations)
				}
			}
			live, _ := cs.NetworkingV1().NetworkPolicies("shop").List(context.Background(), metav1.ListOptions{})
			if len(sc.Policies) != len(live.Items) {
				t.Errorf("the scope holds %d policies, the namespace %d", len(sc.Policies), len(live.Items))
			}
		})
	}
}

// The other end of a rule: the run's own pods by the run's labels, an existing pod by each of
// its addresses (never by labels it may share, or lack), and a pod with no address is an error.
func TestSessionPeers(t *testing.T) {
	s := testSession(nil, session.ModeEphemeral)
	runPod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "netbench-run1-client", Labels: s.Labels(session.RoleClient)}}
	otherRun := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "netbench-run2-client", Labels: map[string]string{session.ManagedByLabel: session.ManagedByValue, session.RunIDLabel: "run2"}},
		Status: corev1.PodStatus{PodIP: "10.0.0.8"}}
	dual := fakecluster.AppPod("dual", "10.0.0.5", map[string]string{"app": "web"})
	dual.Status.PodIPs = []corev1.PodIP{{IP: "10.0.0.5"}, {IP: "fd00::5"}}
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		want    []networkingv1.NetworkPolicyPeer
		wantErr error
	}{
		{name: "the run's pod: its labels", pod: runPod, want: []networkingv1.NetworkPolicyPeer{session.PeerOf("shop", s.Labels(session.RoleClient))}},
		{name: "unlabelled pod: its address, not every pod of the namespace", pod: fakecluster.AppPod("lonely", "10.0.0.9", nil), want: []networkingv1.NetworkPolicyPeer{fakecluster.IPPeer("10.0.0.9/32")}},
		{name: "labelled pod: its address, not its siblings", pod: fakecluster.AppPod("web", "10.0.0.6", map[string]string{"app": "web"}), want: []networkingv1.NetworkPolicyPeer{fakecluster.IPPeer("10.0.0.6/32")}},
		{name: "dual-stack pod: both addresses", pod: dual, want: []networkingv1.NetworkPolicyPeer{fakecluster.IPPeer("10.0.0.5/32"), fakecluster.IPPeer("fd00::5/128")}},
		{name: "another run's pod: its address", pod: otherRun, want: []networkingv1.NetworkPolicyPeer{fakecluster.IPPeer("10.0.0.8/32")}},
		{name: "no address yet", pod: fakecluster.AppPod("pending", "", nil), wantErr: session.ErrNoPodIP},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Peers(tc.pod)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("err %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("peers (-want +got):\n%s", diff)
			}
		})
	}
}

func testSession(cs *fake.Clientset, mode string) *session.Session {
	return session.NewSession(cs, "run1", "token", "img", mode, time.Second)
}

// nps are the policies the openings would create.

// policyCluster is fakecluster.PolicyCluster with what reads its scope; errOut records what the
// scope says.
func policyCluster(t *testing.T, pods []*corev1.Pod, policies ...*networkingv1.NetworkPolicy) (*fake.Clientset, *reader, *strings.Builder) {
	t.Helper()
	cs := fakecluster.PolicyCluster(pods, policies...)
	errOut := &strings.Builder{}
	return cs, &reader{cs: cs, errOut: errOut}, errOut
}

// reader reads a scope as the commands do, without sweeping.
type reader struct {
	cs     *fake.Clientset
	errOut *strings.Builder
}

func (r *reader) ReadPolicies(ctx context.Context, namespaces ...string) *Scope {
	return Read(ctx, r.cs, r.errOut, nil, namespaces...)
}
