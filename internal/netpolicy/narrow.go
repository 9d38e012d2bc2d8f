package netpolicy

import (
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Isolates says whether p isolates the pods it selects in direction dir: its policyTypes, or,
// when it has none, the API's default (Ingress always, Egress when it has egress rules).
func Isolates(p *networkingv1.NetworkPolicy, dir networkingv1.PolicyType) bool {
	return hasType(p, dir)
}

// Selects says whether p's podSelector selects pod (a pod of p's namespace).
func Selects(p *networkingv1.NetworkPolicy, pod *corev1.Pod) bool {
	return pod != nil && p.Namespace == pod.Namespace && selects(&p.Spec.PodSelector, pod.Labels)
}

// Isolating are the policies that isolate pod in direction dir, in the order given.
func Isolating(policies []networkingv1.NetworkPolicy, pod *corev1.Pod, dir networkingv1.PolicyType) []*networkingv1.NetworkPolicy {
	var out []*networkingv1.NetworkPolicy
	for i := range policies {
		if p := &policies[i]; Isolates(p, dir) && Selects(p, pod) {
			out = append(out, p)
		}
	}
	return out
}

// Narrow is a podSelector that selects every one of pods and only pods that x selects: the
// labels all of pods carry, with x's own matchExpressions. ok is false when x does not select
// every one of pods (there is then no such selector to build from them).
//
// Why it selects only pods x selects: x selects each of pods, so x's matchLabels are among the
// labels each of them carries, hence among the labels they all carry (the selector's
// matchLabels). A pod q the selector selects carries those labels, so it carries x's
// matchLabels, and it meets x's matchExpressions, which the selector keeps as they are: x
// selects q. A policy in x's namespace with this selector and a policyType that x isolates in
// therefore selects, in that direction, only pods that x already isolates there. Policies
// only add to what an isolated pod may do, so such a policy can open a flow but never close one
// — as long as x keeps its selector and policyTypes.
func Narrow(x *networkingv1.NetworkPolicy, pods []*corev1.Pod) (sel metav1.LabelSelector, ok bool) {
	if len(pods) == 0 {
		return metav1.LabelSelector{}, false
	}
	common := maps.Clone(pods[0].Labels)
	for _, p := range pods {
		if !Selects(x, p) {
			return metav1.LabelSelector{}, false
		}
		maps.DeleteFunc(common, func(k, v string) bool { w, has := p.Labels[k]; return !has || w != v })
	}
	if len(common) > 0 {
		sel.MatchLabels = common
	}
	for _, e := range x.Spec.PodSelector.MatchExpressions {
		e.Values = slices.Clone(e.Values)
		sel.MatchExpressions = append(sel.MatchExpressions, e)
	}
	return sel, true
}
