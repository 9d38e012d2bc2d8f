package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil/cmdtest"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// `--dry-run -o yaml` on every command, in both agent modes, with a policy that isolates web
// (--allow-policy) and a Service (ladder svc/web): each prints the objects the run would create
// or patch — the agents as ephemeral containers or pods, the Service copy, the temporary
// NetworkPolicy, the matrix's DaemonSet — and creates none of them. Each object printed is
// sent again on its own with dryRun=All (kubectl create, or patch of the pod's
// ephemeralcontainers subresource) and admitted.
func TestDryRunPrintsEveryObjectAndCreatesNothing(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	workloads(t, cs, ns)
	isolateWeb(t, cs, ns)
	runs := []struct {
		name string
		args []string
		want []string // kinds, in order, with the verb
	}{
		{"path ephemeral", []string{"path", "deploy/client", "deploy/web", "--allow-policy", "--probes", "rtt"},
			[]string{"create NetworkPolicy", "patch Pod", "patch Pod"}},
		// Temporary agent pods are selected by no policy of the namespace: nothing to open.
		{"path pod", []string{"path", "deploy/client", "deploy/web", "--allow-policy", "--probes", "rtt", "--mode", "pod"},
			[]string{"create Pod", "create Pod"}},
		{"ladder svc ephemeral", []string{"ladder", "svc/web", "--allow-policy", "--probes", "rtt"},
			[]string{"create NetworkPolicy", "create NetworkPolicy", "patch Pod", "patch Pod", "create Service", "create Pod", "create Pod", "create Pod"}},
		{"ladder pod", []string{"ladder", "deploy/client", "--probes", "rtt", "--mode", "pod"},
			[]string{"create Pod", "create Pod", "create Pod", "create Pod"}},
		{"matrix", []string{"matrix"}, []string{"create DaemonSet"}},
		{"dns observe", []string{"dns", "deploy/client", "--observe", "5s"}, []string{"patch Pod", "patch Pod"}},
	}
	seen := watchManaged(t, cs, ns)
	t.Run("runs", func(t *testing.T) {
		for _, run := range runs {
			t.Run(run.name, func(t *testing.T) {
				siblings(t)
				args := append(append([]string{}, run.args...), "-n", ns, "--dry-run", "-o", "yaml")
				out, stderr, err := netbench(t, args...)
				if err != nil {
					t.Fatalf("%v: %v\n%s", args, err, stderr)
				}
				got := resubmit(t, ns, out)
				if strings.Join(got, ", ") != strings.Join(run.want, ", ") {
					t.Errorf("objects %v, want %v:\n%s", got, run.want, out)
				}
			})
		}
	})
	if got := seen(); len(got) > 0 {
		t.Errorf("objects of netbench's came and went during the dry runs: %v", got)
	}
	createdNothing(t, cs, ns)
}

// watchManaged watches ns for any pod, Service, NetworkPolicy or DaemonSet of netbench's from
// now on; the function it returns stops the watches and says what they saw. An object a run
// created and deleted again within its run leaves nothing to list afterwards, but a watch sees it.
func watchManaged(t *testing.T, cs kubernetes.Interface, ns string) func() []string {
	t.Helper()
	ctx, sel := context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kubectl-netbench"}
	var ws []watch.Interface
	for _, w := range []func() (watch.Interface, error){
		func() (watch.Interface, error) { return cs.CoreV1().Pods(ns).Watch(ctx, sel) },
		func() (watch.Interface, error) { return cs.CoreV1().Services(ns).Watch(ctx, sel) },
		func() (watch.Interface, error) { return cs.NetworkingV1().NetworkPolicies(ns).Watch(ctx, sel) },
		func() (watch.Interface, error) { return cs.AppsV1().DaemonSets(ns).Watch(ctx, sel) },
	} {
		wi, err := w()
		if err != nil {
			t.Fatal(err)
		}
		ws = append(ws, wi)
	}
	var mu sync.Mutex
	var seen []string
	for _, w := range ws {
		go func() {
			for ev := range w.ResultChan() {
				if m, err := meta.Accessor(ev.Object); err == nil {
					mu.Lock()
					seen = append(seen, fmt.Sprintf("%s %T %s", ev.Type, ev.Object, m.GetName()))
					mu.Unlock()
				}
			}
		}()
	}
	return func() []string {
		time.Sleep(time.Second) // events of the last run's calls still on their way
		for _, w := range ws {
			w.Stop()
		}
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
}

// isolateWeb denies all ingress to web's pods, so that --allow-policy has a port to open.
func isolateWeb(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	np := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "deny-web"}, Spec: networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}, PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}}
	if _, err := cs.NetworkingV1().NetworkPolicies(ns).Create(context.Background(), np, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// resubmit sends every object of a dry run's YAML stream to the API server again with
// dryRun=All, as the comment above it says (create, or patch of the pod's ephemeralcontainers
// subresource), and returns "VERB KIND" for each.
func resubmit(t *testing.T, ns, stream string) []string {
	t.Helper()
	var got []string
	for _, d := range cmdtest.PlannedDocuments(t, stream) {
		var pod corev1.Pod // enough of every kind: its kind, name and ephemeral containers
		if err := yaml.Unmarshal(d.YAML, &pod); err != nil || pod.Kind == "" {
			t.Fatalf("document %s: %v", d.YAML, err)
		}
		if d.Verb == session.VerbPatchEphemeral {
			patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"ephemeralContainers": pod.Spec.EphemeralContainers}})
			kubectlDry(t, nil, "patch", "pod", "-n", ns, pod.Name, "--subresource", "ephemeralcontainers", "--type", "strategic", "-p", string(patch))
			got = append(got, "patch "+pod.Kind)
			continue
		}
		kubectlDry(t, d.YAML, "create", "-f", "-")
		got = append(got, "create "+pod.Kind)
	}
	return got
}

// kubectlDry runs the lab's kubectl with --dry-run=server and fails the test if the API server
// refuses.
func kubectlDry(t *testing.T, stdin []byte, args ...string) {
	t.Helper()
	cmd := exec.Command(labKubectl(), append([]string{"--kubeconfig", kubeconfigPath(), "--dry-run=server"}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("kubectl %v: %v\n%s", args, err, out)
	}
}

// createdNothing fails unless the namespace holds no object of netbench's and no pod an
// ephemeral container.
func createdNothing(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	ctx, sel := context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kubectl-netbench"}
	var left []string
	if l, err := cs.CoreV1().Pods(ns).List(ctx, sel); err != nil || len(l.Items) > 0 {
		left = append(left, "pods")
	}
	if l, err := cs.CoreV1().Services(ns).List(ctx, sel); err != nil || len(l.Items) > 0 {
		left = append(left, "services")
	}
	if l, err := cs.NetworkingV1().NetworkPolicies(ns).List(ctx, sel); err != nil || len(l.Items) > 0 {
		left = append(left, "networkpolicies")
	}
	if l, err := cs.AppsV1().DaemonSets(ns).List(ctx, sel); err != nil || len(l.Items) > 0 {
		left = append(left, "daemonsets")
	}
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if len(p.Spec.EphemeralContainers) > 0 {
			left = append(left, "ephemeral containers in "+p.Name)
		}
	}
	if len(left) > 0 {
		t.Errorf("a dry run left %v", left)
	}
}
