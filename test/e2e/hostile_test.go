package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"
)

// hostileCase is one bad input or fault: the exact line the user must see (a substring of the
// one line on stderr), and a non-zero exit.
type hostileCase struct {
	name string
	args []string
	want string
}

// badInputs are refused before anything is created; ns is the test namespace.
func badInputs(ns string) []hostileCase {
	path := func(extra ...string) []string {
		return append([]string{"path", "-n", ns, "deploy/client", "sts/db"}, extra...)
	}
	dns := func(extra ...string) []string { return append([]string{"dns", "-n", ns, "deploy/client"}, extra...) }
	ladder := func(extra ...string) []string { return append([]string{"ladder", "-n", ns, "sts/db"}, extra...) }
	matrix := func(extra ...string) []string { return append([]string{"matrix", "-n", ns}, extra...) }
	long := strings.Repeat("a", 64)
	return []hostileCase{
		{"mode unknown", path("--mode", "daemonset"), `--mode "daemonset": want ephemeral, pod or auto`},
		{"profile unknown", path("--profile", "slow"), `--profile "slow": want quick or seed`},
		{"probe unknown", path("--probes", "rtt,quic"), `--probes: unknown probe "quic"`},
		{"probes empty", path("--probes", ""), "--probes is empty"},
		{"output unknown", path("-o", "xml"), `--output "xml": want json, yaml, openmetrics or junit`},
		{"fail-if syntax", path("--fail-if", "rtt.p50 >> 1ms"), `--fail-if "rtt.p50 >> 1ms": column 10: unexpected ">"`},
		{"fail-if empty", path("--fail-if", ""), `--fail-if "": column 1: the condition ends here`},
		{"fail-if unit", path("--fail-if", "rtt.p50 > 2 parsecs"), `column 13: unexpected "parsecs"`},
		{"fail-if unknown figure", path("--probes", "rtt", "--fail-if", "http.p50 > 1ms"), `unknown figure "http.p50" (this run measures: `},
		{"fail-if units mixed", path("--fail-if", "tcp-1.gbps > 2ms"), `compares a bit rate with a time`},
		{"fail-if too long", path("--fail-if", strings.Repeat("x", 600)+" > 1"), "longer than 512 characters"},
		{"junit without fail-if", path("-o", "junit"), "-o junit writes one test case per --fail-if condition"},
		{"dns fail-if unknown name", dns("--fail-if", "dns.example.org.queries > 2"), `unknown figure "dns.example.org.queries"`},
		{"dns lookup family unknown", dns("--lookup-family", "inet6"), `--lookup-family "inet6": want both, 4 or 6`},
		{"dns race of one family", dns("--lookup-family", "6", "--race", "100"), "--race with --lookup-family 6: a lookup of one family sends one query per name"},
		{"diff missing file", []string{"diff", "/nonexistent/a.json", "/nonexistent/b.json"}, "open /nonexistent/a.json: no such file or directory"},
		{"diff not a report", []string{"diff", "/etc/hostname", "/etc/hostname"}, "/etc/hostname: not a kubectl-netbench report"},
		{"diff a directory", []string{"diff", "/tmp", "/tmp"}, "is a directory"},
		{"diff tolerance NaN", []string{"diff", "a", "b", "--tolerance", "NaN"}, "--tolerance NaN: want 0-1000 (percent)"},
		{"diff regressed negative", []string{"diff", "a", "b", "--fail-if-regressed", "-5"}, "--fail-if-regressed -5: want a percentage of 0 or more"},
		{"diff output", []string{"diff", "a", "b", "-o", "html"}, `--output "html": want json or yaml`},
		{"diff one file", []string{"diff", "a"}, "accepts 2 arg(s), received 1"},
		{"image empty", path("--image", ""), "--image is empty"},
		{"matrix scope unknown", matrix("--scope", "racks"), `--scope "racks": want zones, nodes or sample`},
		{"matrix sample with scope", matrix("--scope", "nodes", "--sample", "3"), "--sample 3 with --scope nodes: --sample is its own scope"},
		{"matrix sample negative", matrix("--sample", "-4"), "--sample -4: want 1-1000000 pairs"},
		{"matrix pairs per cell", matrix("--pairs-per-cell", "0"), "--pairs-per-cell 0: want 1-100"},
		{"matrix concurrency", matrix("--concurrency", "501"), "--concurrency 501: want 1-500"},
		{"matrix count", matrix("--count", "1"), "--count 1: want 5-1000"},
		{"matrix job too long", matrix("--count", "1000", "--interval", "100ms"), "take 3m20s per pair: want at most 50s"},
		{"matrix throughput", matrix("--throughput", "1ms"), "--throughput 1ms: want 500ms-30s"},
		{"matrix outlier factor", matrix("--outlier-factor", "NaN"), "--outlier-factor NaN: want 1.05-100"},
		{"matrix agent port", matrix("--agent-port", "80"), "--agent-port 80: want 1024-65535"},
		{"matrix nodes selector", matrix("--nodes", "a in ("), `--nodes "a in (": `},
		{"matrix zones none", matrix("--zones", "zone-x"), "no pair of nodes to measure: 0 of 4 nodes are usable (left out: lab-a1 is not in --zones;"},
		{"matrix nodes none", matrix("--nodes", "pool=none"), "no pair of nodes to measure: 0 of 4 nodes are usable"},
		{"matrix max pairs", matrix("--scope", "nodes", "--max-pairs", "5"), "every pair of 4 nodes is 12 pairs, above --max-pairs 5"},
		{"matrix html dry run", matrix("-o", "html", "--dry-run"), "--output html with --dry-run"},
		{"matrix tolerations both", matrix("--tolerate-all-taints", "--tolerations-from", "deploy/client"), "choose one"},
		{"matrix tolerations missing", matrix("--tolerations-from", "deploy/missing"), "--tolerations-from: deploy/missing not found"},
		{"matrix fail-if unknown", matrix("--fail-if", "rtt.p50 > 1ms"), `unknown figure "rtt.p50" (this run measures: cross-zone.rtt.p50`},
		{"matrix namespace missing", []string{"matrix", "-n", "no-such-namespace"}, `namespace "no-such-namespace" (-n) not found`},
		{"matrix args", matrix("lab-a1"), `unknown command "lab-a1"`},
		{"port negative", path("--port", "-1"), "--port -1: want 1-65535"},
		{"port too big", path("--port", "70000"), "--port 70000: want 1-65535"},
		{"http-path without port", path("--http-path", "/x"), "--http-path needs --port"},
		{"http-path relative", path("--port", "80", "--http-path", "x"), `--http-path "x": must start with /`},
		{"http-path CRLF", path("--port", "80", "--http-path", "/a\r\nX-Evil: 1"), "--http-path \"/a\\r\\nX-Evil: 1\": no spaces or control characters"},
		{"http-path space", path("--port", "80", "--http-path", "/a b"), "no spaces or control characters"},
		{"duration too short", path("--duration", "10ms"), "--duration 10ms: want 1s to 1h"},
		{"duration too long", path("--duration", "2h"), "--duration 2h0m0s: want 1s to 1h"},
		{"duration negative", path("--duration", "-5s"), "--duration -5s: want 1s to 1h"},
		{"interval too short", path("--interval", "100ms"), "--interval 100ms: want at least 1s"},
		{"interval beyond duration", path("--duration", "2s", "--interval", "5s"), "--interval 5s is longer than --duration 2s"},
		{"streams too many", path("--streams", "129"), "--streams 129: want 1-128"},
		{"streams negative", path("--streams", "-2"), "--streams -2: want 1-128"},
		{"connections too many", path("--connections", "100000"), "--connections 100000: want 1-1024"},
		{"qps negative", path("--qps", "-1"), "--qps -1: want 1-1e+06"},
		{"qps NaN", path("--qps", "NaN"), "--qps NaN: want 1-1e+06"},
		{"qps infinite", path("--qps", "+Inf"), "--qps +Inf: want 1-1e+06"},
		{"price NaN", path("--price-per-gb", "NaN"), "--price-per-gb NaN: want a price from 0 to 1000 USD"},
		{"price negative", path("--price-per-gb", "-0.01"), "--price-per-gb -0.01: want a price"},
		{"price infinite", path("--price-per-gb", "Inf"), "--price-per-gb +Inf: want a price"},
		{"start-timeout zero", path("--start-timeout", "0s"), "--start-timeout 0s: want 1s to 1h"},
		{"start-timeout negative", path("--start-timeout", "-1s"), "--start-timeout -1s: want 1s to 1h"},
		{"agent-resources bad name", path("--mode", "pod", "--agent-resources", "gpu=1"), `--agent-resources "gpu=1": want cpu=Q,memory=Q`},
		{"agent-resources bad quantity", path("--mode", "pod", "--agent-resources", "cpu=lots"), `--agent-resources "cpu=lots": cpu=lots: not a positive quantity`},
		{"one argument", []string{"path", "-n", ns, "deploy/client"}, "accepts 2 arg(s), received 1"},
		{"three arguments", []string{"path", "-n", ns, "a", "b", "c"}, "accepts 2 arg(s), received 3"},
		{"target too many slashes", []string{"path", "-n", ns, "a/b/c/d", "sts/db"}, "want POD, TYPE/NAME or NAMESPACE/TYPE/NAME"},
		{"target empty name", []string{"path", "-n", ns, "deploy/", "sts/db"}, `target "deploy/": want TYPE/NAME`},
		{"target empty namespace", []string{"path", "-n", ns, "//db", "sts/db"}, "want NAMESPACE/TYPE/NAME"},
		{"unknown resource type", []string{"path", "-n", ns, "frobnicator/x", "sts/db"}, `the server doesn't have a resource type "frobnicator"`},
		{"unknown flag", path("--frobnicate"), "unknown flag: --frobnicate"},
		{"dns resolver unknown", dns("--resolver", "bind"), `--resolver: unknown resolver "bind"`},
		{"dns repeats zero", dns("--repeats", "0"), "--repeats 0: want 1-1000"},
		{"dns repeats huge", dns("--repeats", "100000"), "--repeats 100000: want 1-1000"},
		{"dns observe negative", dns("--observe", "-1s"), "--observe -1s: want up to 10m"},
		{"dns service without namespace", dns("--dns-service", "kube-dns"), `--dns-service "kube-dns": want NAMESPACE/NAME of a Service`},
		{"dns lookups per second negative", dns("--lookups-per-second", "-1"), "--lookups-per-second -1: want 0-1e+06"},
		{"dns lookups per second NaN", dns("--lookups-per-second", "NaN"), "--lookups-per-second NaN: want 0-1e+06"},
		{"dns race negative", dns("--race", "-1"), "--race -1: want 0-10000 lookups"},
		{"dns race too many", dns("--race", "10001"), "--race 10001: want 0-10000 lookups"},
		{"dns observe too long", dns("--observe", "1h"), "--observe 1h0m0s: want up to 10m"},
		{"dns what-if ndots", dns("--what-if-ndots", "16"), "--what-if-ndots 16: want 0-15"},
		{"dns load ceiling without --load", dns("--load-max-qps", "500"), "--load-max-qps: the capacity ramp runs only with --load (it puts load on the shared cluster DNS)"},
		{"dns load duration without --load", dns("--load-duration", "10s"), "--load-duration: the capacity ramp runs only with --load"},
		{"dns load p99 without --load", dns("--load-p99", "5ms"), "--load-p99: the capacity ramp runs only with --load"},
		{"dns load ceiling too high", dns("--load", "--load-max-qps", "1e6"), "--load-max-qps 1e+06: want 100-100000 queries per second"},
		{"dns load ceiling NaN", dns("--load", "--load-max-qps", "NaN"), "--load-max-qps NaN: want 100-100000"},
		{"dns load too long", dns("--load", "--load-duration", "1h"), "--load-duration 1h0m0s: want 5s-10m0s"},
		{"dns load p99 past the timeout", dns("--load", "--load-p99", "2s"), "--load-p99 2s: want 100µs-900ms"},
		{"dns load with observe", dns("--load", "--observe", "5s"), "--load: not with --observe"},
		{"dns name with space", dns("a b"), `name "a b" is not a DNS name: label "a b" holds ' '`},
		{"dns name with slash", dns("a/b"), `name "a/b" is not a DNS name`},
		{"dns name empty label", dns("a..b"), `name "a..b" is not a DNS name: an empty label`},
		{"dns name too long", dns(strings.Repeat("abcdefghi.", 26)), "is not a DNS name: 259 characters, more than 253"},
		{"dns label too long", dns(long + ".com"), "has 64 characters, more than 63"},
		{"dns name escape", dns("a\x1b[31m.com"), `is not a DNS name`},
		{"dns name with colon", dns("a:b"), `name "a:b" is not a DNS name: label "a:b" holds ':'`},
		{"dns external-name", dns("--external-name", "bad name"), `--external-name "bad name" is not a DNS name`},
		{"dns cluster-domain", dns("--cluster-domain", "a..b"), `--cluster-domain "a..b" is not a DNS name`},
		{"dns output", dns("-o", "html"), `--output "html": want json, yaml, openmetrics or junit`},
		{"dns no target", []string{"dns", "-n", ns}, "requires at least 1 arg(s)"},
		{"cleanup with args", []string{"cleanup", "-n", ns, "x"}, `unknown command "x"`},
		{"path output html", path("-o", "html"), `--output "html": want json, yaml, openmetrics or junit`},
		{"ladder repeat zero", ladder("--repeat", "0"), "--repeat 0: want 1-20"},
		{"ladder repeat huge", ladder("--repeat", "1000"), "--repeat 1000: want 1-20"},
		{"ladder nodes selector", ladder("--nodes", "pool=(gpu"), `--nodes "pool=(gpu": `},
		{"ladder service not a service", ladder("--service", "deploy/x"), `--service "deploy/x": want svc/NAME or NAMESPACE/svc/NAME`},
		{"ladder max-endpoints", ladder("--max-endpoints", "0"), "--max-endpoints 0: want 1-100"},
		{"ladder connections-per-rung", ladder("--connections-per-rung", "5"), "--connections-per-rung 5: want 10-10000"},
		{"ladder output", ladder("-o", "xml"), `--output "xml": want json, yaml, openmetrics, junit or html`},
		{"ladder fail-if unknown rung", ladder("--probes", "rtt", "--fail-if", "cross-region.rtt.p50 > 1ms"), `unknown figure "cross-region.rtt.p50"`},
		{"ladder streams", ladder("--streams", "500"), "--streams 500: want 1-128"},
		{"ladder no target", []string{"ladder", "-n", ns}, "accepts 1 arg(s), received 0"},
		{"ladder two targets", []string{"ladder", "-n", ns, "a", "b"}, "accepts 1 arg(s), received 2"},
	}
}

// faults need the cluster: missing objects, pods that cannot be measured, policies.
func faults(ns string) []hostileCase {
	return []hostileCase{
		{"pod not found", []string{"path", "-n", ns, "nosuchpod", "sts/db"}, `SRC: pods/nosuchpod not found in namespace "` + ns + `"`},
		{"deployment not found", []string{"path", "-n", ns, "deploy/client", "deploy/nope"}, `DST: deploy/nope not found in namespace "` + ns + `"`},
		{"namespace not found", []string{"path", "-n", ns, "deploy/client", "no-such-ns/deploy/x"}, `not found in namespace "no-such-ns"`},
		{"same pod", []string{"path", "-n", ns, "deploy/client", "deploy/client"}, "are the same pod " + ns + "/client-"},
		{"same pod by two names", []string{"path", "-n", ns, "peer", "pod/peer"}, "SRC peer and DST pod/peer are the same pod " + ns + "/peer"},
		{"service selects nothing", []string{"path", "-n", ns, "deploy/client", "svc/orphan"}, "svc/orphan in namespace \"" + ns + "\" selects no pods (0 replicas, or a selector that matches nothing"},
		{"deployment scaled to zero", []string{"path", "-n", ns, "deploy/client", "deploy/zero"}, "deploy/zero in namespace \"" + ns + "\" selects no pods"},
		{"pod pending", []string{"path", "-n", ns, "stuck", "sts/db"}, "is Pending, not Running"},
		{"no running pod behind", []string{"path", "-n", ns, "deploy/client", "deploy/stuckdeploy"}, "has 1 pods and none is running"},
		{"host network path", []string{"path", "-n", ns, "hostnet", "sts/db"}, "uses the host network: it would measure the node's network, not a pod path (pass --allow-host-network"},
		{"host network dns", []string{"dns", "-n", ns, "hostnet"}, "(pass --allow-host-network"},
		{"no such container", []string{"path", "-n", ns, "deploy/client", "sts/db", "--dst-container", "nope"}, `has no container "nope"`},
		{"dns no such container", []string{"dns", "-n", ns, "deploy/client", "-c", "nope"}, `has no container "nope"`},
		{"unknown context", []string{"path", "--context", "no-such-context", "-n", ns, "peer", "sts/db"}, "no-such-context"},
		{"image cannot be pulled", []string{"path", "-n", ns, "deploy/client", "sts/db", "--probes", "rtt", "--image", "netbench.lab/INVALID:x", "--start-timeout", "20s"},
			"cannot be pulled on node"},
		// Either the kubelet has said it cannot pull the image within the 3 s, or the timeout
		// says so first, naming the image to check (CI saw the kubelet slower than 3 s).
		{"image never starts (start timeout)", []string{"path", "-n", ns, "deploy/client", "sts/db", "--probes", "rtt", "--image", "netbench.lab/absent:1", "--mode", "pod", "--start-timeout", "3s"},
			"netbench.lab/absent:1"},
		{"app port closed", []string{"path", "-n", ns, "deploy/client", "sts/db", "--probes", "rtt", "--port", "9"},
			"nothing accepts connections on " + ns + "/db-0 port 9"},
		{"quota requires limits", []string{"path", "-n", ns + "-quota", "quota-client", "quota-server", "--mode", "pod", "--probes", "rtt"},
			"admission refused the agent: "},
	}
}

func TestHostileInputs(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	workloads(t, cs, ns)
	hostileFixtures(t, cs, ns)
	cases := append(badInputs(ns), faults(ns)...)
	if len(cases) < 60 {
		t.Fatalf("%d cases; the suite keeps at least 60", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, err := netbench(t, tc.args...)
			ee, ok := err.(*exec.ExitError)
			if !ok || ee.ExitCode() == 0 {
				t.Fatalf("exit %v, want non-zero; stdout:\n%s\nstderr:\n%s", err, out, stderr)
			}
			if ee.ExitCode() != 1 {
				t.Errorf("exit code %d, want 1", ee.ExitCode())
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr:\n  %s\nwant it to contain:\n  %s", strings.TrimSpace(stderr), tc.want)
			}
			if n := strings.Count(strings.TrimSpace(stderr), "\n"); n > 0 && !strings.Contains(stderr, "Usage:") {
				t.Errorf("want one line on stderr, got %d:\n%s", n+1, stderr)
			}
		})
	}
	noAgentPods(t, cs, ns, ns+"-quota")
	agentsTerminated(t, cs, ns, 15*time.Second)
	noServices(t, cs, ns)
}

// hostileFixtures adds the objects the faults need next to the sample workloads.
func hostileFixtures(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	stuck := pod("stuck", "lab-a1", "netbench.lab/does-not-exist:1", nil, nil)
	stuck.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	createPod(t, cs, ns, stuck)
	hn := pod("hostnet", "lab-a2", "netbench.lab/sample-app:1", []string{"--http", ":18081", "--grpc", ":19091"}, nil)
	hn.Spec.HostNetwork = true
	createPod(t, cs, ns, hn)
	orphan := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "orphan"}, Spec: corev1.ServiceSpec{
		Selector: map[string]string{"app": "nothing"}, Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}}}}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	zero := deployment("zero", "lab-a1", "netbench.lab/sample-app:1", nil)
	var none int32
	zero.Spec.Replicas = &none
	sd := deployment("stuckdeploy", "lab-a1", "netbench.lab/does-not-exist:1", nil)
	sd.Spec.Template.Spec.Containers[0].ImagePullPolicy = corev1.PullNever
	for _, d := range []any{zero, sd} {
		if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d.(*appsDeployment), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	quotaNamespace(t, cs, ns+"-quota")
	waitPod(t, cs, ns, "hostnet", 60*time.Second, "running", running)
}

// quotaNamespace has a ResourceQuota that requires CPU limits (agents get none by default: a
// CFS quota would throttle their probes), and two pods to measure.
func quotaNamespace(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	ctx := context.Background()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{}) })
	for _, name := range []string{"quota-client", "quota-server"} {
		p := pod(name, "lab-a1", "netbench.lab/sample-app:1", nil, nil)
		p.Spec.Containers[0].Resources = limits("64Mi")
		p.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resourceQuantity("100m")
		createPod(t, cs, ns, p)
		waitPod(t, cs, ns, name, 60*time.Second, "running", running)
	}
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "needs-limits"}, Spec: corev1.ResourceQuotaSpec{
		Hard: corev1.ResourceList{corev1.ResourceLimitsCPU: resourceQuantity("4")}}}
	if _, err := cs.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The quota controller must have computed its status before it refuses pods.
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		rq, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, "needs-limits", metav1.GetOptions{})
		return err == nil && rq.Status.Hard != nil, nil
	})
}

// noServices fails if a run left a netbench Service behind.
func noServices(t *testing.T, cs kubernetes.Interface, ns string) {
	t.Helper()
	svcs, err := cs.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=kubectl-netbench"})
	if err != nil || len(svcs.Items) > 0 {
		t.Errorf("netbench Services remain in %s: %v", ns, err)
	}
}

// SIGINT at ten moments spread over the first 3 s of a run: each time the plugin exits saying
// it was interrupted, and every agent it started has stopped soon after the later of the
// plugin's exit and its own start (one injected before the signal may start after the plugin
// has gone): a server within 5 s (nobody renews its lease), a client within 10 s (nobody
// hands it its job).
func TestInterruptAtAnyMoment(t *testing.T) {
	cs, ns := lab(t) // alone: it holds agents to their lifetimes in seconds
	workloads(t, cs, ns)
	for i := 0; i < 10; i++ {
		after := time.Duration(i) * 300 * time.Millisecond
		t.Run(after.String(), func(t *testing.T) {
			stderr, err := interruptAfter(t, after, "path", "-n", ns, "deploy/client", "svc/web", "--probes", "rtt,tcp", "--duration", "20s")
			exited := time.Now()
			if err == nil {
				t.Errorf("exit 0 after SIGINT; stderr %q", stderr)
			}
			agentsEndedSoon(t, cs, ns, exited)
			noAgentPods(t, cs, ns)
		})
	}
}

// agentsEndedSoon fails unless every netbench ephemeral container in ns has ended soon after
// the later of exited (the plugin's exit) and its own readiness (its ready event, as the
// kubelet timestamped it; its start when it never got ready): a client (a runner awaiting its
// job) within 10 s, any other agent (a server or endpoint: its lease) within 5 s. The agent's
// shutdown and the whole seconds of container times allow one second more.
func agentsEndedSoon(t *testing.T, cs kubernetes.Interface, ns string, exited time.Time) {
	t.Helper()
	for _, late := range agentsEndedLate(t, cs, ns, exited) {
		t.Error(late)
	}
}

// agentsEndedLate says which agents did not end as soon as agentsEndedSoon wants.
func agentsEndedLate(t *testing.T, cs kubernetes.Interface, ns string, exited time.Time) []string {
	t.Helper()
	agentsTerminated(t, cs, ns, 40*time.Second)
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var lates []string
	for _, p := range pods.Items {
		for _, s := range p.Status.EphemeralContainerStatuses {
			end := s.State.Terminated
			if !strings.HasPrefix(s.Name, "netbench-") || end == nil {
				continue
			}
			from := exited.Truncate(time.Second)
			if ready := readyAt(t, cs, ns, p.Name, s.Name, end.StartedAt.Time); ready.After(from) {
				from = ready
			}
			within := 5 * time.Second
			if strings.Contains(s.Name, "-client") {
				within = 10 * time.Second
			}
			if late := end.FinishedAt.Sub(from); late > within+time.Second {
				lates = append(lates, fmt.Sprintf("%s/%s (started %s, plugin exited %s) ended %s later (%s: %s), want within %s",
					p.Name, s.Name, end.StartedAt.UTC().Format(time.TimeOnly), exited.UTC().Format(time.TimeOnly), late, end.Reason, finalLine(end.Message), within))
			}
		}
	}
	return lates
}

// readyAt is when an agent container printed its ready event, by the kubelet's timestamp of
// the line; started when it printed none.
func readyAt(t *testing.T, cs kubernetes.Interface, ns, pod, container string, started time.Time) time.Time {
	t.Helper()
	b, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container, Timestamps: true}).DoRaw(context.Background())
	if err != nil {
		return started
	}
	for _, line := range strings.Split(string(b), "\n") {
		stamp, event, ok := strings.Cut(line, " ")
		if !ok || !strings.Contains(event, `"type":"`+agent.EventReady+`"`) {
			continue
		}
		if at, err := time.Parse(time.RFC3339Nano, stamp); err == nil {
			return at
		}
	}
	return started
}

// finalLine is the last line of s, blanks around it trimmed.
func finalLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// interruptAfter runs the plugin with args, sends SIGINT after the given time and returns its
// stderr and exit error; the plugin must exit within 30 s of the signal.
func interruptAfter(t *testing.T, after time.Duration, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(plugin(t), append([]string{"--kubeconfig", kubeconfigPath()}, args...)...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(after)
	_ = cmd.Process.Signal(syscall.SIGINT)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return stderr.String(), err
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("the plugin did not exit within 30 s of SIGINT")
	}
	return "", nil
}

// SIGKILL of the plugin in the middle of a TCP probe: nobody cleans up, yet both agents stop
// soon: the server within 5 s (its lease runs out), the client within 10 s (it sees its server go).
func TestPluginKilledAgentsStop(t *testing.T) {
	cs, ns := lab(t) // alone: it holds agents to their lifetimes in seconds
	workloads(t, cs, ns)
	for _, mode := range []string{"ephemeral", "pod"} {
		t.Run(mode, func(t *testing.T) {
			cmd := exec.Command(plugin(t), "--kubeconfig", kubeconfigPath(), "path", "-n", ns, "deploy/client", "svc/web",
				"--mode", mode, "--probes", "tcp", "--duration", "30s")
			cmd.Env = append(os.Environ(), "NETBENCH_PROGRESS=always")
			stderr, _ := cmd.StderrPipe()
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			sc := bufio.NewScanner(stderr)
			for sc.Scan() {
				if strings.Contains(sc.Text(), "measuring: tcp-1") {
					break
				}
			}
			time.Sleep(2 * time.Second)
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			killed := time.Now()
			if mode == "ephemeral" {
				// When each container ended, by its own finish time: under load the kubelet
				// may report it seconds later (in CI a server ended on time and was still
				// reported running 10 s after the kill).
				agentsEndedSoon(t, cs, ns, killed)
			} else {
				podsEnded(t, cs, ns, 10*time.Second)
			}
			t.Logf("agents stopped %s after the plugin was killed", time.Since(killed).Round(100*time.Millisecond))
		})
	}
	// The next pod-mode run deletes what the killed one left, once it has been over for
	// cmdutil.StaleAfter (until then it could be a run beside this one reading its results).
	time.Sleep(cmdutil.StaleAfter)
	r := pathJSON(t, "-n", ns, "deploy/client", "sts/db", "--mode", "pod", "--probes", "rtt")
	if !strings.Contains(strings.Join(r.Warnings, "\n"), "left by an earlier run") {
		t.Errorf("the next run did not clean the killed run's pods: %v", r.Warnings)
	}
	noAgentPods(t, cs, ns)
}

// podsEnded fails unless every netbench agent pod's container has terminated within d.
func podsEnded(t *testing.T, cs kubernetes.Interface, ns string, d time.Duration) {
	t.Helper()
	waitNoneLive(t, cs, ns, "app.kubernetes.io/managed-by=kubectl-netbench", d, "agent pods still running", func(p corev1.Pod) []string {
		for _, s := range p.Status.ContainerStatuses {
			if s.State.Terminated == nil {
				return []string{p.Name}
			}
		}
		return nil
	})
}

// The README's ephemeral-only Role (no pod create or delete) runs path and dns end to end.
func TestEphemeralOnlyRole(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	workloads(t, cs, ns)
	ctx := context.Background()
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "netbench-ephemeral"}, Rules: readmeEphemeralRules(t)}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "netbench-ephemeral"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "netbench-ephemeral"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "ephemeral-user"}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rbacInEffect(t, cs, ns, "ephemeral-user")
	out, stderr, err := netbench(t, "--as", "ephemeral-user", "path", "-n", ns, "deploy/client", "sts/db", "--probes", "rtt,http", "--duration", "1s")
	if err != nil || !strings.Contains(out, "RTT, agent to agent") {
		t.Errorf("path with the ephemeral-only Role: %v\n%s\n%s", err, stderr, out)
	}
	out, stderr, err = netbench(t, "--as", "ephemeral-user", "dns", "-n", ns, "deploy/client", "example.com")
	if err != nil || !strings.Contains(out, "example.com") {
		t.Errorf("dns with the ephemeral-only Role: %v\n%s\n%s", err, stderr, out)
	}
	_, stderr, err = netbench(t, "--as", "ephemeral-user", "path", "-n", ns, "deploy/client", "sts/db", "--mode", "pod")
	if err == nil || !strings.Contains(stderr, "you may not create pods, delete pods in namespace") {
		t.Errorf("pod mode without pod create/delete: %v %s", err, stderr)
	}
}

// rbacInEffect waits, up to 30 s, until the API server's authorizer lets user get deployments in
// ns: a Role and its binding take effect when its informers have seen them, which under load
// came after the first request (a CI run: "cannot get resource deployments").
func rbacInEffect(t *testing.T, cs kubernetes.Interface, ns, user string) {
	t.Helper()
	review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user,
		ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: ns, Verb: "get", Group: "apps", Resource: "deployments"}}}
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		r, err := cs.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		return err == nil && r.Status.Allowed, nil
	})
	if err != nil {
		t.Fatalf("the Role bound to %s in %s was not in effect after 30 s", user, ns)
	}
}

// readmeEphemeralRules are the rules of the README's Role for ephemeral mode (section RBAC),
// read from the README itself so that the two cannot drift apart.
func readmeEphemeralRules(t *testing.T) []rbacv1.PolicyRule {
	t.Helper()
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	return parseRoleRules(t, string(b), "netbench-ephemeral")
}

type appsDeployment = appsv1.Deployment

func limits(mem string) corev1.ResourceRequirements {
	q := resourceQuantity(mem)
	return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: q}, Limits: corev1.ResourceList{corev1.ResourceMemory: q}}
}

func resourceQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// parseRoleRules finds the Role named name in the YAML block of the README's section RBAC.
func parseRoleRules(t *testing.T, readme, name string) []rbacv1.PolicyRule {
	t.Helper()
	_, section, ok := strings.Cut(readme, "## RBAC\n")
	_, block, ok2 := strings.Cut(section, "```yaml")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("the README has no section RBAC with a YAML block")
	}
	for _, doc := range strings.Split(block, "\n---\n") {
		var r rbacv1.Role
		if err := yaml.Unmarshal([]byte(doc), &r); err == nil && r.Name == name {
			return r.Rules
		}
	}
	t.Fatalf("the README's section RBAC has no Role %s", name)
	return nil
}
