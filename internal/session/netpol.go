package session

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// ErrNoPodIP: --allow-policy names an existing pod in a temporary policy by its addresses, and
// the pod has none yet.
var ErrNoPodIP = errors.New("the pod has no IP address to allow")

// Annotations of a temporary NetworkPolicy, besides NotAfterAnnotation (its deadline, after
// which any run of the plugin or `kubectl netbench cleanup` deletes it).
const (
	// IsolatedByAnnotation names, per direction, the existing policy that already isolates
	// every pod the temporary policy selects.
	IsolatedByAnnotation = "netbench.kubectl.dev/isolated-by"
	// DescriptionAnnotation says in words what the policy is, for `kubectl describe`.
	DescriptionAnnotation = "kubernetes.io/description"
)

// CreatePolicy creates a temporary NetworkPolicy for the run, labelled as the agents are and
// annotated with the time after which anyone may delete it; Close deletes it after the agents.
func (s *Session) CreatePolicy(ctx context.Context, np *networkingv1.NetworkPolicy, lifetime time.Duration) error {
	if err := s.begin(); err != nil {
		return err
	}
	defer s.creating.Done()
	notAfter := s.Now().Add(lifetime).UTC().Format(time.RFC3339)
	np.Labels = s.Labels(RolePolicy)
	np.Annotations = maps.Clone(np.Annotations)
	if np.Annotations == nil {
		np.Annotations = map[string]string{}
	}
	np.Annotations[NotAfterAnnotation] = notAfter
	np.Annotations[DescriptionAnnotation] = fmt.Sprintf("temporary policy of kubectl netbench run %s (--allow-policy): lets its agents through for the run; "+
		"it selects only pods the policies in %s already isolate; deleted at the end of the run, or by any later run or `kubectl netbench cleanup` after %s",
		s.RunID, IsolatedByAnnotation, notAfter)
	created, err := s.Client.NetworkingV1().NetworkPolicies(np.Namespace).Create(ctx, np, metav1.CreateOptions{DryRun: s.dryRunAll()})
	if err == nil && s.DryRun {
		s.plan(VerbCreate, "a temporary NetworkPolicy (--allow-policy)", created)
		return nil
	}
	if mayExist(ctx, err) && !s.DryRun {
		s.mu.Lock()
		s.Policies = append(s.Policies, np)
		s.mu.Unlock()
	}
	if err != nil {
		return access.Refusal(ctx, s.Client, err, access.Refused{Doing: fmt.Sprintf("creating the temporary NetworkPolicy %s/%s", np.Namespace, np.Name),
			Need: access.Permission{Verb: "create", Resource: "networkpolicies", Group: "networking.k8s.io"}, Namespace: np.Namespace})
	}
	s.mu.Lock()
	s.Policies = append(s.Policies, created)
	s.mu.Unlock()
	return nil
}

// deletePolicies deletes the run's NetworkPolicies (after its agents: stopping them goes through
// the ports the policies open).
func (s *Session) deletePolicies(ctx context.Context, policies []*networkingv1.NetworkPolicy) []error {
	var errs []error
	for _, np := range policies {
		err := s.Client.NetworkingV1().NetworkPolicies(np.Namespace).Delete(ctx, np.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting the temporary NetworkPolicy %s/%s (delete it with: kubectl delete networkpolicy -n %s %s): %w",
				np.Namespace, np.Name, np.Namespace, np.Name, err))
		}
	}
	return errs
}

// isRunPod says whether p is a temporary pod of this run: only those carry the run's id.
func (s *Session) isRunPod(p *corev1.Pod) bool {
	return p.Labels[RunIDLabel] == s.RunID && p.Labels[ManagedByLabel] == ManagedByValue
}

// Peers is how a temporary policy names the other end of a flow, exactly: the run's own pods
// by the run's labels (nothing else carries its id), an existing pod by its own addresses
// (ipBlock /32 or /128): its labels may be shared with other pods, or it may have none.
func (s *Session) Peers(pods ...*corev1.Pod) ([]networkingv1.NetworkPolicyPeer, error) {
	var out []networkingv1.NetworkPolicyPeer
	for _, p := range pods {
		if s.isRunPod(p) {
			out = append(out, PeerOf(p.Namespace, p.Labels))
			continue
		}
		ips := podIPs(p)
		if len(ips) == 0 {
			return nil, fmt.Errorf("--allow-policy: %s/%s: %w", p.Namespace, p.Name, ErrNoPodIP)
		}
		for _, ip := range ips {
			out = append(out, networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: netip.PrefixFrom(ip, ip.BitLen()).String()}})
		}
	}
	return out, nil
}

// podIPs are a pod's addresses (both families on a dual-stack cluster).
func podIPs(p *corev1.Pod) []netip.Addr {
	var out []netip.Addr
	add := func(s string) {
		if ip, err := netip.ParseAddr(s); err == nil && !slices.Contains(out, ip.Unmap()) {
			out = append(out, ip.Unmap())
		}
	}
	add(p.Status.PodIP)
	for _, ip := range p.Status.PodIPs {
		add(ip.IP)
	}
	return out
}

// PeerOf is the pods of namespace ns that carry labels l.
func PeerOf(ns string, l map[string]string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{corev1.LabelMetadataName: ns}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: l},
	}
}

// APIServerAddrs are the addresses of the API server's own EndpointSlice (default/kubernetes,
// which only the API server writes, read by name: a slice another writer labelled for the
// Service is not taken), or none.
func APIServerAddrs(ctx context.Context, client kubernetes.Interface) []netip.Addr {
	slice, err := client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, e := range slice.Endpoints {
		for _, a := range e.Addresses {
			if ip, err := netip.ParseAddr(a); err == nil {
				out = append(out, ip)
			}
		}
	}
	return out
}
