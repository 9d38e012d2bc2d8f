package e2e

import (
	"bufio"
	"context"
	"io"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// --observe counts what the wire shows: a packet capture on the node, at the pod's bridge, over
// the same window agrees with the agent's own counts; the lookups fold into the right names
// with the queries per lookup the resolver really sends.
// Lookups asking both address types (A and AAAA together, as glibc does for AF_UNSPEC) and
// A-only lookups (AF_INET) each fold into as many lookups as the looper made.
func TestDNSObserveMatchesPacketCapture(t *testing.T) {
	t.Run("A and AAAA", func(t *testing.T) {
		cs, ns := lab(t)
		ip := looper(t, cs, ns, "--count", "0", "--every", "100", "example.com", "kubernetes.default")
		observeAgainstCapture(t, ns, ip, ip, map[string][2]float64{"example.com": {7, 8}, "kubernetes.default": {3.5, 4}})
	})
	t.Run("A only", func(t *testing.T) {
		cs, ns := lab(t)
		ip := looper(t, cs, ns, "--count", "0", "--every", "100", "--family", "4", "example.com", "kubernetes.default")
		// Found under the second search domain; on an IPv6-primary lab the kubernetes Service
		// has no IPv4 address, so an A-only lookup walks the whole search path and fails.
		kube := [2]float64{1.8, 2}
		if !hasIPv4(t, cs, "default", "kubernetes") {
			kube = [2]float64{3.5, 4}
		}
		observeAgainstCapture(t, ns, ip, ip, map[string][2]float64{"example.com": {3.5, 4}, "kubernetes.default": kube})
	})
}

// hasIPv4 says whether the Service has an IPv4 ClusterIP.
func hasIPv4(t *testing.T, cs kubernetes.Interface, ns, name string) bool {
	t.Helper()
	svc, err := cs.CoreV1().Services(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range append([]string{svc.Spec.ClusterIP}, svc.Spec.ClusterIPs...) {
		if strings.Count(ip, ".") == 3 {
			return true
		}
	}
	return false
}

// observeAgainstCapture observes deploy/looper in ns (a resolver on lab-a1 looping over
// example.com and kubernetes.default, its pod at podIP, its queries from ip) and checks the
// counts against tcpdump on the node's end of the pod's veth and the queries per lookup
// against want (min, max); args are more of dns's flags. It returns the report.
func observeAgainstCapture(t *testing.T, ns, podIP, ip string, want map[string][2]float64, args ...string) *v1alpha1.DNSReport {
	t.Helper()
	capture, stdout := tcpdumpPod(t, podIP, "host "+ip+" and udp port 53")
	type pkt struct {
		at        time.Time
		query, nx bool
	}
	pkts := make(chan pkt, 100000)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 5 {
				continue
			}
			sec, err := strconv.ParseFloat(f[0], 64)
			if err != nil {
				continue
			}
			at := time.Unix(0, int64(sec*1e9))
			pkts <- pkt{at: at, query: strings.HasPrefix(f[2], ip+"."), nx: strings.Contains(sc.Text(), "NXDomain")}
		}
		close(pkts)
	}()
	time.Sleep(time.Second)
	r := dnsJSON(t, append([]string{"-n", ns, "deploy/looper", "--observe", "10s", "--repeats", "3"}, args...)...)
	time.Sleep(500 * time.Millisecond)
	_ = capture.Process.Kill()
	_ = capture.Wait()
	o := r.Result.Observed
	if o == nil {
		t.Fatalf("no observation: %s", r.Result.ObserveSkipped)
	}
	var queries, nx int
	for p := range pkts {
		if p.at.Before(o.Start) || p.at.After(o.End) {
			continue
		}
		if p.query {
			queries++
		} else if p.nx {
			nx++
		}
	}
	t.Logf("agent: %d queries, %d NXDOMAIN; capture on the node: %d queries, %d NXDOMAIN", o.Queries, o.NXDomains, queries, nx)
	if queries < 100 {
		t.Fatalf("the capture on the node saw only %d queries over the window: the looper or tcpdump did not run", queries)
	}
	if abs(o.Queries-queries) > 4 || abs(o.NXDomains-nx) > 4 {
		t.Errorf("the agent counted %d queries and %d NXDOMAIN, the capture %d and %d over the same window", o.Queries, o.NXDomains, queries, nx)
	}
	// The lab's upstream answers example.com with an IPv4 address alone: AAAA-only lookups fail.
	answered := "example.com."
	if slices.Contains(args, "--lookup-family") && slices.Contains(args, "6") {
		answered = ""
	}
	per := map[string]float64{}
	for _, n := range o.Names {
		per[n.Name] = n.QueriesPerLookup
		t.Logf("%s: %d lookups, %d queries", n.Name, n.Lookups, n.Queries)
		if n.Name == "example.com" && (n.AnsweredBy != answered || n.Lookups < 50) {
			t.Errorf("example.com: %+v (the looper makes about 9 a second)", n)
		}
	}
	// The window may cut one lookup of each name at its edges (want nil: the caller checks).
	for name, w := range want {
		if per[name] < w[0] || per[name] > w[1] {
			t.Errorf("queries per lookup: %v, want %s within %v", per, name, w)
		}
	}
	return r
}

// In a namespace enforcing Pod Security "restricted", --observe says why it cannot capture and
// still gives the active report.
func TestDNSObserveRestricted(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	restrict(t, cs, ns)
	resolverDeployment(t, cs, ns, "app", "musl")
	out, stderr, err := netbench(t, "dns", "-n", ns, "deploy/app", "--observe", "5s")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	for _, want := range []string{"passive capture skipped: it needs NET_RAW as root, which the Pod Security level of namespace " + ns + " forbids", "resolver: musl", "as configured"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// looper runs the glibc resolver on lab-a1 with args (a deployment named looper) and returns
// its pod's IP once it runs.
func looper(t *testing.T, cs kubernetes.Interface, ns string, args ...string) string {
	t.Helper()
	return startLooper(t, cs, ns, deployment("looper", "lab-a1", "netbench.lab/resolver-glibc:1", args))
}

// startLooper creates the looper deployment d and returns its pod's primary IP once it runs.
func startLooper(t *testing.T, cs kubernetes.Interface, ns string, d *appsv1.Deployment) string {
	t.Helper()
	if _, err := cs.AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRollout(t, cs, ns, "looper")
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=looper"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("looper pod: %v", err)
	}
	return pods.Items[0].Status.PodIP
}

// tcpdumpPod starts tcpdump on the node's end of the veth of the pod at ip on lab-a1 (every
// packet the pod sends or receives crosses it once; on the bridge a packet the node routes back
// to a pod on the same bridge can show twice) with filter, as tcpdumpA1 does.
func tcpdumpPod(t *testing.T, ip, filter string) (*exec.Cmd, io.Reader) {
	t.Helper()
	out, err := exec.Command("nsenter", "--net="+podNetns(t, "lab-a1", ip), "ip", "-o", "link", "show", "eth0").Output()
	_, peer, ok := strings.Cut(strings.Fields(string(out) + " x x")[1], "@if")
	if err != nil || !ok {
		t.Fatalf("the veth of the pod at %s: %v %q", ip, err, out)
	}
	out, err = exec.Command("ip", "-n", "nblab-a1", "-o", "link", "show").Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == strings.TrimSuffix(peer, ":")+":" {
			return tcpdumpOn(t, strings.Split(strings.TrimSuffix(f[1], ":"), "@")[0], filter)
		}
	}
	t.Fatalf("no interface %s on lab-a1 (the peer of the pod at %s)", peer, ip)
	return nil, nil
}

// tcpdumpA1 starts tcpdump on lab-a1's pod bridge with filter and returns it and its output
// (-nn -l -tt: one line per packet, starting with its Unix time); it skips the test without
// tcpdump.
func tcpdumpA1(t *testing.T, filter string) (*exec.Cmd, io.Reader) {
	t.Helper()
	return tcpdumpOn(t, "cni0", filter)
}

// tcpdumpOn starts tcpdump on lab-a1's interface dev with filter.
func tcpdumpOn(t *testing.T, dev, filter string) (*exec.Cmd, io.Reader) {
	t.Helper()
	capture := exec.Command("ip", "netns", "exec", "nblab-a1", "tcpdump", "-i", dev, "-nn", "-l", "-tt", filter)
	stdout, _ := capture.StdoutPipe()
	if err := capture.Start(); err != nil {
		t.Skipf("tcpdump: %v (apt-get install tcpdump)", err)
	}
	return capture, stdout
}
