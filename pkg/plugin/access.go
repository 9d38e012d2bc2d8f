package plugin

import (
	"context"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// permission is one verb on one resource a run needs.
type permission struct {
	Verb, Resource, Subresource string
	Group                       string // "" for the core group
}

func (p permission) String() string {
	switch {
	case p.Subresource != "":
		return p.Verb + " " + p.Resource + "/" + p.Subresource
	case p.Group != "":
		return p.Verb + " " + p.Resource + "." + p.Group
	}
	return p.Verb + " " + p.Resource
}

// neededPermissions lists what a run needs in the agents' namespaces: every verb it uses, and
// nothing more (an ephemeral-only Role must do for ephemeral runs).
func neededPermissions(mode string) []permission {
	// pods/proxy: runners are handed their job, servers renewed and stopped, through it.
	need := []permission{{"get", "pods", "", ""}, {"list", "pods", "", ""}, {"watch", "pods", "", ""}, {"get", "pods", "log", ""}, {"create", "pods", "proxy", ""}}
	if mode == ModePod {
		need = append(need, permission{"create", "pods", "", ""}, permission{"delete", "pods", "", ""})
	} else {
		need = append(need, permission{"patch", "pods", "ephemeralcontainers", ""})
	}
	return need
}

// servicePermissions are what measuring a Service's zone routing adds: its endpoints, and a
// temporary Service of the run's own.
var servicePermissions = []permission{
	{"get", "services", "", ""}, {"list", "services", "", ""}, {"create", "services", "", ""}, {"delete", "services", "", ""},
	{"list", "endpointslices", "", "discovery.k8s.io"},
}

// PermissionError names the verbs a user lacks, before anything was created.
type PermissionError struct {
	Namespace string
	Missing   []permission
}

func (e *PermissionError) Error() string {
	var names []string
	for _, p := range e.Missing {
		names = append(names, p.String())
	}
	return fmt.Sprintf("you may not %s in namespace %q: nothing was started (grant them with the Role in the README, section RBAC)",
		strings.Join(names, ", "), e.Namespace)
}

// checkPermissions asks the API server (SelfSubjectAccessReview) whether the user may do each
// of need in each namespace. A cluster that cannot answer is not an error: the run goes on and
// the API server refuses later if it must.
func checkPermissions(ctx context.Context, client kubernetes.Interface, namespaces []string, need []permission) error {
	seen := map[string]bool{}
	for _, ns := range namespaces {
		if seen[ns] {
			continue
		}
		seen[ns] = true
		var missing []permission
		for _, p := range need {
			r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
				Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: p.Verb, Resource: p.Resource, Subresource: p.Subresource, Group: p.Group,
				}},
			}, metav1.CreateOptions{})
			if err != nil {
				return nil
			}
			if !r.Status.Allowed {
				missing = append(missing, p)
			}
		}
		if len(missing) > 0 {
			return &PermissionError{Namespace: ns, Missing: missing}
		}
	}
	return nil
}
