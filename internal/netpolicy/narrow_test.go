package netpolicy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Narrow keeps the labels the pods share and x's expressions, and refuses pods x does not
// select; whatever it builds selects only pods x selects, among a population that has every
// combination of the labels in play.
func TestNarrow(t *testing.T) {
	v2 := map[string]string{"app": "web", "version": "v2", "pod-template-hash": "abc"}
	v2b := map[string]string{"app": "web", "version": "v2", "pod-template-hash": "def"}
	v1 := map[string]string{"app": "web", "version": "v1", "pod-template-hash": "xyz"}
	notCanary := metav1.LabelSelectorRequirement{Key: "track", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"canary"}}
	withExpr := func(p networkingv1.NetworkPolicy, e ...metav1.LabelSelectorRequirement) networkingv1.NetworkPolicy {
		p.Spec.PodSelector.MatchExpressions = e
		return p
	}
	denyV2 := policy("shop", "deny-v2", map[string]string{"version": "v2"}, ingress, nil, nil)
	denyAll := policy("shop", "deny-all", nil, ingress, nil, nil)
	for _, tc := range []struct {
		name   string
		x      networkingv1.NetworkPolicy
		pods   []map[string]string
		want   metav1.LabelSelector
		wantOK bool
	}{
		{"one pod: its labels", denyV2, []map[string]string{v2}, metav1.LabelSelector{MatchLabels: v2}, true},
		{"two pods: the labels they share", denyV2, []map[string]string{v2, v2b},
			metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "version": "v2"}}, true},
		{"x's expressions kept", withExpr(denyV2, notCanary), []map[string]string{v2},
			metav1.LabelSelector{MatchLabels: v2, MatchExpressions: []metav1.LabelSelectorRequirement{notCanary}}, true},
		{"unlabelled pod under a select-all policy: all of the namespace, which x selects too", denyAll, []map[string]string{nil},
			metav1.LabelSelector{}, true},
		{"unlabelled pod with an expression: the expression only", withExpr(denyAll, notCanary), []map[string]string{nil},
			metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{notCanary}}, true},
		{"a pod x does not select: refused", denyV2, []map[string]string{v2, v1}, metav1.LabelSelector{}, false},
		{"no pods: refused", denyV2, nil, metav1.LabelSelector{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var pods []*corev1.Pod
			for i, l := range tc.pods {
				pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: string(rune('a' + i)), Labels: l}})
			}
			got, ok := Narrow(&tc.x, pods)
			if ok != tc.wantOK {
				t.Fatalf("ok %v, want %v", ok, tc.wantOK)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("selector (-want +got):\n%s", diff)
			}
			if !ok {
				return
			}
			narrowed := networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "shop"}, Spec: networkingv1.NetworkPolicySpec{PodSelector: got}}
			for _, q := range population() {
				if Selects(&narrowed, q) && !Selects(&tc.x, q) {
					t.Errorf("selects %v, which %s does not", q.Labels, tc.x.Name)
				}
			}
			for _, p := range pods {
				if !Selects(&narrowed, p) {
					t.Errorf("does not select %v, one of the pods it is for", p.Labels)
				}
			}
		})
	}
}

// population is a pod for every combination of the labels the cases use (each absent or set
// to one of its values).
func population() []*corev1.Pod {
	values := map[string][]string{"app": {"web", "db"}, "version": {"v1", "v2"}, "pod-template-hash": {"abc", "def", "xyz"}, "track": {"canary", "stable"}}
	out := []map[string]string{{}}
	for k, vs := range values {
		var next []map[string]string
		for _, l := range out {
			next = append(next, l)
			for _, v := range vs {
				m := map[string]string{k: v}
				for lk, lv := range l {
					m[lk] = lv
				}
				next = append(next, m)
			}
		}
		out = next
	}
	var pods []*corev1.Pod
	for _, l := range out {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Labels: l}})
	}
	return pods
}

func TestIsolating(t *testing.T) {
	web := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web", Labels: map[string]string{"app": "web"}}}
	egressRules := []networkingv1.NetworkPolicyEgressRule{{}}
	set := []networkingv1.NetworkPolicy{
		policy("shop", "in-web", map[string]string{"app": "web"}, nil, nil, nil),
		policy("shop", "in-db", map[string]string{"app": "db"}, nil, nil, nil),
		policy("shop", "out-default", nil, nil, nil, egressRules),
		policy("shop", "out-typed", nil, egress, nil, nil),
		policy("other", "in-all", nil, ingress, nil, nil),
	}
	names := func(ps []*networkingv1.NetworkPolicy) []string {
		var out []string
		for _, p := range ps {
			out = append(out, p.Name)
		}
		return out
	}
	if diff := cmp.Diff([]string{"in-web", "out-default"}, names(Isolating(set, web, networkingv1.PolicyTypeIngress))); diff != "" {
		t.Errorf("ingress (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"out-default", "out-typed"}, names(Isolating(set, web, networkingv1.PolicyTypeEgress))); diff != "" {
		t.Errorf("egress (-want +got):\n%s", diff)
	}
}
