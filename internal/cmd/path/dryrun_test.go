package path

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil/cmdtest"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// --dry-run -o yaml sends the server and the client with dryRun=All, prints both and creates
// nothing: ephemeral containers as patches of the two pods, temporary pods as pods. What an
// earlier run left (an agent pod ended long ago, an expired temporary policy) is not deleted
// either: DryRunObjects fails on any delete.
func TestPathDryRun(t *testing.T) {
	for mode, want := range map[string][]string{
		session.ModeEphemeral: {
			"patch pods/ephemeralcontainers Pod shop/web-1",
			"patch pods/ephemeralcontainers Pod shop/client-1",
		},
		session.ModePod: {
			"create Pod shop/netbench-run1-server",
			"create Pod shop/netbench-run1-client",
		},
	} {
		t.Run(mode, func(t *testing.T) {
			left := fakecluster.NewPod(func(p *corev1.Pod) {
				p.Name, p.Labels = "netbench-old-client", map[string]string{session.ManagedByLabel: session.ManagedByValue}
				p.CreationTimestamp, p.Status.Phase = metav1.NewTime(time.Now().Add(-time.Hour)), corev1.PodSucceeded
			})
			f := fakecluster.New(t, append(fakecluster.TwoPods(), left)...)
			fakecluster.AddLeftover(t, f.Clientset, "shop", "netbench-killed-allow")
			f.Clientset.ClearActions()
			o, out := newTestPathOptions(f)
			o.Mode, o.DryRun, o.Output = mode, true, "yaml"
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := o.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, cmdtest.DryRunObjects(t, f, out.String())); diff != "" {
				t.Errorf("objects (-want +got):\n%s\n%s", diff, out)
			}
		})
	}
}
