package policyplan

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/netpolicy"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/internal/text"
)

// A temporary policy of --allow-policy may only open. A NetworkPolicy that selects a pod for a
// direction isolates it there, so a temporary policy must select, in each direction it
// declares, only pods that an existing policy X already isolates in that direction. It is
// built so: its namespace is X's, its policyTypes only that direction, and its podSelector
// netpolicy.Narrow(X, pods) — the labels the pods it is for all carry, with X's own
// matchExpressions — which selects only pods X selects (the proof is at Narrow). Such a policy
// can only add allowed flows to pods that were isolated anyway. A pod no policy isolates in a
// direction gets no temporary policy for it: it needs none. X is never a temporary policy
// (this run's or another's: those go away), and X is read again just before creating: if it
// was deleted, or its podSelector or policyTypes changed, the temporary policy is not created.
//
// The other end of each rule is exact too (Session.peers): the run's own pods by the run's
// labels, an existing pod by its own addresses, the API server by its addresses.
//
// What this cannot cover: X deleted or narrowed while the temporary policy exists leaves it
// selecting pods X no longer isolates, until the run deletes it or, after a killed plugin, its
// not-after time passes and the next run (or `kubectl netbench cleanup`) deletes it.

// Opening is one temporary policy to create, with the policy that justifies each direction.
type Opening struct {
	np    *networkingv1.NetworkPolicy
	basis []basis
	// pods are the pods it is for (namespace/name), for the messages.
	pods []string
}

// basis is an existing policy X that isolates, in direction dir, every pod an opening selects.
type basis struct {
	dir networkingv1.PolicyType
	x   *networkingv1.NetworkPolicy // as read
}

// basisOf is the policy that justifies selecting pod in direction dir: the first by name of
// those that isolate it there, temporary policies of this tool aside; nil when none does.
func (sc *Scope) basisOf(pod *corev1.Pod, dir networkingv1.PolicyType) *networkingv1.NetworkPolicy {
	var best *networkingv1.NetworkPolicy
	for _, p := range netpolicy.Isolating(sc.Policies, pod, dir) {
		if p.Labels[session.ManagedByLabel] == session.ManagedByValue {
			continue
		}
		if best == nil || p.Name < best.Name {
			best = p
		}
	}
	if best == nil {
		return nil
	}
	return best.DeepCopy()
}

// openings are the temporary policies (not yet named, without rules) that select pods for
// direction dir: one per existing policy that isolates some of them, selecting only pods that
// policy isolates; pods no policy isolates in dir are left out.
func (sc *Scope) openings(pods []*corev1.Pod, dir networkingv1.PolicyType) []*Opening {
	var keys []string
	groups, bases := map[string][]*corev1.Pod{}, map[string]*networkingv1.NetworkPolicy{}
	for _, p := range pods {
		x := sc.basisOf(p, dir)
		if x == nil {
			continue
		}
		key := x.Namespace + "/" + x.Name
		if _, ok := bases[key]; !ok {
			keys, bases[key] = append(keys, key), x
		}
		groups[key] = append(groups[key], p)
	}
	var out []*Opening
	for _, key := range keys {
		x := bases[key]
		sel, ok := netpolicy.Narrow(x, groups[key])
		if !ok {
			continue // x selects each of them: cannot happen
		}
		op := &Opening{np: &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: x.Namespace},
			Spec: networkingv1.NetworkPolicySpec{PodSelector: sel, PolicyTypes: []networkingv1.PolicyType{dir}}},
			basis: []basis{{dir: dir, x: x}}}
		for _, p := range groups[key] {
			op.pods = append(op.pods, p.Namespace+"/"+p.Name)
		}
		out = append(out, op)
	}
	return out
}

// IngressOpenings are the openings for pods' ingress, with rules.
func (sc *Scope) IngressOpenings(pods []*corev1.Pod, rules []networkingv1.NetworkPolicyIngressRule) []*Opening {
	ops := sc.openings(pods, networkingv1.PolicyTypeIngress)
	for _, op := range ops {
		op.np.Spec.Ingress = slices.Clone(rules)
	}
	return ops
}

// EgressOpenings are the openings for pods' egress, with rules.
func (sc *Scope) EgressOpenings(pods []*corev1.Pod, rules []networkingv1.NetworkPolicyEgressRule) []*Opening {
	ops := sc.openings(pods, networkingv1.PolicyTypeEgress)
	for _, op := range ops {
		op.np.Spec.Egress = slices.Clone(rules)
	}
	return ops
}

// Finalize merges the openings of one side that select the same pods (one policy for both
// directions) and names them: base, or base-1, base-2 … when there are several.
func Finalize(base string, ops []*Opening) []*Opening {
	var out []*Opening
	for _, op := range ops {
		if i := slices.IndexFunc(out, op.mergeable); i >= 0 {
			out[i].merge(op)
			continue
		}
		out = append(out, op)
	}
	for i, op := range out {
		op.np.Name = base
		if len(out) > 1 {
			op.np.Name = fmt.Sprintf("%s-%d", base, i+1)
		}
	}
	return out
}

// mergeable says whether op and other can be one policy: same namespace and selector, and
// no direction in common.
func (op *Opening) mergeable(other *Opening) bool {
	return other.np.Namespace == op.np.Namespace && equality.Semantic.DeepEqual(other.np.Spec.PodSelector, op.np.Spec.PodSelector) &&
		!slices.ContainsFunc(op.np.Spec.PolicyTypes, func(t networkingv1.PolicyType) bool { return slices.Contains(other.np.Spec.PolicyTypes, t) })
}

// merge adds other's direction, rules and basis to op.
func (op *Opening) merge(other *Opening) {
	op.np.Spec.PolicyTypes = append(op.np.Spec.PolicyTypes, other.np.Spec.PolicyTypes...)
	op.np.Spec.Ingress = append(op.np.Spec.Ingress, other.np.Spec.Ingress...)
	op.np.Spec.Egress = append(op.np.Spec.Egress, other.np.Spec.Egress...)
	op.basis = append(op.basis, other.basis...)
	for _, p := range other.pods {
		if !slices.Contains(op.pods, p) {
			op.pods = append(op.pods, p)
		}
	}
}

// isolatedBy is the IsolatedByAnnotation's value: "ingress: ns/x, egress: ns/y".
func (op *Opening) isolatedBy() string {
	var parts []string
	for _, b := range op.basis {
		parts = append(parts, strings.ToLower(string(b.dir))+": "+b.x.Namespace+"/"+b.x.Name)
	}
	return strings.Join(parts, ", ")
}

// stale says why the opening may no longer be created, judged by its namespace's policies as
// read again (fresh): a policy it rests on was deleted, or changed its podSelector or no longer
// isolates in that direction. "" when it may.
func (op *Opening) stale(fresh []networkingv1.NetworkPolicy) string {
	for _, b := range op.basis {
		i := slices.IndexFunc(fresh, func(p networkingv1.NetworkPolicy) bool { return p.Name == b.x.Name })
		what := fmt.Sprintf("NetworkPolicy %s/%s, which isolated %s (%s) when the run started,", b.x.Namespace, b.x.Name,
			strings.Join(op.pods, ", "), strings.ToLower(string(b.dir)))
		switch {
		case i < 0:
			return what + " was deleted since"
		case !equality.Semantic.DeepEqual(fresh[i].Spec.PodSelector, b.x.Spec.PodSelector):
			return what + " changed its podSelector since"
		case !netpolicy.Isolates(&fresh[i], b.dir):
			return what + " no longer isolates in that direction"
		}
	}
	return ""
}

// Create creates temporary policies of the session. Just before, it reads each of
// their namespaces' policies again and leaves out, saying why, an opening whose isolating
// policy is gone or changed (it could then select a pod no policy isolates). The scope then
// holds the policies as read again and those created, so that the plan sees them. It returns
// the names created (namespace/name), also those made before an error.
func (sc *Scope) Create(ctx context.Context, s *session.Session, ops []*Opening, lifetime time.Duration) ([]string, error) {
	var names []string
	for _, ns := range openingNamespaces(ops) {
		fresh, err := sc.client.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return names, fmt.Errorf("--allow-policy: reading the NetworkPolicies of namespace %q again before creating temporary ones: %w", ns, err)
		}
		sc.replace(ns, fresh.Items)
		for _, op := range ops {
			if op.np.Namespace != ns {
				continue
			}
			if why := op.stale(fresh.Items); why != "" {
				fmt.Fprintf(sc.log, "NetworkPolicy: --allow-policy did not create %s/%s: %s (a policy selecting those pods could isolate them)\n", ns, op.np.Name, why)
				continue
			}
			op.np.Annotations = map[string]string{session.IsolatedByAnnotation: op.isolatedBy()}
			if err := s.CreatePolicy(ctx, op.np, lifetime); err != nil {
				return names, err
			}
			sc.Policies = append(sc.Policies, *op.np)
			names = append(names, ns+"/"+op.np.Name)
		}
	}
	return names, nil
}

func openingNamespaces(ops []*Opening) []string {
	var out []string
	for _, op := range ops {
		out = append(out, op.np.Namespace)
	}
	return text.Unique(out)
}

// replace puts the policies of namespace ns as read again in place of those read before.
func (sc *Scope) replace(ns string, fresh []networkingv1.NetworkPolicy) {
	sc.Policies = append(slices.DeleteFunc(sc.Policies, func(p networkingv1.NetworkPolicy) bool { return p.Namespace == ns }), fresh...)
}

// PoliciesOf lists the policies the openings would create.
func PoliciesOf(ops []*Opening) []networkingv1.NetworkPolicy {
	var out []networkingv1.NetworkPolicy
	for _, op := range ops {
		out = append(out, *op.np)
	}
	return out
}
