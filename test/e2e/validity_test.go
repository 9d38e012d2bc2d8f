package e2e

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/internal/render"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// A destination pod with a 200m CPU limit: the server agent, an ephemeral container in it, runs
// under the pod's limit, and the probes the limit decided (the TCP transfer, the closed-loop
// HTTP) are marked with the reason and what to run instead, in JSON, in the human report and for
// --fail-if 'valid == 0' (exit 3). The same pair with --mode pod (temporary pods on the same
// nodes, no limit) measures the path: nothing marked, the transfer faster, the two side by side
// in the log. A pair without limits marks nothing. With --repeat 2, each round is marked and
// the figure over the rounds is not valid.
func TestPathMarksCPULimitedProbes(t *testing.T) {
	cs, ns := lab(t)
	workloads(t, cs, ns)
	limitedPod(t, cs, ns)

	args := []string{"-n", ns, "deploy/client", "pod/limited", "--probes", "rtt,http-max,tcp", "--duration", "2s"}
	out, stderr, err := netbench(t, append([]string{"path", "-o", "json", "--fail-if", "valid == 0"}, args...)...)
	if code := exitCode(t, err); code != 3 {
		t.Fatalf("--fail-if 'valid == 0' on the limited pod: exit %d, want 3\n%s", code, stderr)
	}
	eph := decodeReport(t, out)
	podMode := pathJSON(t, append(args, "--mode", "pod")...)
	free := pathJSON(t, "-n", ns, "deploy/client", "deploy/web", "--probes", "rtt,http-max,tcp", "--duration", "2s")

	for _, kind := range []string{v1alpha1.ProbeTCP, v1alpha1.ProbeHTTPMax} {
		n := 0
		for _, r := range eph.Probes {
			if r.Kind != kind {
				continue
			}
			n++
			v := r.Validity
			if v == nil || v.Valid || v.Advice != report.AdvicePodLimit || v.Server == nil || v.Server.LimitFrom != v1alpha1.LimitFromPod ||
				math.Abs(v.Server.LimitCores-0.2) > 1e-9 || !strings.Contains(strings.Join(v.Reasons, " "), "server agent CPU-limited") {
				t.Errorf("%s with the server under the pod's 200m limit: validity %s", r.Name, validityJSON(v))
			}
		}
		if n == 0 {
			t.Errorf("no %s probe in the run", kind)
		}
	}
	for name, rep := range map[string]*v1alpha1.PathReport{"--mode pod": podMode, "no limit": free} {
		for _, r := range rep.Probes {
			if r.Validity == nil || !r.Validity.Valid {
				t.Errorf("%s: %s marked or without accounting: %s", name, r.Name, validityJSON(r.Validity))
			}
		}
	}
	human := humanReport(t, out) // the human report of the same run, from its JSON
	for _, want := range []string{"[cpu-limited]", "NOT THE NETWORK'S", "waited", report.AdvicePodLimit} {
		if !strings.Contains(human, want) {
			t.Errorf("the human report lacks %q:\n%s", want, human)
		}
	}
	for _, r := range eph.Probes {
		if r.Kind != v1alpha1.ProbeTCP {
			continue
		}
		var other *v1alpha1.ProbeResult
		for _, o := range podMode.Probes {
			if o.Name == r.Name && o.Throughput != nil {
				other = o
			}
		}
		if other == nil {
			t.Fatalf("--mode pod has no %s", r.Name)
		}
		t.Logf("%s: ephemeral under the pod's 200m limit %.2f Gbit/s (server waited %.2f s for a CPU in %.2f s), --mode pod %.2f Gbit/s",
			r.Name, r.Throughput.BitsPerSecondReceived/1e9, r.Validity.Server.RunQueueWaitSeconds, r.Validity.Server.WallSeconds, other.Throughput.BitsPerSecondReceived/1e9)
		if other.Throughput.BitsPerSecondReceived < 1.5*r.Throughput.BitsPerSecondReceived {
			t.Errorf("%s: --mode pod %.2f Gbit/s is not 1.5 times the limited %.2f", r.Name, other.Throughput.BitsPerSecondReceived/1e9, r.Throughput.BitsPerSecondReceived/1e9)
		}
	}
	limitedRounds(t, ns)
}

// limitedRounds runs `path --repeat 2` to the limited pod: --fail-if 'valid == 0' exits 3,
// tcp-1.valid over the rounds is 0, and the human report names each throttled round.
func limitedRounds(t *testing.T, ns string) {
	t.Helper()
	out, stderr, err := netbench(t, "path", "-o", "json", "--fail-if", "valid == 0", "-n", ns, "deploy/client", "pod/limited", "--probes", "tcp", "--duration", "1s", "--repeat", "2")
	if code := exitCode(t, err); code != 3 {
		t.Fatalf("--repeat 2 --fail-if 'valid == 0' on the limited pod: exit %d, want 3\n%s", code, stderr)
	}
	var r report.PathReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if f := r.Figures["tcp-1.valid"]; f.Samples != 2 || f.Median != 0 {
		t.Errorf("tcp-1.valid over 2 rounds on the limited pod: %+v, want 0", f)
	}
	human := humanReport(t, out)
	for _, want := range []string{"Over 2 rounds", "NOT THE NETWORK'S in round 1", "NOT THE NETWORK'S in round 2", "not the network's in 2 of 2 rounds"} {
		if !strings.Contains(human, want) {
			t.Errorf("the human report of --repeat 2 on the limited pod lacks %q:\n%s", want, human)
		}
	}
}

func validityJSON(v *v1alpha1.Validity) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// limitedPod starts pod "limited" on lab-b1 with a 200m CPU limit (and 256 MiB: the app and an
// ephemeral agent with its sockets' buffers share it).
func limitedPod(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	limited := pod("limited", "lab-b1", "netbench.lab/sample-app:1", nil, map[string]string{"app": "limited"})
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	limited.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: cpu, Limits: cpu}
	createPod(t, cs, ns, limited)
	waitPod(t, cs, ns, "limited", 2*time.Minute, "running", running)
}

// The lab's namespace with a LimitRange of 200m per container and an application whose sidecar
// keeps its own 200m busy (hack/lab/manifests/limited.yaml). In busy, whose containers share a
// process namespace, the server agent (an ephemeral container under the pod's 0.4 cores) sees
// both: the transfer is marked CPU-limited with the sidecar's use named in the reason, the
// sidecar is reported throttled by its own limit (its use near 0.2 cores, its waits), and the
// idle app container is seen and not named in the human report. In busy-apart the agent sees
// only the container it targets and says it cannot see the sidecar.
func TestAppContainersCPU(t *testing.T) {
	cs, ns := lab(t)
	workloads(t, cs, ns)
	applyManifest(t, ns, "limited.yaml")
	waitRollout(t, cs, ns, "busy")
	waitRollout(t, cs, ns, "busy-apart")

	out, stderr, err := netbench(t, "path", "-o", "json", "-n", ns, "deploy/client", "deploy/busy", "--probes", "rtt,tcp", "--duration", "2s")
	if err != nil {
		t.Fatalf("path to deploy/busy: %v\n%s", err, stderr)
	}
	rep := decodeReport(t, out)
	tcp := probeOf(t, rep, v1alpha1.ProbeTCP)
	v := tcp.Validity
	burner, app := appContainer(v.ServerApp, "burner"), appContainer(v.ServerApp, "app")
	if burner == nil || app == nil || burner.NotSeen || app.NotSeen {
		t.Fatalf("the agent in busy did not see both containers: %s", validityJSON(v))
	}
	cores := burner.CPUSeconds / burner.WallSeconds
	t.Logf("%s: burner %.3f cores of its %.2f (waited %.2f s in %.2f s), app %.3f cores; server agent %.3f cores, waited %.2f s",
		tcp.Name, cores, burner.LimitCores, burner.RunQueueWaitSeconds, burner.WallSeconds, app.CPUSeconds/app.WallSeconds,
		v.Server.CPUSeconds/v.Server.WallSeconds, v.Server.RunQueueWaitSeconds)
	if !burner.CPULimited || burner.LimitFrom != v1alpha1.LimitFromContainer || math.Abs(burner.LimitCores-0.2) > 1e-9 || cores < 0.15 || cores > 0.25 {
		t.Errorf("the sidecar at its 200m limit: %+v", *burner)
	}
	if app.CPULimited || app.CPUSeconds > 0.05*app.WallSeconds {
		t.Errorf("the idle app container: %+v", *app)
	}
	if v.Valid || !strings.Contains(strings.Join(v.Reasons, " "), "the pod's containers meanwhile: app 0.0") || !strings.Contains(strings.Join(v.Reasons, " "), ", burner 0.") {
		t.Errorf("%s beside the sidecar under the pod's 0.4 cores: %s", tcp.Name, validityJSON(v))
	}
	if h := humanReport(t, out); !strings.Contains(h, "server pod, container burner: 0.") || !strings.Contains(h, "CPU-THROTTLED") || strings.Contains(h, "container app:") {
		t.Errorf("the human report does not name the throttled sidecar alone:\n%s", h)
	}

	apart := probeOf(t, pathJSON(t, "-n", ns, "deploy/client", "deploy/busy-apart", "--probes", "tcp", "--duration", "1s"), v1alpha1.ProbeTCP)
	if b, a := appContainer(apart.Validity.ServerApp, "burner"), appContainer(apart.Validity.ServerApp, "app"); b == nil || !b.NotSeen || a == nil || a.NotSeen {
		t.Errorf("%s in busy-apart: want app seen and burner not seen: %s", apart.Name, validityJSON(apart.Validity))
	}
}

func appContainer(app []v1alpha1.AppContainer, name string) *v1alpha1.AppContainer {
	for i := range app {
		if app[i].Name == name {
			return &app[i]
		}
	}
	return nil
}

// probeOf is the report's first result of a kind.
func probeOf(t *testing.T, rep *v1alpha1.PathReport, kind string) *v1alpha1.ProbeResult {
	t.Helper()
	for _, r := range rep.Probes {
		if r.Kind == kind && r.Validity != nil {
			return r
		}
	}
	t.Fatalf("no %s probe with accounting in the report", kind)
	return nil
}

// humanReport is the human report of a path run, rendered from its JSON.
func humanReport(t *testing.T, out string) string {
	t.Helper()
	var r report.PathReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	var human bytes.Buffer
	if err := render.Write(&human, "", &r); err != nil {
		t.Fatal(err)
	}
	return human.String()
}
