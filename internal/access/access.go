package access

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Permission is one verb on one resource a run needs.
type Permission struct {
	Verb, Resource, Subresource string
	Group                       string // "" for the core group
}

func (p Permission) String() string {
	switch {
	case p.Subresource != "":
		return p.Verb + " " + p.Resource + "/" + p.Subresource
	case p.Group != "":
		return p.Verb + " " + p.Resource + "." + p.Group
	}
	return p.Verb + " " + p.Resource
}

// NeededPermissions lists what a run needs in the agents' namespaces: every verb it uses, and
// nothing more (an ephemeral-only Role must do for ephemeral runs); podMode: the agents are temporary pods.
func NeededPermissions(podMode bool) []Permission {
	// pods/proxy: runners are handed their job, servers renewed and stopped, through it.
	need := []Permission{{"get", "pods", "", ""}, {"list", "pods", "", ""}, {"watch", "pods", "", ""}, {"get", "pods", "log", ""}, {"create", "pods", "proxy", ""}}
	if podMode {
		need = append(need, Permission{"create", "pods", "", ""}, Permission{"delete", "pods", "", ""})
	} else {
		need = append(need, Permission{"patch", "pods", "ephemeralcontainers", ""})
	}
	return need
}

// ServicePermissions are what measuring a Service's zone routing adds: its endpoints, and a
// temporary Service of the run's own.
var ServicePermissions = []Permission{
	{"get", "services", "", ""}, {"list", "services", "", ""}, {"create", "services", "", ""}, {"delete", "services", "", ""},
	{"list", "endpointslices", "", "discovery.k8s.io"},
}

// WayInPermissions are what path here adds in DST's namespace: a temporary Service (its UDP
// port added once the TCP port has its node port) and the EndpointSlice of its one endpoint.
var WayInPermissions = []Permission{
	{"get", "services", "", ""}, {"list", "services", "", ""}, {"create", "services", "", ""}, {"update", "services", "", ""}, {"delete", "services", "", ""},
	{"create", "endpointslices", "", "discovery.k8s.io"}, {"delete", "endpointslices", "", "discovery.k8s.io"},
}

// policyPermissions are what --allow-policy adds in every namespace it may create a temporary
// NetworkPolicy in: list (the policies are read again just before creating), create, and
// delete — without it a policy created could not be removed at the end.
var policyPermissions = []Permission{
	{"list", "networkpolicies", "", "networking.k8s.io"},
	{"create", "networkpolicies", "", "networking.k8s.io"},
	{"delete", "networkpolicies", "", "networking.k8s.io"},
}

// CheckPolicyPermissions checks, before anything is created, that --allow-policy may create and
// delete NetworkPolicies in each namespace it may create them in.
func CheckPolicyPermissions(ctx context.Context, client kubernetes.Interface, namespaces ...string) error {
	err := CheckPermissions(ctx, client, namespaces, policyPermissions)
	var pe *PermissionError
	if errors.As(err, &pe) {
		pe.Flag = "--allow-policy"
		pe.Hint = "grant them with the Role netbench-networkpolicies in the README, section RBAC, or run without --allow-policy"
	}
	return err
}

// PermissionError names the verbs a user lacks, before anything was created.
type PermissionError struct {
	Namespace string
	Missing   []Permission
	// Flag is the option that needs them, Hint how to get them ("": the README's Roles).
	Flag, Hint string
}

func (e *PermissionError) Error() string {
	var names []string
	for _, p := range e.Missing {
		names = append(names, p.String())
	}
	hint := cmp.Or(e.Hint, "grant them with the Role in the README, section RBAC")
	msg := fmt.Sprintf("you may not %s in namespace %q: nothing was started (%s)", strings.Join(names, ", "), e.Namespace, hint)
	if e.Flag != "" {
		return e.Flag + ": " + msg
	}
	return msg
}

// CheckPermissions asks the API server (SelfSubjectAccessReview) whether the user may do each
// of need in each namespace. A cluster that cannot answer is not an error: the run goes on and
// the API server refuses later if it must.
func CheckPermissions(ctx context.Context, client kubernetes.Interface, namespaces []string, need []Permission) error {
	seen := map[string]bool{}
	for _, ns := range namespaces {
		if seen[ns] {
			continue
		}
		seen[ns] = true
		var missing []Permission
		for _, p := range need {
			ok, err := allowed(ctx, client, ns, "", p)
			if err != nil {
				return nil
			}
			if !ok {
				missing = append(missing, p)
			}
		}
		if len(missing) > 0 {
			return &PermissionError{Namespace: ns, Missing: missing}
		}
	}
	return nil
}

// allowed asks the API server (SelfSubjectAccessReview) whether the user may do p in ns (on the
// object named name, when not "").
func allowed(ctx context.Context, client kubernetes.Interface, ns, name string, p Permission) (bool, error) {
	r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: ns, Name: name, Verb: p.Verb, Resource: p.Resource, Subresource: p.Subresource, Group: p.Group,
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		return false, fmt.Errorf("asking whether you may %s in namespace %q: %w", p, ns, err)
	}
	return r.Status.Allowed, nil
}

// MatrixPermissions are what a matrix needs in its namespace: a DaemonSet of its own, a watch
// on its pods, and their proxy (jobs are posted through it).
var MatrixPermissions = []Permission{
	{"create", "daemonsets", "", "apps"}, {"delete", "daemonsets", "", "apps"}, {"list", "daemonsets", "", "apps"},
	{"list", "pods", "", ""}, {"watch", "pods", "", ""}, {"create", "pods", "proxy", ""},
}
