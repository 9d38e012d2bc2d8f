package matrix

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/path"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil/cmdtest"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/placement"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

func runMatrix(t *testing.T, f *fakecluster.Cluster, mod func(*MatrixOptions)) (*report.MatrixReport, error) {
	t.Helper()
	out := &strings.Builder{}
	o := matrixOptions(f, out)
	mod(o)
	if err := o.Validate(nil); err != nil {
		t.Fatal(err)
	}
	err := o.Run(context.Background())
	if err != nil || o.DryRun {
		return nil, err
	}
	var r report.MatrixReport
	if jerr := json.Unmarshal([]byte(out.String()), &r); jerr != nil {
		t.Fatalf("report: %v\n%s", jerr, out)
	}
	return &r, err
}

// Every node pair of six nodes in two zones, one node slow: a 6 × 6 node grid and a 2 × 2 zone
// grid, the slow node named (and its pairs not listed again), no node in two pairs at once, and
// nothing left behind.
func TestMatrixRunNodesScope(t *testing.T) {
	f := fakecluster.NewFleet(6, 2)
	f.Slow, f.SlowBy = "node-00004", 1000
	stale := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "netbench-old-mesh", Namespace: "netbench",
		Labels: map[string]string{session.ManagedByLabel: session.ManagedByValue}, Annotations: map[string]string{session.NotAfterAnnotation: "2020-01-01T00:00:00Z"}}}
	if err := f.Clientset.Tracker().Add(stale); err != nil {
		t.Fatal(err)
	}
	r, err := runMatrix(t, f, func(o *MatrixOptions) { o.Scope, o.Concurrency = placement.ScopeNodes, 3 })
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Warnings) != 1 || !strings.HasPrefix(r.Warnings[0], "deleted DaemonSet netbench/netbench-old-mesh left by an earlier run") {
		t.Errorf("warnings %q: want the stale DaemonSet deleted", r.Warnings)
	}
	if r.Kind != "MatrixReport" || len(r.Pairs) != 30 || len(r.NodeGrid) != 30 || len(r.Zones) != 4 || r.Probe != "icmp" {
		t.Fatalf("kind %s, %d pairs, %d node cells, %d zone cells, probe %s", r.Kind, len(r.Pairs), len(r.NodeGrid), len(r.Zones), r.Probe)
	}
	var flagged []string
	for _, o := range r.Outliers {
		flagged = append(flagged, o.Kind+":"+o.Node+o.From)
	}
	if d := cmp.Diff([]string{"node:node-00004"}, flagged); d != "" {
		t.Errorf("outliers (-want +got):\n%s", d)
	}
	if len(f.Overlap) > 0 {
		t.Errorf("nodes measured twice at once: %v", f.Overlap)
	}
	if left := f.Remaining(); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
	if r.Plan.Rounds < 10 || r.Plan.Concurrency != 3 {
		t.Errorf("plan %+v: 30 pairs at most 3 at once take at least 10 rounds", r.Plan)
	}
}

// --dry-run prints the plan, sends the DaemonSet with dryRun=All and says so (-o yaml: the
// DaemonSet itself); it creates nothing and posts no job.
func TestMatrixDryRun(t *testing.T) {
	for _, format := range []string{"", "yaml"} {
		f := fakecluster.NewFleet(8, 2)
		out := &strings.Builder{}
		o := matrixOptions(f, out)
		o.Output, o.DryRun = format, true
		if err := o.Validate(nil); err != nil {
			t.Fatal(err)
		}
		if err := o.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		if f.Jobs.Load() != 0 {
			t.Errorf("%q: a dry run posted %d jobs", format, f.Jobs.Load())
		}
		if format == "yaml" {
			if diff := cmp.Diff([]string{"create DaemonSet netbench/netbench-run1-mesh"}, cmdtest.DryRunObjects(t, f, out.String())); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			continue
		}
		if !strings.Contains(out.String(), "12 pairs, ") || !strings.Contains(out.String(), "would create DaemonSet netbench/netbench-run1-mesh") {
			t.Errorf("plan:\n%s", out)
		}
	}
}

// Without the right to create DaemonSets the run stops before anything is created, with one
// line naming what is missing.
func TestMatrixForbiddenDaemonSets(t *testing.T) {
	f := fakecluster.NewFleet(4, 2)
	f.Denied["create daemonsets"] = true
	_, err := runMatrix(t, f, func(*MatrixOptions) {})
	var pe *access.PermissionError
	if !errors.As(err, &pe) || strings.Count(err.Error(), "\n") > 0 || !strings.Contains(err.Error(), "create daemonsets.apps") {
		t.Fatalf("error %v: want one line naming create daemonsets.apps", err)
	}
	for _, a := range f.Clientset.Actions() {
		if a.GetVerb() == "create" && a.GetResource().Resource != "selfsubjectaccessreviews" {
			t.Errorf("created %s before refusing", a.GetResource().Resource)
		}
	}
}

// An interrupt in the middle of the measuring deletes the DaemonSet and its pods.
func TestMatrixInterrupted(t *testing.T) {
	f := fakecluster.NewFleet(6, 2)
	ctx, cancel := context.WithCancel(context.Background())
	f.BeforeJob = func() {
		if f.Jobs.Load() == 3 {
			cancel()
		}
	}
	o := matrixOptions(f, &strings.Builder{})
	if err := o.Validate(nil); err != nil {
		t.Fatal(err)
	}
	err := o.Run(ctx)
	if err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Errorf("error %v: want it to say the run was interrupted", err)
	}
	if left := f.Remaining(); len(left) > 0 {
		t.Errorf("left behind after the interrupt: %v", left)
	}
}

// The API calls of a run grow linearly in the nodes: one list of nodes (a page per 500), one
// DaemonSet, one watch, one call per measured pair. With --sample N (N pairs) the calls per
// node must not grow from 10 to 1000 nodes; with --scope zones they must not grow at all.
func TestMatrixAPICallsGrowLinearly(t *testing.T) {
	calls := func(nodes int, mod func(*MatrixOptions)) int {
		f := fakecluster.NewFleet(nodes, 3)
		if _, err := runMatrix(t, f, mod); err != nil {
			t.Fatal(err)
		}
		return f.APICalls()
	}
	perNode := map[int]float64{}
	zones := map[int]int{}
	for _, n := range []int{10, 100, 1000} {
		perNode[n] = float64(calls(n, func(o *MatrixOptions) {
			o.Sample, o.Scope, o.Concurrency, o.MaxPairs = n, placement.ScopeSample, 100, n
		})) / float64(n)
		zones[n] = calls(n, func(*MatrixOptions) {})
	}
	t.Logf("API calls per node with --sample N: %v; with --scope zones: %v", perNode, zones)
	if perNode[1000] > 1.1*perNode[100] || perNode[100] > 1.1*perNode[10] {
		t.Errorf("API calls per node grow with the nodes: %v", perNode)
	}
	if zones[1000] > zones[10]+2 {
		t.Errorf("--scope zones: %v API calls: want the same at any size (a page of nodes per 500 aside)", zones)
	}
}

// Flags are refused with one line naming the flag, before anything is read.
func TestMatrixValidate(t *testing.T) {
	for _, tc := range []struct {
		mod  func(*MatrixOptions)
		want string
	}{
		{func(o *MatrixOptions) { o.Scope = "racks" }, `--scope "racks": want zones, nodes or sample`},
		{func(o *MatrixOptions) { o.PairsPerCell = 0 }, "--pairs-per-cell 0: want 1-100"},
		{func(o *MatrixOptions) { o.Concurrency = 0 }, "--concurrency 0: want 1-500"},
		{func(o *MatrixOptions) { o.Count = 2 }, "--count 2: want 5-1000"},
		{func(o *MatrixOptions) { o.Interval = time.Hour }, "--interval 1h0m0s: want 1ms-1s"},
		{func(o *MatrixOptions) { o.Count, o.Interval = 1000, time.Second }, "--count 1000 × --interval 1s (ICMP and TCP), --throughput 0s and --rates 0s (three probes) take 33m20s per pair: want at most 50s"},
		{func(o *MatrixOptions) { o.Rates = 100 * time.Millisecond }, "--rates 100ms: want 500ms-10s"},
		{func(o *MatrixOptions) { o.Rates, o.Throughput = 10*time.Second, 30*time.Second }, "--count 50 × --interval 10ms (ICMP and TCP), --throughput 30s and --rates 10s (three probes) take 1m1s per pair"},
		{func(o *MatrixOptions) { o.OutlierFactor = 1 }, "--outlier-factor 1: want 1.05-100"},
		{func(o *MatrixOptions) { o.NodeSelector = "a in (" }, `--nodes "a in ("`},
		{func(o *MatrixOptions) { o.Port = 80 }, "--agent-port 80: want 1024-65535"},
		{func(o *MatrixOptions) { o.Sample = -1 }, "--sample -1: want 1-1000000 pairs"},
		{func(o *MatrixOptions) { o.TolerateAllTaints, o.TolerationsFrom = true, "deploy/x" }, "--tolerations-from deploy/x with --tolerate-all-taints: choose one"},
		{func(o *MatrixOptions) { o.IPFamily = "5" }, `--ip-family "5": want 4, 6 or both`},
	} {
		o := matrixOptions(fakecluster.NewFleet(1, 1), &strings.Builder{})
		tc.mod(o)
		err := o.Validate(nil)
		if err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("error %v: want %q", err, tc.want)
		}
	}
	o := matrixOptions(fakecluster.NewFleet(1, 1), &strings.Builder{})
	if err := o.Validate(nil); err != nil {
		t.Errorf("defaults: %v", err)
	}
	if err := o.Run(context.Background()); err == nil || !strings.HasPrefix(err.Error(), "no pair of nodes to measure: 1 of 1 nodes are usable") {
		t.Errorf("one node: %v", err)
	}
}

// --image-pull-secret: a Secret that is not in the namespace stops the run before the
// DaemonSet is made; one that is goes into the DaemonSet's pods, with --toleration's taints.
func TestMatrixPullSecretAndToleration(t *testing.T) {
	f := fakecluster.NewFleet(4, 2)
	var created []*appsv1.DaemonSet
	f.Clientset.PrependReactor("create", "daemonsets", func(a k8stesting.Action) (bool, runtime.Object, error) {
		created = append(created, a.(k8stesting.CreateAction).GetObject().(*appsv1.DaemonSet).DeepCopy())
		return false, nil, nil
	})
	set := func(o *MatrixOptions) {
		o.PullSecretNames, o.TolerationSpecs = []string{"regcred"}, []string{"pool=agents:NoSchedule"}
	}
	if _, err := runMatrix(t, f, set); !errors.Is(err, cmdutil.ErrNoPullSecret) || len(created) > 0 {
		t.Fatalf("no Secret regcred: err %v, %d DaemonSets created", err, len(created))
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "regcred", Namespace: "netbench"}, Type: corev1.SecretTypeDockerConfigJson}
	if err := f.Clientset.Tracker().Add(secret); err != nil {
		t.Fatal(err)
	}
	if _, err := runMatrix(t, f, set); err != nil || len(created) != 1 {
		t.Fatalf("err %v, %d DaemonSets created", err, len(created))
	}
	spec := created[0].Spec.Template.Spec
	want := []corev1.Toleration{{Key: "pool", Operator: corev1.TolerationOpEqual, Value: "agents", Effect: corev1.TaintEffectNoSchedule}}
	if d := cmp.Diff(want, spec.Tolerations); d != "" || len(spec.ImagePullSecrets) != 1 || spec.ImagePullSecrets[0].Name != "regcred" {
		t.Errorf("tolerations (-want +got):\n%s; imagePullSecrets %v", d, spec.ImagePullSecrets)
	}
}

// --ip-family 6 where a usable node has no IPv6 address is refused, naming the node, before the
// DaemonSet is made.
func TestMatrixIPFamilyNeedsTheNodes(t *testing.T) {
	f := fakecluster.NewFleet(4, 2)
	_, err := runMatrix(t, f, func(o *MatrixOptions) { o.IPFamily = "6" })
	if err == nil || !strings.HasPrefix(err.Error(), "--ip-family 6: node node-00000 has no IPv6 pod range or InternalIP") {
		t.Fatalf("err %v", err)
	}
	if left := f.Remaining(); len(left) > 0 {
		t.Errorf("made: %v", left)
	}
}

// --rates adds tcp-rr and udp-rr on one client and tcp-crr on four, each for its duration, to
// every pair's job (and their IPv6 twins with --ip-family both), and to the pair's time.
func TestMatrixRateProbes(t *testing.T) {
	o := matrixOptions(fakecluster.NewFleet(1, 1), &strings.Builder{})
	o.Rates, o.IPFamily = 2*time.Second, path.FamilyBoth
	if err := o.Validate(nil); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range o.job("10.0.0.1").Probes {
		if p.DurationSeconds == 2 {
			got = append(got, fmt.Sprintf("%s×%d", p.Label(), p.Connections))
		}
	}
	want := []string{"tcp-rr×1", "udp-rr×1", "tcp-crr×4", "tcp-rr-v6×1", "udp-rr-v6×1", "tcp-crr-v6×4"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rate probes (-want +got):\n%s", d)
	}
	if d := o.perPair(); d != 2*(time.Second+6*time.Second) {
		t.Errorf("per pair %s: want 16s (ICMP and TCP 1 s, the rates 6 s, both families)", d)
	}
}
