package e2e

import (
	"context"
	"math"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/reftools"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// A CoreDNS with a CPU limit of 100m per replica (hack/lab/manifests/dns-capacity.yaml) has a
// knee: `dns --load` from a pod that uses it finds one for the Service and for each replica
// (dnsperf, with the same query mix in the same pod's network namespace, logged beside each); the
// report turns the Service's into lookups per second at the pod's amplification and after the
// fix; interrupted mid-ramp, its agent stops within 5 s.
func TestDNSLoadFindsTheKneeOfALimitedCoreDNS(t *testing.T) {
	alone(t)
	cs, ns := lab(t)
	applyManifest(t, ns, "dns-capacity.yaml")
	waitRollout(t, cs, ns, "capacity-dns")
	svc, err := cs.CoreV1().Services(ns).Get(context.Background(), "capacity-dns", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p := pod("app", "lab-a1", "netbench.lab/resolver-glibc:1", []string{"--idle"}, nil)
	ndots := "5"
	p.Spec.DNSPolicy = corev1.DNSNone
	p.Spec.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{svc.Spec.ClusterIP},
		Searches: []string{ns + ".svc.cluster.local", "svc.cluster.local", "cluster.local"}, Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: &ndots}}}
	createPod(t, cs, ns, p)
	p = waitPod(t, cs, ns, "app", 90*time.Second, "running", running)
	netns := podNetns(t, "lab-a1", p.Status.PodIP)

	r := dnsJSON(t, "-n", ns, "app", "kubernetes.default", "--load", "--dns-service", ns+"/capacity-dns", "--load-duration", "150s")
	l, c := r.Result.Load, r.Capacity
	if l == nil || c == nil || len(l.Servers) != 3 || len(l.Mix) == 0 {
		t.Fatalf("no capacity ramp of the Service and its two replicas: %+v %+v", l, c)
	}
	mix := writeMix(t, l.Mix)
	for _, s := range l.Servers {
		t.Logf("%s %s: knee %.0f q/s after %d steps (%s)", s.Address, s.Pod, s.SustainedQPS, len(s.Steps), s.Limit)
		if s.Limit != v1alpha1.LoadLimitDegraded || s.SustainedQPS < 100 {
			t.Errorf("%s: the ramp ended by %q at %.0f q/s, not at a knee: %+v", s.Address, s.Limit, s.SustainedQPS, s.Steps)
		}
	}
	// dnsperf beside each knee, judged by the report's own criteria on dnsperf's figures (each
	// side two runs of three), logged and not asserted: the reference's own verdicts on a
	// CPU-throttled CoreDNS flip by more than 20 % from minute to minute, and worsen after
	// overload (runs on 2026-12-05: dnsperf sustained 10 % above the knee found a minute before,
	// and lost 7 % at 20 % below another; one replica's knee 1,354 … 2,592 q/s over the day's
	// runs). The knee's arithmetic is held by TestDNSLoadFindsTheKnee against a server of known
	// capacity (mutation load-rate-inflated).
	for _, s := range l.Servers {
		below, above := dnsperfVerdict(t, netns, s.Address, mix, s.SustainedQPS/1.1, l), dnsperfVerdict(t, netns, s.Address, mix, s.SustainedQPS/0.9, l)
		t.Logf("%s: knee %.0f q/s; dnsperf at %s; at %s", s.Address, s.SustainedQPS, below, above)
	}
	ns0 := l.Servers[0]
	if want := ns0.SustainedQPS * float64(l.Lookups) / float64(len(l.Mix)); !ns0.Nameserver || c.SustainedQPS != ns0.SustainedQPS || math.Abs(c.Now.LookupsPerSecond-want) > 1e-6*want {
		t.Errorf("capacity %+v: want the nameserver's %.0f q/s as %.1f lookups/s", c, ns0.SustainedQPS, want)
	}
	if len(c.Fixed) == 0 || c.Fixed[0].LookupsPerSecond <= c.Now.LookupsPerSecond {
		t.Errorf("capacity %+v: want more lookups/s after the fix of a name searched with ndots 5", c)
	}
	interruptLoad(t, cs, ns)
}

// runningAgents is how many of the pod's ephemeral containers run.
func runningAgents(t *testing.T, cs kubernetes.Interface, ns, pod string) int {
	t.Helper()
	p, err := cs.CoreV1().Pods(ns).Get(context.Background(), pod, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, st := range p.Status.EphemeralContainerStatuses {
		if st.State.Running != nil {
			n++
		}
	}
	return n
}

// interruptLoad starts dns --load on the pod, interrupts it (SIGINT) once its agent has been
// running for a while (the ramp under way) and checks the agent stops within 5 s of the plugin's
// exit, not at its deadline minutes later.
func interruptLoad(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	cmd := exec.Command(plugin(t), "--kubeconfig", kubeconfigPath(), "dns", "-n", ns, "app", "kubernetes.default", "--load", "--dns-service", ns+"/capacity-dns")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill() }()
	for end := time.Now().Add(60 * time.Second); runningAgents(t, cs, ns, "app") == 0; time.Sleep(500 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal("no agent running within 60 s")
		}
	}
	time.Sleep(10 * time.Second) // the DNS probe (a few seconds), then the ramp
	_ = cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the plugin did not exit within 30 s of SIGINT")
	}
	exited := time.Now()
	for runningAgents(t, cs, ns, "app") > 0 {
		if time.Since(exited) > 5*time.Second {
			t.Fatalf("the agent still runs its ramp 5 s after the interrupted plugin exited")
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Logf("the agent stopped within %s of the plugin's exit", time.Since(exited).Round(10*time.Millisecond))
}

// writeMix writes the ramp's query mix as dnsperf's data file.
func writeMix(t *testing.T, mix []v1alpha1.DNSLoadQuery) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "mix")
	if err := reftools.WriteDNSMix(f, mix); err != nil {
		t.Fatal(err)
	}
	return f
}

// dnsperfVerdict is the majority of up to three dnsperf runs at rate, judged by the ramp's own
// criteria: the first run of the winning side, and why it degraded ("" when sustained).
func dnsperfVerdict(t *testing.T, netns, server, mix string, rate float64, l *v1alpha1.DNSLoad) string {
	t.Helper()
	in := func(name string, args ...string) *exec.Cmd {
		return exec.Command("nsenter", append([]string{"--net=" + netns, name}, args...)...)
	}
	var ok, bad []string
	for len(ok) < 2 && len(bad) < 2 {
		d, err := reftools.DNSPerfStep(in, server, mix, rate, l)
		if err != nil {
			t.Fatal(err)
		}
		if err := d.Fault(probes.LoadGeneratorShare); err != nil {
			return "not judged: " + err.Error() // logged only, as every verdict here
		}
		if why := d.Degraded(l); why != "" {
			bad = append(bad, d.String()+", degraded: "+why)
		} else {
			ok = append(ok, d.String()+", sustained")
		}
		time.Sleep(time.Second) // as the ramp settles after a degraded step
	}
	if len(ok) == 2 {
		return ok[0]
	}
	return bad[0]
}
