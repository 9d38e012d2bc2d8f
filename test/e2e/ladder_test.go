package e2e

import (
	"context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// ladderJSON runs `ladder` with -o json and decodes the report strictly.
func ladderJSON(t *testing.T, args ...string) *v1alpha1.LadderReport {
	t.Helper()
	r := runJSON[v1alpha1.LadderReport](t, append([]string{"ladder"}, args...)...)
	if r.Kind != "LadderReport" || r.APIVersion != v1alpha1.APIVersion || len(r.Rungs) == 0 || len(r.Figures) == 0 {
		t.Fatalf("required fields missing: %+v", r)
	}
	return r
}

// podNetns finds the network namespace of the pod with ip on a lab node (each node's
// containerd keeps its pods' namespaces under its own state directory).
func podNetns(t *testing.T, node, ip string) string {
	t.Helper()
	files, _ := filepath.Glob("/run/netbench-lab/" + node + "/containerd/io.containerd.grpc.v1.cri/netns/*")
	for _, f := range files {
		out, err := exec.Command("nsenter", "--net="+f, "ip", "-o", "addr", "show").Output()
		if err == nil && strings.Contains(string(out), " "+ip+"/") {
			return f
		}
	}
	t.Fatalf("no network namespace on %s holds %s", node, ip)
	return ""
}

// With the zone delay on (300 µs same zone, 2 ms cross zone, one way), a ladder against a pod
// in zone-b has the rungs same-node, same-zone and cross-zone zone-a, their RTT ordered, the
// cross-zone rung at least 3 ms above the same-zone one, each within reach of iputils ping run
// on the same pair in the same test, and nothing is left behind.
func TestLadderZoneDelay(t *testing.T) {
	cs, ns := lab(t)
	labScript(t, "delay", "300us", "2ms")
	t.Cleanup(func() { labScript(t, "delay", "off") })
	if _, err := cs.AppsV1().Deployments(ns).Create(context.Background(), deployment("api", "lab-b1", "netbench.lab/sample-app:1", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRollout(t, cs, ns, "api")
	// Pingers on each rung's node: ground truth from the same nodes to the same pod.
	nodes := map[string]string{"same-node": "lab-b1", "same-zone": "lab-b2", "cross-zone zone-a": "lab-a1"}
	for rung, node := range nodes {
		createPod(t, cs, ns, pod("ping-"+strings.Fields(rung)[0], node, "netbench.lab/pause:1", nil, nil))
	}

	r := ladderJSON(t, "-n", ns, "deploy/api", "--probes", "rtt", "--repeat", "2")
	var names []string
	p50 := map[string]float64{}
	for _, rung := range r.Rungs {
		names = append(names, rung.Name)
		if rung.Skipped != "" {
			t.Errorf("rung %s skipped: %s", rung.Name, rung.Skipped)
			continue
		}
		if rung.Node != nodes[rung.Name] || len(rung.Results) != 2 {
			t.Errorf("rung %s on %s with %d rounds, want %s and 2", rung.Name, rung.Node, len(rung.Results), nodes[rung.Name])
		}
		f := rung.Figures["icmp.p50"]
		p50[rung.Name] = f.Median
		t.Logf("%s (%s): icmp p50 %.0f µs [%.0f–%.0f] over %d rounds", rung.Name, rung.Node, f.Median, f.Min, f.Max, f.Samples)
	}
	if strings.Join(names, ",") != "same-node,same-zone,cross-zone zone-a" {
		t.Fatalf("rungs %v", names)
	}
	if !(p50["same-node"] <= p50["same-zone"] && p50["same-zone"] < p50["cross-zone zone-a"]) || p50["cross-zone zone-a"]-p50["same-zone"] < 3000 {
		t.Errorf("icmp p50 %v: want same-node ≤ same-zone < cross-zone, cross-zone ≥ same-zone + 3 ms", p50)
	}
	if d := r.Rungs[2].Figures["icmp.p50"].VsSameNode; d == nil || math.Abs(*d-(p50["cross-zone zone-a"]-p50["same-node"])) > 1 {
		t.Errorf("cross-zone difference from same-node %v", d)
	}
	api, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=api"})
	if err != nil || len(api.Items) != 1 {
		t.Fatalf("api pod: %v", err)
	}
	dstIP := api.Items[0].Status.PodIP
	for rung, node := range nodes {
		pinger := waitPod(t, cs, ns, "ping-"+strings.Fields(rung)[0], 60*time.Second, "running", running)
		ping := pingMedian(t, podNetns(t, node, pinger.Status.PodIP), dstIP, 30, "0.05")
		t.Logf("%s: ping median %.0f µs, netbench icmp p50 %.0f µs", rung, ping, p50[rung])
		if math.Abs(p50[rung]-ping) > pingBound(ping) {
			t.Errorf("%s: netbench icmp p50 %.0f µs, ping median %.0f µs on the same pair: more than 5 %% + 150 µs apart", rung, p50[rung], ping)
		}
	}
	noAgentPods(t, cs, ns)
	agentsEndedSoon(t, cs, ns, time.Now()) // by their own finish times (the kubelet reports late under load)
}

// Rungs left out are listed with the reason; a rung that fails in the middle (an admission
// policy refuses its client) and an interrupt in each phase leave no temporary pod behind and
// stop the server agent.
func TestLadderCleanup(t *testing.T) {
	cs, ns := lab(t) // alone: it holds agents to their lifetimes in seconds
	if _, err := cs.AppsV1().Deployments(ns).Create(context.Background(), deployment("api", "lab-b1", "netbench.lab/sample-app:1", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRollout(t, cs, ns, "api")

	t.Run("rungs left out are listed with the reason", func(t *testing.T) {
		r := ladderJSON(t, "-n", ns, "deploy/api", "--probes", "rtt", "--zones", "zone-c", "--nodes", "topology.kubernetes.io/zone=zone-b")
		got := map[string]string{}
		for _, rung := range r.Rungs {
			got[rung.Name] = rung.Skipped
		}
		if got["same-node"] != "" || got["same-zone"] != "" || got["cross-zone zone-a"] != "zone zone-a is not in --zones" {
			t.Errorf("rungs %v", got)
		}
		noAgentPods(t, cs, ns)
	})

	t.Run("error in the middle rung", func(t *testing.T) {
		// An admission policy refuses the second rung's client pod (name …-client-2-1).
		deny := denySecondRung(t, ns)
		defer deny()
		_, stderr, err := netbench(t, "ladder", "-n", ns, "deploy/api", "--probes", "rtt")
		exited := time.Now()
		if err == nil || !strings.Contains(stderr, "rung same-zone (node lab-b2)") || !strings.Contains(stderr, "second rung refused") {
			t.Errorf("err %v, stderr %s: want the same-zone rung's admission refusal", err, stderr)
		}
		noAgentPods(t, cs, ns)
		agentsEndedSoon(t, cs, ns, exited)
	})

	// With a Service and the host baseline, a run passes through every phase: plan, server,
	// host-network server, endpoint agents and temporary Service, rungs, cleanup.
	svc := `{"apiVersion":"v1","kind":"Service","metadata":{"name":"api"},"spec":{"selector":{"app":"api"},"ports":[{"port":80,"targetPort":8080}]}}`
	apply := exec.Command(labKubectl(), "--kubeconfig", kubeconfigPath(), "apply", "-n", ns, "-f", "-")
	apply.Stdin = strings.NewReader(svc)
	if out, err := apply.CombinedOutput(); err != nil {
		t.Fatalf("service: %v\n%s", err, out)
	}
	for _, after := range []time.Duration{300 * time.Millisecond, 1500 * time.Millisecond, 3 * time.Second, 4500 * time.Millisecond, 6 * time.Second, 9 * time.Second} {
		t.Run(fmt.Sprintf("interrupt after %s", after), func(t *testing.T) {
			stderr, _ := interruptAfter(t, after, "ladder", "-n", ns, "deploy/api", "--service", "svc/api",
				"--host-baseline", "--probes", "rtt,tcp", "--duration", "3s", "-v", "2")
			exited := time.Now()
			noAgentPods(t, cs, ns)
			// An agent injected before the signal may start after the plugin has gone.
			problems := agentsEndedLate(t, cs, ns, exited)
			if svcs, err := cs.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kubectl-netbench"}); err != nil || len(svcs.Items) != 0 {
				problems = append(problems, fmt.Sprintf("temporary Services left: %d (%v)", len(svcs.Items), err))
			}
			if t.Failed() || len(problems) > 0 {
				t.Logf("the plugin's stderr:\n%s", stderr) // before the problems: a log's tail shows them
			}
			for _, p := range problems {
				t.Error(p)
			}
		})
	}
}

// denySecondRung installs a ValidatingAdmissionPolicy that refuses, in ns, pods named like a
// ladder's second rung's client; the returned func removes it.
func denySecondRung(t *testing.T, ns string) func() {
	t.Helper()
	return denyPods(t, "deny-second-rung-"+ns, ns, "!object.metadata.name.endsWith('-client-2-1')", "second rung refused by policy")
}

// denyPods installs a ValidatingAdmissionPolicy named name that refuses, in ns, the pods whose
// CREATE makes the CEL expression false, with message; the returned func removes it.
func denyPods(t *testing.T, name, ns, expression, message string) func() {
	t.Helper()
	policy := fmt.Sprintf(`apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: %[1]s}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules: [{apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}]
  validations:
  - expression: %[3]q
    message: %[4]q
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: %[1]s}
spec:
  policyName: %[1]s
  validationActions: [Deny]
  matchResources:
    namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: %[2]s}}
`, name, ns, expression, message)
	kubectl := func(stdin string, args ...string) {
		cmd := exec.Command(labKubectl(), append([]string{"--kubeconfig", kubeconfigPath()}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("kubectl %v: %v\n%s", args, err, out)
		}
	}
	kubectl(policy, "apply", "-f", "-")
	time.Sleep(2 * time.Second) // the API server loads policies asynchronously
	return func() {
		kubectl("", "delete", "validatingadmissionpolicybinding,validatingadmissionpolicy", name, "--ignore-not-found")
	}
}

// applyManifest applies a file of the lab's manifests into ns.
func applyManifest(t *testing.T, ns, file string) {
	t.Helper()
	out, err := exec.Command(labKubectl(), "--kubeconfig", kubeconfigPath(), "apply", "-n", ns, "-f", "../../hack/lab/manifests/"+file).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply %s: %v\n%s", file, err, out)
	}
}

// The lab's zoned workload (one replica per node) behind a Service without traffic settings and
// one with PreferSameZone: the EndpointSlice controller writes zone hints for the latter; from a
// zone-a rung, the first reaches both zones (neither under 20 % of 200 connections) and the
// second keeps at least 95 % in zone-a; both report the ClusterIP against DST's pod IP, the
// dataplane's cost per endpoint and the routing's effect; the
// temporary Service and the agents are gone afterwards.
func TestLadderService(t *testing.T) {
	cs, ns := lab(t)
	zonedServices(t, cs, ns)
	// The same measurements with kube-proxy in each mode the lab's kernel has (IPVS: no
	// ip_vs module), the report naming the mode; the lab is left in iptables mode.
	t.Cleanup(func() { labScript(t, "proxy-mode", "iptables") })
	for _, mode := range []string{"iptables", "nftables"} {
		labScript(t, "proxy-mode", mode)
		t.Run(mode, func(t *testing.T) { ladderServiceSubtests(t, cs, ns, mode) })
	}
}

func ladderServiceSubtests(t *testing.T, cs kubernetes.Interface, ns, mode string) {
	t.Run("runs", func(t *testing.T) { ladderServiceRuns(t, cs, ns, mode) })
	t.Run("nothing left", func(t *testing.T) {
		svcs, err := cs.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kubectl-netbench"})
		if err != nil || len(svcs.Items) != 0 {
			t.Errorf("temporary Services left: %v %v", svcs, err)
		}
		noAgentPods(t, cs, ns)
		agentsEndedSoon(t, cs, ns, time.Now())
	})
}

// ladderServiceRuns runs `ladder svc/…` on both zoned Services at once and checks where their
// connections landed.
func ladderServiceRuns(t *testing.T, cs kubernetes.Interface, ns, mode string) {
	for _, tc := range []struct {
		svc   string
		check func(zoneA map[string]float64) bool
		want  string
	}{
		{"zoned-any", func(z map[string]float64) bool { return z["zone-a"] >= 20 && z["zone-b"] >= 20 }, "both zones at least 20 %"},
		{"zoned-close", func(z map[string]float64) bool { return z["zone-a"] >= 95 }, "at least 95 % in zone-a"},
	} {
		// The two Services' runs go at once (they share the endpoint pods, each run its own
		// ephemeral containers and Service copy): the spread they check counts connections and
		// times nothing.
		t.Run(tc.svc, func(t *testing.T) {
			siblings(t)
			start := time.Now()
			r := ladderJSON(t, "-n", ns, "svc/"+tc.svc, "--probes", "rtt", "--duration", "1s")
			if r.Service == nil || r.Service.MeasuredEndpoints != 4 || r.Service.SpreadSkipped != "" {
				t.Fatalf("service %+v", r.Service)
			}
			if d := r.Service.Dataplane; d == nil || d.Mode != mode || d.Proxy != "kube-proxy" {
				t.Errorf("dataplane %+v, want kube-proxy in %s mode", d, mode)
			}
			// The lab's Services are dual-stack: each ClusterIP's connections land by the same rule.
			if len(r.Service.ClusterIPs) != 2 || r.Service.IPFamilyPolicy != "PreferDualStack" {
				t.Errorf("Service %s: ClusterIPs %v (%s), want one of each family", tc.svc, r.Service.ClusterIPs, r.Service.IPFamilyPolicy)
			}
			seen := false
			for _, rung := range r.Rungs {
				for fam, sp := range map[string]*v1alpha1.RungSpread{"IPv4": rung.Spread, "IPv6": rung.SpreadSecondary} {
					if sp == nil {
						t.Errorf("rung %s: no %s spread; its app-port probes: %s; warnings: %q; the Service: %+v", rung.Name, fam, appPortSummary(rung), r.Warnings, r.Service)
						continue
					}
					t.Logf("%s from %s (%s) through %s %s: %v of %d answered", tc.svc, rung.Name, rung.Zone, sp.IPFamily, sp.ClusterIP, sp.ZonePercent, sp.Answered)
					if sp.Answered < 190 || sp.IPFamily != fam {
						t.Errorf("rung %s, %s (%s): %d of %d connections answered", rung.Name, fam, sp.IPFamily, sp.Answered, sp.Connections)
					}
					if rung.Zone == "zone-a" {
						seen = true
						if !tc.check(sp.ZonePercent) {
							t.Errorf("from %s in zone-a through %s: %v, want %s; kube-proxy on %s about Services now gone:\n%s", rung.Name, fam, sp.ZonePercent, tc.want,
								rung.Node, strings.Join(proxyTopologyLog(t, cs, rung.Node, start), "\n"))
						}
					}
				}
				for _, f := range []string{"svc.vs-dst-tcp-rtt.p50", "svc.dataplane-tcp-rtt.p50", "svc.routing-tcp-rtt.p50", "svc-tcp-rtt-v6.p50", "svc-v6.dataplane-tcp-rtt.p50", "svc-v6.routing-tcp-rtt.p50"} {
					if _, ok := rung.Figures[f]; !ok {
						t.Errorf("rung %s: no figure %s", rung.Name, f)
					}
				}
			}
			if !seen {
				t.Error("no rung in zone-a")
			}
		})
	}
}

// zonedServices applies the lab's zoned workload and its two Services into ns and waits until
// the EndpointSlice of zoned-close carries a zone hint on each of its 4 endpoints.
func zonedServices(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	applyManifest(t, ns, "zoned.yaml")
	waitRollout(t, cs, ns, "zoned")
	err := waitFor(30*time.Second, func() bool {
		slices, err := cs.DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "kubernetes.io/service-name=zoned-close"})
		if err != nil || len(slices.Items) == 0 {
			return false
		}
		n := 0
		for _, e := range slices.Items[0].Endpoints {
			if e.Hints != nil && len(e.Hints.ForZones) == 1 && e.Zone != nil && e.Hints.ForZones[0].Name == *e.Zone {
				n++
			}
		}
		return n == 4
	})
	if err != nil {
		t.Fatal("the EndpointSlice of zoned-close has no zone hints on its 4 endpoints")
	}
}

// proxyTopologyLog returns the topology decisions kube-proxy on node logged since start about
// ClusterIPs no Service has now (the temporary Services of the run), from the lab's log.
func proxyTopologyLog(t *testing.T, cs kubernetes.Interface, node string, start time.Time) []string {
	t.Helper()
	svcs, err := cs.CoreV1().Services("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	known := map[string]bool{}
	for _, s := range svcs.Items {
		known[s.Spec.ClusterIP] = true
	}
	data, err := os.ReadFile("/var/lib/netbench-lab/logs/kube-proxy-" + node + ".log")
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		_, rest, ok := strings.Cut(line, ` service="`)
		ip, _, _ := strings.Cut(rest, ":")
		if ok && !known[ip] && !klogTime(line, start.Year()).Before(start.Add(-time.Second)) {
			out = append(out, line)
		}
	}
	return out
}

// klogTime reads the time of a klog line ("I1202 16:38:58.874887 …", UTC here) in year.
func klogTime(line string, year int) time.Time {
	f := strings.Fields(line)
	if len(f) < 2 || len(f[0]) != 5 {
		return time.Time{}
	}
	at, err := time.Parse("0102 15:04:05.000000", f[0][1:]+" "+f[1])
	if err != nil {
		return time.Time{}
	}
	return at.AddDate(year, 0, 0)
}

// waitFor polls cond every 300 ms until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) error {
	end := time.Now().Add(d)
	for !cond() {
		if time.Now().After(end) {
			return fmt.Errorf("not within %s", d)
		}
		time.Sleep(300 * time.Millisecond)
	}
	return nil
}

// --host-baseline: in a namespace that allows hostNetwork, a node-to-node rung on the
// cross-zone pair of nodes, set beside the pod path on the same nodes; in a restricted one,
// the rung is skipped with the Pod Security reason and the rest is measured.
func TestLadderHostBaseline(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	if _, err := cs.AppsV1().Deployments(ns).Create(context.Background(), deployment("api", "lab-b1", "netbench.lab/sample-app:1", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRollout(t, cs, ns, "api")

	r := ladderJSON(t, "-n", ns, "deploy/api", "--probes", "rtt", "--host-baseline")
	host := r.Rungs[len(r.Rungs)-1]
	if host.Name != "host-network zone-a" || host.Skipped != "" || host.Node != "lab-a1" || host.Baseline != "cross-zone zone-a" {
		t.Fatalf("host rung %+v", host)
	}
	pod, ok := host.VsBaseline["tcp-rtt.p50"]
	t.Logf("node to node lab-b1 ↔ lab-a1: tcp-rtt p50 %.0f µs; the pod network adds %.0f µs", host.Figures["tcp-rtt.p50"].Median, pod)
	if !ok || host.Figures["tcp-rtt.p50"].Median <= 0 {
		t.Errorf("host rung figures %v, vs baseline %v", host.Figures, host.VsBaseline)
	}
	noAgentPods(t, cs, ns)

	restrict(t, cs, ns)
	r = ladderJSON(t, "-n", ns, "deploy/api", "--probes", "rtt", "--host-baseline")
	host = r.Rungs[len(r.Rungs)-1]
	if host.Class != "host-network" || !strings.Contains(host.Skipped, "Pod Security") || !strings.Contains(host.Skipped, "hostNetwork") {
		t.Errorf("in a restricted namespace the host rung is %+v, want skipped with the Pod Security reason", host)
	}
	if r.Rungs[0].Figures["tcp-rtt.p50"].Median <= 0 {
		t.Errorf("the other rungs were not measured: %+v", r.Rungs[0])
	}
	noAgentPods(t, cs, ns)
	agentsEndedSoon(t, cs, ns, time.Now()) // by their own finish times (the kubelet reports late under load)
}

// appPortSummary says what became of a rung's probes through the Service, round by round.
func appPortSummary(rung v1alpha1.LadderRung) string {
	var parts []string
	for _, round := range rung.Results {
		for _, p := range round.AppPort {
			switch {
			case p.Skipped != "":
				parts = append(parts, fmt.Sprintf("round %d %s skipped: %s", round.Round, p.Name, p.Skipped))
			case p.Spread != nil:
				parts = append(parts, fmt.Sprintf("round %d %s: %d of %d answered", round.Round, p.Name, p.Spread.Answered, p.Spread.Connections))
			default:
				parts = append(parts, fmt.Sprintf("round %d %s: no spread block", round.Round, p.Name))
			}
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "; ")
}
