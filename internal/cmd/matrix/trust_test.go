package matrix

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/placement"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// A pod carrying the run's labels is not an agent of the run unless the run's DaemonSet is its
// controller and it runs the DaemonSet's agent container unchanged and alone (the DaemonSet
// adopts any pod with its labels, so a look-alike may well have the right controller), and of
// two such pods on a node only the older is: a look-alike gets no job, no token, no lease
// renewal, nothing measures it and it has no row in the report. The run goes on with the
// DaemonSet's own pods and does not wait for the look-alike to go.
func TestMatrixTrustsOnlyTheDaemonSetsPods(t *testing.T) {
	dsKind := appsv1.SchemeGroupVersion.WithKind("DaemonSet")
	adopted := func(ds *appsv1.DaemonSet, p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ds, dsKind)}
		p.Spec = *ds.Spec.Template.Spec.DeepCopy()
		p.Spec.NodeName = "node-00001"
	}
	tests := []struct {
		name string
		mod  func(ds *appsv1.DaemonSet, p *corev1.Pod)
	}{
		{"the run's labels, no owner", func(*appsv1.DaemonSet, *corev1.Pod) {}},
		{"another controller", func(ds *appsv1.DaemonSet, p *corev1.Pod) {
			adopted(ds, p)
			p.OwnerReferences[0].UID = "uid-of-another-daemonset"
		}},
		{"the DaemonSet as owner, not as controller", func(ds *appsv1.DaemonSet, p *corev1.Pod) {
			adopted(ds, p)
			p.OwnerReferences[0].Controller = nil
		}},
		{"another kind with the DaemonSet's UID", func(ds *appsv1.DaemonSet, p *corev1.Pod) {
			adopted(ds, p)
			p.OwnerReferences[0].Kind = "ReplicaSet"
		}},
		{"adopted, running another image", func(ds *appsv1.DaemonSet, p *corev1.Pod) {
			adopted(ds, p)
			p.Spec.Containers[0].Image = "evil.example/listener:1"
		}},
		{"adopted, running other arguments", func(ds *appsv1.DaemonSet, p *corev1.Pod) {
			adopted(ds, p)
			p.Spec.Containers[0].Args = []string{"serve", "--listen", ":24930", "--token", "x", "--jobs"}
		}},
		{"adopted, the agent with a sidecar", func(ds *appsv1.DaemonSet, p *corev1.Pod) {
			adopted(ds, p)
			p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "sniffer", Image: "evil.example/tcpdump:1"})
		}},
		{"adopted, the agent sharing its process namespace", func(ds *appsv1.DaemonSet, p *corev1.Pod) {
			adopted(ds, p)
			yes := true
			p.Spec.ShareProcessNamespace = &yes
		}},
		{"adopted, the agent with a volume over its binary", func(ds *appsv1.DaemonSet, p *corev1.Pod) {
			adopted(ds, p)
			p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "x", MountPath: "/netbench-agent", SubPath: "evil"}}
		}},
		{"adopted, the agent with another environment", func(ds *appsv1.DaemonSet, p *corev1.Pod) {
			adopted(ds, p)
			p.Spec.Containers[0].Env = append(p.Spec.Containers[0].Env, corev1.EnvVar{Name: "GODEBUG", Value: "x"})
		}},
		{"the agent exactly, newer than the node's", adopted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fakecluster.NewFleet(4, 2)
			var fake *corev1.Pod
			f.LookAlikes = func(ds *appsv1.DaemonSet) []*corev1.Pod {
				fake = fakecluster.Impostor(f, ds, func(p *corev1.Pod) { tc.mod(ds, p) })
				return []*corev1.Pod{fake}
			}
			r, err := runMatrix(t, f, func(o *MatrixOptions) { o.Scope = placement.ScopeNodes })
			if err != nil {
				t.Fatal(err)
			}
			agents := map[string]string{} // pod IP → pod, of the DaemonSet's pods
			var want []report.MatrixNode
			for ip, n := range f.IPs {
				if ip != fake.Status.PodIP {
					agents[ip] = "netbench-run1-mesh-" + n
					want = append(want, report.MatrixNode{Name: n, Zone: f.Zones[n], Pod: agents[ip], IP: ip})
				}
			}
			slices.SortFunc(want, func(a, b report.MatrixNode) int { return strings.Compare(a.Name, b.Name) })
			if d := cmp.Diff(want, r.Nodes); d != "" {
				t.Errorf("report nodes (-want +got):\n%s", d)
			}
			for _, call := range f.Posted {
				if strings.HasPrefix(call, fake.Name+" ") {
					t.Errorf("the look-alike was sent %q (with the token)", call)
				}
			}
			for _, target := range f.JobTargets {
				if host, port, _ := strings.Cut(target, ":"); agents[host] == "" || port != "24930" {
					t.Errorf("a job measured %s: not an agent of the run", target)
				}
			}
			if len(r.Pairs) != 12 || len(f.JobTargets) != 12 {
				t.Errorf("%d pairs, %d jobs: want every pair of the four agents measured", len(r.Pairs), len(f.JobTargets))
			}
		})
	}
}

// The agents' lifetime is the start timeout, twice the estimate and 30 s, and never more than
// MaxMatrixLifetime: a longer plan is refused.
func TestMatrixLifetimeCap(t *testing.T) {
	tests := []struct {
		estimate, start time.Duration
		want            time.Duration
		wantErr         error
	}{
		{10 * time.Second, 2 * time.Minute, 2*time.Minute + 50*time.Second, nil},
		{time.Hour, 2 * time.Minute, 2*time.Hour + 2*time.Minute + 30*time.Second, nil},
		{time.Hour + 58*time.Minute, time.Minute, 3*time.Hour + 57*time.Minute + 30*time.Second, nil},
		{2 * time.Hour, 2 * time.Minute, 4*time.Hour + 2*time.Minute + 30*time.Second, ErrPlanTooLong},
		{time.Hour, time.Hour, 3*time.Hour + 30*time.Second, nil},
	}
	for _, tc := range tests {
		o := NewMatrixOptions(nil, fakecluster.GenericStreams())
		o.StartTimeout = tc.start
		r := &matrixRun{o: o, rep: &report.MatrixReport{Plan: report.MatrixPlan{EstimatedSeconds: tc.estimate.Seconds()}}}
		if got := r.lifetime(); got != tc.want {
			t.Errorf("estimate %s, start timeout %s: lifetime %s, want %s", tc.estimate, tc.start, got, tc.want)
		}
		if err := r.checkLifetime(); !errors.Is(err, tc.wantErr) || (tc.wantErr == nil && err != nil) {
			t.Errorf("estimate %s, start timeout %s: %v, want %v", tc.estimate, tc.start, err, tc.wantErr)
		}
	}
}

// A plan whose agents would outlive MaxMatrixLifetime is refused with one line, dry run or
// not, before anything is created.
func TestMatrixRefusesAPlanTooLong(t *testing.T) {
	for _, dry := range []bool{false, true} {
		f := fakecluster.NewFleet(40, 2)
		_, err := runMatrix(t, f, func(o *MatrixOptions) {
			o.Scope, o.MaxPairs, o.Concurrency, o.Count, o.Throughput, o.DryRun = placement.ScopeNodes, 10000, 1, 5, 30*time.Second, dry
		})
		if !errors.Is(err, ErrPlanTooLong) || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), "1560 pairs in 1560 rounds") {
			t.Errorf("dry run %v: error %v: want one line saying the plan is too long", dry, err)
		}
		for _, a := range f.Clientset.Actions() {
			if a.GetVerb() == "create" && a.GetResource().Resource != "selfsubjectaccessreviews" {
				t.Errorf("dry run %v: %s %s before the refusal", dry, a.GetVerb(), a.GetResource().Resource)
			}
		}
	}
}

// The matrix's agents hold a lease of FleetLeasePeriod, idle when done instead of exiting
// (their pods always restart), and run as user and group 65532 on a read-only root filesystem.
func TestMatrixAgentPodSpec(t *testing.T) {
	f := fakecluster.NewFleet(2, 1)
	if _, err := runMatrix(t, f, func(*MatrixOptions) {}); err != nil {
		t.Fatal(err)
	}
	ds := fakecluster.CreatedDaemonSet(t, f)
	c := ds.Spec.Template.Spec.Containers[0]
	args := strings.Join(c.Args, " ")
	if !strings.Contains(args, " --idle-when-done ") || !strings.HasSuffix(args, " --lease 45s") {
		t.Errorf("agent args %q: want --idle-when-done and --lease 45s", args)
	}
	no, yes, id := false, true, int64(65532)
	want := &corev1.SecurityContext{AllowPrivilegeEscalation: &no, RunAsNonRoot: &yes, ReadOnlyRootFilesystem: &yes, RunAsUser: &id, RunAsGroup: &id,
		Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}
	if d := cmp.Diff(want, c.SecurityContext); d != "" {
		t.Errorf("security context (-want +got):\n%s", d)
	}
	if ds.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Errorf("restart policy %s", ds.Spec.Template.Spec.RestartPolicy)
	}
}
