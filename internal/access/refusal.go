package access

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	psapi "k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
)

// Refused is what the run tried when the API server refused: the verb it needed and, for a pod
// (created, or with an ephemeral container added), the pod as admission saw it.
type Refused struct {
	Doing           string
	Need            Permission
	Namespace, Name string // the object's namespace and name ("" for one being created)
	Pod             *corev1.Pod
}

// Refusal names who refused: the authorizer (asked again, with a SelfSubjectAccessReview), the
// namespace's enforced Pod Security level (the admission's own checks, run here on the same pod
// at the level and version the namespace's labels enforce), or another admission step (a
// ResourceQuota, a LimitRange, a policy webhook) — or admission at large, with the API server's
// words, where Pod Security cannot be told apart here (the namespace unreadable, no label, a
// webhook that changed the pod). The API error stays in the chain.
func Refusal(ctx context.Context, client kubernetes.Interface, err error, r Refused) error {
	var st apierrors.APIStatus
	switch {
	case err == nil:
		return nil
	case !errors.As(err, &st) || !(apierrors.IsForbidden(err) || apierrors.IsInvalid(err) || apierrors.IsBadRequest(err)):
		return fmt.Errorf("%s: %w", r.Doing, err)
	case apierrors.IsForbidden(err) && !mayDo(ctx, client, r.Namespace, r.Name, r.Need):
		return Forbidden(err)
	case apierrors.IsForbidden(err) && r.Pod != nil && podSecurityForbids(ctx, client, r.Pod):
		return fmt.Errorf("%s: %w: %w", r.Doing, ErrPodSecurity, err)
	default:
		return fmt.Errorf("%s: %w: %w", r.Doing, ErrAdmission, err)
	}
}

// mayDo asks the authorizer whether the user may do p in ns; a cluster that cannot answer counts
// as a no, so that a refusal it cannot place is shown as a missing permission.
func mayDo(ctx context.Context, client kubernetes.Interface, ns, name string, p Permission) bool {
	ok, err := allowed(ctx, client, ns, name, p)
	return ok && err == nil
}

// podSecurityForbids says whether the Pod Security level namespace pod.Namespace enforces
// forbids pod; false when the namespace cannot be read.
func podSecurityForbids(ctx context.Context, client kubernetes.Interface, pod *corev1.Pod) bool {
	n, err := client.CoreV1().Namespaces().Get(ctx, pod.Namespace, metav1.GetOptions{})
	if err != nil {
		return false
	}
	// The API server's default is privileged (nothing forbidden) where a namespace has no label.
	p, _ := psapi.PolicyToEvaluate(n.Labels, psapi.Policy{Enforce: psapi.LevelVersion{Level: psapi.LevelPrivileged, Version: psapi.LatestVersion()}})
	eval, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		return false
	}
	return !policy.AggregateCheckResults(eval.EvaluatePod(p.Enforce, &pod.ObjectMeta, &pod.Spec)).Allowed
}

// Errors a caller may act on with errors.Is: the API server refused a run's object.
var (
	ErrPodSecurity = errors.New("the namespace's Pod Security level forbids it")
	ErrAdmission   = errors.New("admission refused the agent")
)
