package cmdutil

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// Every command reads its namespaces' policies before it starts: the temporary policies of
// earlier runs that are over — past their not-after time, or every agent of the run in the
// namespace ended — are deleted then, and said so; those of runs with an agent starting or
// running, without a deadline and no agent seen, or not this tool's are kept; without
// permission to delete, one line names them and they stay in force.
func TestReadPoliciesSweepsExpiredLeftovers(t *testing.T) {
	now := time.Now()
	leftover := func(name string, managed bool, notAfter string) *networkingv1.NetworkPolicy {
		np := fakecluster.Netpol(name, fakecluster.MatchLabels(map[string]string{"app": "web"}), fakecluster.IngressOnly)
		if managed {
			run, _, _ := strings.Cut(strings.TrimPrefix(name, "netbench-"), "-")
			np.Labels = map[string]string{session.ManagedByLabel: session.ManagedByValue, session.RunIDLabel: run, session.RoleLabel: string(session.RolePolicy)}
		}
		if notAfter != "" {
			np.Annotations = map[string]string{session.NotAfterAnnotation: notAfter}
		}
		return np
	}
	policies := []*networkingv1.NetworkPolicy{
		leftover("netbench-old-server", true, now.Add(-time.Hour).UTC().Format(time.RFC3339)),
		leftover("netbench-old-endpoints", true, now.Add(-time.Second).UTC().Format(time.RFC3339)),
		leftover("netbench-live-server", true, now.Add(time.Hour).UTC().Format(time.RFC3339)),
		leftover("netbench-no-deadline", true, ""),
		leftover("netbench-killed-server", true, now.Add(time.Hour).UTC().Format(time.RFC3339)),
		leftover("netbench-going-server", true, now.Add(time.Hour).UTC().Format(time.RFC3339)),
		leftover("netbench-starting-server", true, now.Add(time.Hour).UTC().Format(time.RFC3339)),
		leftover("netbench-forged-server", true, now.Add(time.Hour).UTC().Format(time.RFC3339)),
		leftover("netbench-podalive-server", true, now.Add(time.Hour).UTC().Format(time.RFC3339)),
		leftover("users-own", false, now.Add(-time.Hour).UTC().Format(time.RFC3339)),
	}
	// Run "killed": its server (ephemeral) and its client pod have ended. Run "going": its client
	// pod has ended, its server still runs. Run "starting": its server has no status yet. Run
	// "forged": only an ended pod with its labels, which anyone may create. Run "podalive": its
	// ephemeral server has ended, a temporary pod of it still runs.
	ec := func(name string) corev1.EphemeralContainer {
		return corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: name}}
	}
	terminated := corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	web := fakecluster.NewPod(func(p *corev1.Pod) {
		p.Spec.EphemeralContainers = []corev1.EphemeralContainer{ec("netbench-killed-server"), ec("netbench-going-server"), ec("netbench-starting-server"), ec("netbench-podalive-server")}
		p.Status.EphemeralContainerStatuses = []corev1.ContainerStatus{{Name: "netbench-killed-server", State: terminated}, {Name: "netbench-going-server", State: running},
			{Name: "netbench-podalive-server", State: terminated}}
	})
	client := func(run string) *corev1.Pod {
		return fakecluster.NewPod(func(p *corev1.Pod) {
			p.Name, p.Labels, p.Status.Phase = "netbench-"+run+"-client", map[string]string{session.ManagedByLabel: session.ManagedByValue, session.RunIDLabel: run}, corev1.PodSucceeded
		})
	}
	podalive := client("podalive")
	podalive.Status.Phase = corev1.PodRunning
	pods := []*corev1.Pod{web, client("killed"), client("going"), client("forged"), podalive}
	for _, tc := range []struct {
		name       string
		forbidden  bool
		wantKept   []string
		wantStderr []string
	}{
		{name: "may delete", wantKept: []string{"netbench-forged-server", "netbench-going-server", "netbench-live-server", "netbench-no-deadline", "netbench-podalive-server",
			"netbench-starting-server", "users-own"},
			wantStderr: []string{"NetworkPolicy: deleted shop/netbench-killed-server left by an earlier run",
				"NetworkPolicy: deleted shop/netbench-old-endpoints left by an earlier run", "NetworkPolicy: deleted shop/netbench-old-server left by an earlier run"}},
		{name: "may not delete", forbidden: true,
			wantKept: []string{"netbench-forged-server", "netbench-going-server", "netbench-killed-server", "netbench-live-server", "netbench-no-deadline", "netbench-old-endpoints",
				"netbench-old-server", "netbench-podalive-server", "netbench-starting-server", "users-own"},
			wantStderr: []string{"NetworkPolicy: netbench-killed-server, netbench-old-endpoints, netbench-old-server in namespace shop, left by earlier runs that are over, were not deleted"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, o, errOut := policyCluster(t, pods, policies...)
			if tc.forbidden {
				cs.PrependReactor("delete", "networkpolicies", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "networking.k8s.io", Resource: "networkpolicies"}, "x", errors.New("RBAC"))
				})
			}
			sc := o.ReadPolicies(context.Background(), "shop")
			if diff := cmp.Diff(tc.wantKept, fakecluster.PolicyNames(sc.Policies)); diff != "" {
				t.Errorf("policies in the scope (-want +got):\n%s", diff)
			}
			live, _ := cs.NetworkingV1().NetworkPolicies("shop").List(context.Background(), metav1.ListOptions{})
			if diff := cmp.Diff(tc.wantKept, fakecluster.PolicyNames(live.Items)); diff != "" {
				t.Errorf("policies left in the namespace (-want +got):\n%s", diff)
			}
			if !tc.forbidden && !strings.Contains(errOut.String(), "netbench-killed-server left by an earlier run (") ||
				!tc.forbidden && !strings.Contains(errOut.String(), " old, every agent of its run has ended)") {
				t.Errorf("stderr does not say why the killed run's policy went:\n%s", errOut)
			}
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(errOut.String()), "\n") {
				if i := strings.Index(l, " ("); i > 0 {
					l = l[:i]
				}
				lines = append(lines, l)
			}
			slices.Sort(lines)
			if diff := cmp.Diff(tc.wantStderr, lines); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// policyCluster is a fake cluster holding pods and policies, the API server at 10.77.0.1, and
// options reading it as a run does (stderr kept).
func policyCluster(t *testing.T, pods []*corev1.Pod, policies ...*networkingv1.NetworkPolicy) (*fake.Clientset, *CommonOptions, *strings.Builder) {
	t.Helper()
	cs := fakecluster.PolicyCluster(pods, policies...)
	errOut := &strings.Builder{}
	o := &CommonOptions{Client: cs, Namespace: "shop"}
	o.ErrOut = errOut
	return cs, o, errOut
}
