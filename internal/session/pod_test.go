package session

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// Temporary agent pods and the matrix DaemonSet's ask for unprivileged ICMP in their own network
// namespace (net.ipv4.ping_group_range), which a runtime may not grant; a host-network agent
// cannot (the node's namespace keeps the node's sysctls, and the API server refuses the sysctl).
func TestTemporaryAgentsMayPing(t *testing.T) {
	target := &Target{Namespace: "shop", Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"}, Spec: corev1.PodSpec{NodeName: "n1"}}}
	for _, tc := range []struct {
		name      string
		placement *Placement
		want      bool
	}{
		{"on the target's node", nil, true},
		{"placed on a node", &Placement{Node: "n2"}, true},
		{"host network", &Placement{Node: "n2", HostNetwork: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := createdPod(t, target, tc.placement, nil)
			if got := pingRange(p.Spec.SecurityContext); got != tc.want {
				t.Errorf("pod security context %+v: ping_group_range %q set: %v, want %v", p.Spec.SecurityContext, PingGroupRange, got, tc.want)
			}
		})
	}
	f := &Fleet{s: NewSession(fake.NewClientset(), "run1", "token", "img", ModePod, time.Minute), Name: "netbench-run1-mesh",
		Spec: FleetSpec{Namespace: "netbench", Nodes: []string{"n1"}, Port: 24930}}
	if sc := f.daemonSet(nil).Spec.Template.Spec.SecurityContext; !pingRange(sc) {
		t.Errorf("the matrix DaemonSet's pods: security context %+v, want ping_group_range %q", sc, PingGroupRange)
	}
}

func pingRange(sc *corev1.PodSecurityContext) bool {
	if sc == nil {
		return false
	}
	for _, s := range sc.Sysctls {
		if s.Name == "net.ipv4.ping_group_range" && s.Value == PingGroupRange {
			return true
		}
	}
	return false
}

// A temporary agent pod on its target's node tolerates what the target does and any NoSchedule
// taint (a cordon, or a taint added after the target started), no other NoExecute taint; one placed on a node tolerates what its placement says; both, and the matrix
// DaemonSet's pods, pull with the run's --image-pull-secret.
func TestTemporaryAgentsTolerationsAndPullSecrets(t *testing.T) {
	gpu := corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}
	spot := corev1.Toleration{Key: "spot", Operator: corev1.TolerationOpEqual, Value: "yes"}
	target := &Target{Namespace: "shop", Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "shop"},
		Spec: corev1.PodSpec{NodeName: "n1", Tolerations: []corev1.Toleration{gpu}}}}
	secrets := []corev1.LocalObjectReference{{Name: "regcred"}}
	for _, tc := range []struct {
		name      string
		placement *Placement
		want      []corev1.Toleration
	}{
		{"on the target's node", nil, []corev1.Toleration{gpu, {Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}},
		{"placed on a node", &Placement{Node: "n2", Tolerations: []corev1.Toleration{spot}}, []corev1.Toleration{spot}},
		{"placed, no toleration", &Placement{Node: "n2"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := createdPod(t, target, tc.placement, secrets)
			if d := cmp.Diff(tc.want, p.Spec.Tolerations); d != "" {
				t.Errorf("tolerations (-want +got):\n%s", d)
			}
			if d := cmp.Diff(secrets, p.Spec.ImagePullSecrets); d != "" {
				t.Errorf("imagePullSecrets (-want +got):\n%s", d)
			}
		})
	}
	s := NewSession(fake.NewClientset(), "run1", "token", "img", ModePod, time.Minute)
	s.PullSecrets = secrets
	f := &Fleet{s: s, Name: "netbench-run1-mesh", Spec: FleetSpec{Namespace: "netbench", Nodes: []string{"n1"}, Port: 24930}}
	if d := cmp.Diff(secrets, f.daemonSet(nil).Spec.Template.Spec.ImagePullSecrets); d != "" {
		t.Errorf("the DaemonSet's imagePullSecrets (-want +got):\n%s", d)
	}
}

// createdPod is the temporary client agent pod a session with pull secrets creates for target
// with placement, as the API server stored it.
func createdPod(t *testing.T, target *Target, placement *Placement, secrets []corev1.LocalObjectReference) *corev1.Pod {
	t.Helper()
	cs := fake.NewClientset()
	s := NewSession(cs, "run1", "token", "img", ModePod, time.Minute)
	s.PullSecrets = secrets
	a := &Agent{s: s, Spec: AgentSpec{Role: RoleClient, Target: target, Lifetime: time.Minute, Placement: placement}}
	if err := s.createPod(context.Background(), a, nil); err != nil {
		t.Fatal(err)
	}
	p, err := cs.CoreV1().Pods(target.Namespace).Get(context.Background(), a.Pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}
