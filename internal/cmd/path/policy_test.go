package path

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// --allow-policy without create or delete on networkpolicies stops the run with one line naming
// the verb and the namespace, before anything is created.
func TestAllowPolicyPermissions(t *testing.T) {
	for _, tc := range []struct {
		name, denied, want string
	}{
		{name: "no create", denied: "create networkpolicies",
			want: `--allow-policy: you may not create networkpolicies.networking.k8s.io in namespace "shop": nothing was started (grant them with the Role netbench-networkpolicies in the README, section RBAC, or run without --allow-policy)`},
		{name: "no delete", denied: "delete networkpolicies",
			want: `--allow-policy: you may not delete networkpolicies.networking.k8s.io in namespace "shop": nothing was started (grant them with the Role netbench-networkpolicies in the README, section RBAC, or run without --allow-policy)`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := fakecluster.New(t, fakecluster.TwoPods()...)
			f.Denied[tc.denied] = true
			fakecluster.AddPolicies(t, f.Clientset, "shop", 8080, 0)
			o, _ := newTestPathOptions(f)
			o.AllowPolicy = true
			err := o.Run(context.Background())
			var pe *access.PermissionError
			if !errors.As(err, &pe) {
				t.Fatalf("err %v: want a PermissionError", err)
			}
			if diff := cmp.Diff(tc.want, err.Error()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if left := fakecluster.PoliciesLeft(t, f.Clientset, "shop"); len(left) != 0 {
				t.Errorf("policies created: %v", left)
			}
			pods, _ := f.Clientset.CoreV1().Pods("shop").List(context.Background(), metav1.ListOptions{})
			for _, p := range pods.Items {
				if len(p.Spec.EphemeralContainers) > 0 {
					t.Errorf("pod %s gained an agent", p.Name)
				}
			}
		})
	}
}
