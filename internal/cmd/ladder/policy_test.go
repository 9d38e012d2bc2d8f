package ladder

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"
	"github.com/kubectl-netbench/kubectl-netbench/internal/policyplan"

	"github.com/google/go-cmp/cmp"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/netpolicy"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// In a default-deny namespace that allows only the app's port, the ladder's clients measure
// the app's port from every rung and start no server agent; the agent probes are listed as
// blocked by the policy. With --allow-policy the server starts behind temporary policies that
// select the run's clients and DST, and they are gone at the end. Either way the run deletes
// the temporary policy a killed run left, past its not-after time.
func TestLadderUnderDefaultDeny(t *testing.T) {
	for _, allow := range []bool{false, true} {
		f := ladderCluster(t)
		web, _ := f.Clientset.CoreV1().Pods("shop").Get(context.Background(), "web-1", metav1.GetOptions{})
		web.Labels = map[string]string{"app": "web"}
		_ = f.Clientset.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), web, "shop")
		fakecluster.AddPolicies(t, f.Clientset, "shop", 8080, 0)
		fakecluster.AddLeftover(t, f.Clientset, "shop", "netbench-killed-server")
		appOK := fakecluster.Events(fakecluster.RttResult("app-tcp-rtt", agent.ProbeTCPRTT), agent.Event{Type: agent.EventExit, Message: "job finished"})
		f.Script[string(session.RoleServer)], f.Script[string(session.RoleClient)] = fakecluster.ThenHold(fakecluster.ServerReady), fakecluster.Then(appOK)
		if allow {
			f.Script[string(session.RoleClient)] = fakecluster.Then(fakecluster.Events(fakecluster.RttResult("icmp", agent.ProbeICMP), fakecluster.RttResult("tcp-rtt", agent.ProbeTCPRTT),
				fakecluster.RttResult("app-tcp-rtt", agent.ProbeTCPRTT), agent.Event{Type: agent.EventExit, Message: "job finished"}))
		}
		o, out := newTestLadderOptions(f)
		o.Port, o.AllowPolicy, o.Mode = 8080, allow, session.ModePod
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
		servers := slices.ContainsFunc(f.ProxiedBy, func(s string) bool { return strings.HasPrefix(s, "server:") })
		if r.Policy == nil {
			t.Fatal("no policy check in the report")
		}
		if left := fakecluster.PoliciesLeft(t, f.Clientset, "shop"); len(left) != 0 {
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

// The endpoint agents of a Service over isolated and un-isolated pods: one temporary policy
// per policy that isolates some of the measured endpoints, selecting the labels they share
// with its expressions; the un-isolated endpoints are never selected; the clients' egress
// names every measured endpoint by its address.
func TestSpreadAllowanceOnlyIsolatedEndpoints(t *testing.T) {
	v1 := fakecluster.AppPod("web-v1", "10.0.1.1", map[string]string{"app": "web", "version": "v1", "pod-template-hash": "a"})
	v2a := fakecluster.AppPod("web-v2-a", "10.0.1.2", map[string]string{"app": "web", "version": "v2", "pod-template-hash": "b"})
	v2b := fakecluster.AppPod("web-v2-b", "10.0.1.3", map[string]string{"app": "web", "version": "v2", "pod-template-hash": "c"})
	v3 := fakecluster.AppPod("web-v3", "10.0.1.4", map[string]string{"app": "web", "version": "v3", "pod-template-hash": "d"})
	other := fakecluster.AppPod("web-v2-other", "10.0.1.9", map[string]string{"app": "web", "version": "v2", "track": "canary"})
	endpoints := []*corev1.Pod{v1, v2a, v2b, v3}
	denyV2 := fakecluster.Netpol("deny-v2", metav1.LabelSelector{MatchLabels: map[string]string{"version": "v2"}, MatchExpressions: []metav1.LabelSelectorRequirement{fakecluster.NotCanary}}, fakecluster.IngressOnly)
	denyV3 := fakecluster.Netpol("deny-v3", fakecluster.MatchLabels(map[string]string{"version": "v3"}), fakecluster.IngressOnly)
	denyEgress := fakecluster.Netpol("deny-egress", metav1.LabelSelector{}, fakecluster.EgressOnly)
	const port = 31000
	s := runSession(nil, session.ModeEphemeral)
	fromClients := []networkingv1.NetworkPolicyIngressRule{{From: []networkingv1.NetworkPolicyPeer{session.PeerOf("shop", s.Labels(session.RoleClient))}, Ports: netpolicy.Ports(port, corev1.ProtocolTCP)}, fakecluster.APIServerRule(port)}
	v2Sel := metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "version": "v2"}, MatchExpressions: []metav1.LabelSelectorRequirement{fakecluster.NotCanary}}
	for _, tc := range []struct {
		name     string
		policies []*networkingv1.NetworkPolicy
		want     []networkingv1.NetworkPolicy
	}{
		{name: "nothing isolated: no policy", policies: nil},
		{name: "v2 isolated, v1 and v3 not: the v2 endpoints only", policies: []*networkingv1.NetworkPolicy{denyV2},
			want: []networkingv1.NetworkPolicy{fakecluster.TempPolicy("netbench-run1-endpoints", v2Sel, fakecluster.IngressOnly, fromClients, nil)}},
		{name: "v2 and v3 isolated by different policies, clients' egress isolated", policies: []*networkingv1.NetworkPolicy{denyV2, denyV3, denyEgress},
			want: []networkingv1.NetworkPolicy{
				fakecluster.TempPolicy("netbench-run1-endpoints-1", v2Sel, fakecluster.IngressOnly, fromClients, nil),
				fakecluster.TempPolicy("netbench-run1-endpoints-2", fakecluster.MatchLabels(v3.Labels), fakecluster.IngressOnly, fromClients, nil),
				fakecluster.TempPolicy("netbench-run1-client-endpoints", fakecluster.MatchLabels(s.Labels(session.RoleClient)), fakecluster.EgressOnly, nil,
					[]networkingv1.NetworkPolicyEgressRule{{To: []networkingv1.NetworkPolicyPeer{fakecluster.IPPeer("10.0.1.1/32"), fakecluster.IPPeer("10.0.1.2/32"), fakecluster.IPPeer("10.0.1.3/32"), fakecluster.IPPeer("10.0.1.4/32")},
						Ports: netpolicy.Ports(port, corev1.ProtocolTCP)}}),
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, o, _ := shopCluster(t, append(endpoints, other), tc.policies...)
			s := runSession(cs, session.ModeEphemeral)
			sc := o.ReadPolicies(context.Background(), "shop")
			dst := &session.Target{Namespace: "shop", Pod: v1}
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}}
			r := &ladderRun{o: &LadderOptions{}, sess: s, dst: dst, sr: &serviceRun{svc: svc, pods: endpoints, agentPort: port}}
			cli := ladderClient(s, dst).Pod
			ops, err := r.spreadAllowance(sc, cli)
			if err != nil {
				t.Fatal(err)
			}
			got := policyplan.PoliciesOf(ops)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("temporary policies (-want +got):\n%s", diff)
			}
			fakecluster.OnlyIsolated(t, tc.policies, got, append(endpoints, other, cli))
		})
	}
}

// The ladder checks the Service's namespace too when it is not DST's: the endpoint agents'
// verbs, and with --allow-policy the policies'.
func TestLadderChecksTheServiceNamespace(t *testing.T) {
	for _, tc := range []struct {
		name, denied string
		allow        bool
		want         string
	}{
		{name: "endpoint agents", denied: "patch pods/ephemeralcontainers", want: `you may not patch pods/ephemeralcontainers in namespace "back"`},
		{name: "policies", denied: "delete networkpolicies", allow: true, want: `--allow-policy: you may not delete networkpolicies.networking.k8s.io in namespace "back"`},
		{name: "policies without --allow-policy", denied: "delete networkpolicies"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fakecluster.New(t)
			f.Denied[tc.denied] = true
			o, _ := newTestLadderOptions(f)
			o.AllowPolicy = tc.allow
			svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "back", Name: "web"}, Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}}}
			r := &ladderRun{o: o, sess: runSession(f.Clientset, session.ModeEphemeral), dst: &session.Target{Namespace: "shop", Pod: fakecluster.NewPod()}, sr: &serviceRun{svc: svc}}
			err := r.checkServiceNamespace(context.Background())
			got := ""
			if err != nil {
				got = err.Error()
			}
			if !strings.HasPrefix(got, tc.want) || (tc.want == "") != (err == nil) {
				t.Errorf("err %q, want it to start with %q", got, tc.want)
			}
		})
	}
}

// shopCluster is the fake cluster of fakecluster.PolicyCluster with options that use it.
func shopCluster(t *testing.T, pods []*corev1.Pod, policies ...*networkingv1.NetworkPolicy) (*fake.Clientset, *cmdutil.CommonOptions, *strings.Builder) {
	t.Helper()
	cs := fakecluster.PolicyCluster(pods, policies...)
	errOut := &strings.Builder{}
	o := &cmdutil.CommonOptions{Client: cs, Namespace: "shop"}
	o.ErrOut = errOut
	return cs, o, errOut
}

// runSession is the session of run1.
func runSession(cs *fake.Clientset, mode string) *session.Session {
	return session.NewSession(cs, "run1", "token", "img", mode, time.Second)
}

// A probe of the app's port that fails on a rung is said in the report's warnings and the round's
// failed list, the rest is measured and printed, and the run's error wraps ErrProbeFailed (exit 1).
func TestLadderAppPortFailureFailsTheRun(t *testing.T) {
	f := ladderCluster(t)
	f.Script[string(session.RoleServer)] = fakecluster.ThenHold(fakecluster.ServerReady)
	f.Script[string(session.RoleClient)] = fakecluster.Then(fakecluster.Events(fakecluster.RttResult("icmp", agent.ProbeICMP), fakecluster.RttResult("tcp-rtt", agent.ProbeTCPRTT),
		agent.Event{Type: agent.EventError, Probe: "app-tcp-rtt", Message: "connection refused", Reason: agent.ReasonRefused}, agent.Event{Type: agent.EventExit, Message: "job finished"}))
	o, out := newTestLadderOptions(f)
	o.Port, o.Mode = 8080, session.ModePod
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	err := o.Run(context.Background())
	if !errors.Is(err, ErrProbeFailed) || !strings.Contains(err.Error(), "rung same-node, round 1: app-tcp-rtt: nothing accepts connections on shop/web-1 port 8080") {
		t.Fatalf("error %v: want ErrProbeFailed naming the first rung's failure", err)
	}
	var r report.LadderReport
	if jerr := json.Unmarshal([]byte(out.String()), &r); jerr != nil {
		t.Fatalf("no report printed before the error (%v):\n%s", jerr, out)
	}
	measured := 0
	for _, rung := range r.Rungs {
		if rung.Skipped != "" {
			continue
		}
		measured++
		said := slices.ContainsFunc(r.Warnings, func(w string) bool { return strings.HasPrefix(w, "rung "+rung.Name+", round 1: app-tcp-rtt") })
		if len(rung.Results) != 1 || len(rung.Results[0].Probes) != 2 || len(rung.Results[0].Failed) != 1 || !said {
			t.Errorf("rung %s: %+v, warnings %q: want its agent probes measured, the failure listed and said", rung.Name, rung.Results, r.Warnings)
		}
	}
	if measured != 2 {
		t.Errorf("%d rungs measured, want 2 (same-node, cross-zone)", measured)
	}
}
