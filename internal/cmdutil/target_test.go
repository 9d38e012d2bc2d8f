package cmdutil

import (
	"strings"

	"github.com/google/go-cmp/cmp"

	"errors"
	"fmt"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A refusal keeps the API server's error in its chain, under the actionable line.
func TestForbiddenKeepsTheAPIError(t *testing.T) {
	api := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web", errors.New("no"))
	err := fmt.Errorf("listing: %w", access.Forbidden(api))
	var fe *access.ForbiddenError
	var st *apierrors.StatusError
	if !apierrors.IsForbidden(err) || !errors.As(err, &fe) || !errors.As(err, &st) || st != api {
		t.Fatalf("%v: want the StatusError and the ForbiddenError in the chain", err)
	}
	if want := `listing: pods "web" is forbidden: no (grant it with the Role in the README, section RBAC)`; err.Error() != want {
		t.Errorf("message %q, want %q", err.Error(), want)
	}
}

func TestSplitTarget(t *testing.T) {
	tests := []struct {
		arg, wantNS, wantRes, wantErr string
	}{
		{arg: "web-1", wantNS: "def", wantRes: "pods/web-1"},
		{arg: "deploy/web", wantNS: "def", wantRes: "deploy/web"},
		{arg: "svc/web", wantNS: "def", wantRes: "svc/web"},
		{arg: "shop/sts/db", wantNS: "shop", wantRes: "sts/db"},
		{arg: "", wantErr: "want POD, TYPE/NAME or NAMESPACE/TYPE/NAME"},
		{arg: "a/b/c/d", wantErr: "want POD, TYPE/NAME or NAMESPACE/TYPE/NAME"},
		{arg: "deploy/", wantErr: "want TYPE/NAME"},
		{arg: "shop//db", wantErr: "want NAMESPACE/TYPE/NAME"},
	}
	for _, tc := range tests {
		t.Run(tc.arg, func(t *testing.T) {
			ns, res, err := SplitTarget(tc.arg, "def")
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{tc.wantNS, tc.wantRes}, []string{ns, res}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestTargetCheck(t *testing.T) {
	tests := []struct {
		name          string
		pod           *corev1.Pod
		container     string
		hostNet       bool
		wantContainer string
		wantErr       string
	}{
		{name: "running pod, first container", pod: fakecluster.NewPod(), wantContainer: "app"},
		{name: "named container", pod: fakecluster.NewPod(), container: "sidecar", wantContainer: "sidecar"},
		{name: "default-container annotation", pod: fakecluster.NewPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{"kubectl.kubernetes.io/default-container": "sidecar"}
		}), wantContainer: "sidecar"},
		{name: "no such container", pod: fakecluster.NewPod(), container: "db", wantErr: `pod shop/web-1 has no container "db"`},
		{name: "pending", pod: fakecluster.NewPod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodPending }),
			wantErr: "pod shop/web-1 is Pending, not Running: pick a running pod (kubectl get pods -n shop)"},
		{name: "host network", pod: fakecluster.NewPod(func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
			wantErr: "uses the host network: it would measure the node's network, not a pod path (pass --allow-host-network to do so anyway)"},
		{name: "host network allowed", pod: fakecluster.NewPod(func(p *corev1.Pod) { p.Spec.HostNetwork = true }), hostNet: true, wantContainer: "app"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tg := &session.Target{Pod: tc.pod, Namespace: tc.pod.Namespace}
			err := CheckTarget(tg, tc.container, tc.hostNet)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tg.Container != tc.wantContainer {
				t.Errorf("container %q, want %q", tg.Container, tc.wantContainer)
			}
		})
	}
}
