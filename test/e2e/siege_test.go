package e2e

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"math"
	"net"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/hostile"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// Peers outside the run — two pods on two nodes — read the agents' ports as anyone who may get
// pods and their logs can, and from the moment each port appears hold every connection slot
// they can at it (siegePerSource connections each, of six kinds: silent, random bytes, trickled HTTP/1 headers, endless
// HTTP/2 header blocks, CONTINUATION floods, gRPC streams without the token), re-opening what is
// closed, for a whole `path` run (the runner's hand-over port and the server's port); and
// (TestAgentSiegeOtherCommands) for a `path --mode pod`, a `ladder svc/web` and a `matrix` run. The run
// completes (hand-over and lease renewals unharmed), every probe without an error; its TCP
// handshake RTT and HTTP p50 stay within the spread of two runs without the siege; the server agent, inside the app's pod, stays
// under agent.MaxAgentRSS; no container of the app's pods restarts; and datagrams sealed with what
// the agents' specs show (the token's digest) get no answer.
func TestAgentSiegeInCluster(t *testing.T) {
	cs, ns := lab(t)
	strangers := siegeSetup(t, cs, ns)
	args := []string{"-n", ns, "deploy/client", "deploy/web", "--probes", "rtt,http,udp", "--duration", "3s"}
	var base []*v1alpha1.PathReport
	for range 2 {
		base = append(base, pathJSON(t, args...))
	}

	out := underSiege(t, cs, ns, strangers, "path under siege", append([]string{"path", "-o", "json"}, args...))
	var r v1alpha1.PathReport
	if err := json.Unmarshal([]byte(out.stdout), &r); err != nil {
		t.Fatalf("report under siege: %v", err)
	}
	if len(out.opened) < 2 || out.landed() == 0 {
		t.Errorf("the siege found %d agent ports and landed connections on %d, want the runner's and the server's found, and the server besieged", len(out.opened), out.landed())
	}
	// Both held to the runs without the siege. With 32 KiB allowed before the token, HTTP's p50
	// rose from 0.70–0.86 to 1.1–1.6 ms here (a CONTINUATION flood cost the agent 3.7 ms of CPU per
	// connection); at 8 KiB it stays within the noise.
	compareUnderSiege(t, "tcp-rtt", base, &r)
	compareUnderSiege(t, "http", base, &r)
	if u := resultNamed(&r, "udp"); u == nil || u.RTT == nil || u.RTT.LossPercent > 2 {
		t.Errorf("udp under siege: %+v", u)
	}
	if h := resultNamed(&r, "http"); h == nil || h.HTTP == nil || h.HTTP.Errors > 0 {
		t.Errorf("http under siege: %+v", h)
	}
	if fp, ok := r.AgentFootprint["server"]; !ok || fp.PeakRSSBytes <= 0 || fp.PeakRSSBytes > agent.MaxAgentRSS {
		t.Errorf("server agent footprint under siege %+v, want a peak RSS under %d bytes", fp, agent.MaxAgentRSS)
	} else {
		t.Logf("server agent under siege: peak RSS %.1f MiB (bound %d MiB), %.2f CPU s (without: %.2f, %.2f CPU s)", float64(fp.PeakRSSBytes)/(1<<20),
			agent.MaxAgentRSS>>20, fp.CPUSeconds, base[0].AgentFootprint["server"].CPUSeconds, base[1].AgentFootprint["server"].CPUSeconds)
	}
	noRestarts(t, cs, ns, "app in (client,web)")
}

// TestAgentSiegeOtherCommands besieges, as TestAgentSiegeInCluster does a `path` run, a
// `path --mode pod`, a `ladder svc/web` and a `matrix` run. It compares no timing (each run must
// complete, every connection answered, no restart), so it runs beside other tests.
func TestAgentSiegeOtherCommands(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	strangers := siegeSetup(t, cs, ns)
	siegePodMode(t, cs, ns, strangers)
	siegeLadder(t, cs, ns, strangers)
	siegeMatrix(t, cs, ns, strangers)
}

// siegeSetup starts the sample workloads and a stranger pod on lab-b2, and returns the network
// namespaces of the two pods that lay the siege (the peer and the stranger) by pod IP.
func siegeSetup(t *testing.T, cs kubernetes.Interface, ns string) map[string]string {
	t.Helper()
	workloads(t, cs, ns)
	createPod(t, cs, ns, pod("stranger", "lab-b2", "netbench.lab/sample-app:1", nil, map[string]string{"app": "stranger"}))
	strangers := map[string]string{} // pod IP → its network namespace
	for _, name := range []string{"peer", "stranger"} {
		p := waitPod(t, cs, ns, name, 2*time.Minute, "running", running)
		strangers[p.Status.PodIP] = podNetns(t, p.Spec.NodeName, p.Status.PodIP)
	}
	return strangers
}

// siegeMatrix besieges a `matrix --scope nodes` run: the DaemonSet's agents, which measure each
// other with jobs the plugin posts. It completes with every one of the 12 pairs measured (at
// least 95 of 100 samples each) and connections landed on the agents' ports.
func siegeMatrix(t *testing.T, cs kubernetes.Interface, ns string, strangers map[string]string) {
	t.Helper()
	out := underSiege(t, cs, ns, strangers, "matrix under siege",
		[]string{"matrix", "-o", "json", "-n", ns, "--scope", "nodes", "--count", "100"})
	r := decodeStrict[v1alpha1.MatrixReport](t, out.stdout)
	if out.landed() == 0 {
		t.Errorf("the siege found %d matrix agent ports and landed connections on none", len(out.opened))
	}
	checkPairs(t, r, false)
}

// siegeLadder besieges a `ladder svc/web` run: its server, the endpoint agents in the Service's
// pods and every rung's client. It completes, each rung's connections through the temporary
// Service all answered by the run's own endpoint agents, and no app container restarts.
func siegeLadder(t *testing.T, cs kubernetes.Interface, ns string, strangers map[string]string) {
	t.Helper()
	out := underSiege(t, cs, ns, strangers, "ladder under siege",
		[]string{"ladder", "-o", "json", "-n", ns, "svc/web", "--probes", "rtt", "--duration", "1s", "--connections-per-rung", "50"})
	r := decodeStrict[v1alpha1.LadderReport](t, out.stdout)
	if len(out.opened) < 3 || out.landed() < 2 {
		t.Errorf("the siege found %d ladder agent ports and landed connections on %d, want the server's, the endpoint agents' and the clients' found, and the first two besieged", len(out.opened), out.landed())
	}
	for _, rung := range r.Rungs {
		if rung.Skipped == "" && (rung.Spread == nil || rung.Spread.Answered != rung.Spread.Connections) {
			t.Errorf("rung %s under siege: spread %+v, want every connection answered by the run's endpoint agents", rung.Name, rung.Spread)
		}
	}
	noRestarts(t, cs, ns, "app in (client,web)")
}

// siegePodMode besieges a `path --mode pod` run with the throughput probe too: temporary agent
// pods instead of ephemeral containers, the throughput sink's port. The run completes, every
// probe without an error, tcp moves data, both agents stay under agent.MaxAgentRSS, and
// datagrams sealed with what the pods' specs show get no answer.
func siegePodMode(t *testing.T, cs kubernetes.Interface, ns string, strangers map[string]string) {
	t.Helper()
	out := underSiege(t, cs, ns, strangers, "path --mode pod under siege",
		[]string{"path", "-o", "json", "-n", ns, "deploy/client", "deploy/web", "--mode", "pod", "--probes", "rtt,tcp,udp", "--duration", "3s"})
	var r v1alpha1.PathReport
	if err := json.Unmarshal([]byte(out.stdout), &r); err != nil {
		t.Fatalf("report under siege: %v", err)
	}
	if out.landed() == 0 {
		t.Error("no siege connection landed on a pod-mode agent's port")
	}
	for _, p := range r.Probes {
		if p.Skipped != "" {
			t.Errorf("probe %s under siege: skipped: %s", p.Name, p.Skipped)
		}
	}
	if tcp := resultNamed(&r, "tcp-1"); tcp == nil || tcp.Throughput == nil || tcp.Throughput.BitsPerSecondReceived <= 0 {
		t.Errorf("tcp under siege: %+v", tcp)
	} else {
		t.Logf("pod mode under siege: tcp-1 %.2f Gbit/s", tcp.Throughput.BitsPerSecondReceived/1e9)
	}
	for _, role := range []string{"server", "client"} {
		fp, ok := r.AgentFootprint[role]
		if !ok || fp.PeakRSSBytes <= 0 || fp.PeakRSSBytes > agent.MaxAgentRSS {
			t.Errorf("pod mode: %s agent footprint under siege %+v, want a peak RSS under %d bytes", role, fp, agent.MaxAgentRSS)
			continue
		}
		t.Logf("pod mode: %s agent under siege: peak RSS %.1f MiB, %.2f CPU s", role, float64(fp.PeakRSSBytes)/(1<<20), fp.CPUSeconds)
	}
}

// siegeOutcome is what a run under siege printed, the connections the strangers opened at each
// agent port they found, by port.
type siegeOutcome struct {
	stdout string
	opened map[string]int64
}

// landed is how many of the ports found got connections from the strangers.
func (o siegeOutcome) landed() int {
	n := 0
	for _, c := range o.opened {
		if c > 0 {
			n++
		}
	}
	return n
}

// underSiege runs the plugin with args while the strangers besiege every agent port of the run
// as it appears (and send each datagrams sealed with what its spec shows, failing the test on
// any answer); a failed run fails the test, named what.
func underSiege(t *testing.T, cs kubernetes.Interface, ns string, strangers map[string]string, what string, args []string) siegeOutcome {
	t.Helper()
	stop := make(chan struct{})
	var opened sync.Map // port → *atomic.Int64
	var forged atomic.Int64
	watchDone := siegeAgentPorts(t, cs, ns, strangers, stop, &opened, &forged)
	out, errb, err := netbench(t, args...)
	close(stop)
	watchDone()
	if err != nil {
		t.Fatalf("%s: %v\n%s", what, err, errb)
	}
	if n := forged.Load(); n != 0 {
		t.Errorf("%s: %d datagrams sealed with what the spec shows were answered", what, n)
	}
	o := siegeOutcome{stdout: out, opened: map[string]int64{}}
	opened.Range(func(k, v any) bool {
		o.opened[k.(string)] = v.(*atomic.Int64).Load()
		t.Logf("%s: port %v: peers without the token opened %d connections", what, k, o.opened[k.(string)])
		return true
	})
	return o
}

// forgedAnswers sends, from inside a stranger's network namespace, echo datagrams sealed with
// what the agent's spec shows (the token's digest, as the key and as the token) to the agent's
// UDP port, and counts the answers.
func forgedAnswers(t *testing.T, d hostile.Dialer, addr, digest string) int {
	raw, err := hex.DecodeString(digest)
	if err != nil {
		t.Errorf("digest %q in the spec: %v", digest, err)
		return 0
	}
	answered := 0
	for i, key := range [][]byte{raw, probes.UDPKey(digest), probes.UDPKey("")} {
		c, err := d.Dial("udp", addr)
		if err != nil {
			t.Errorf("udp from the stranger: %v", err)
			return answered
		}
		b := make([]byte, probes.UDPHeaderLen+32)
		probes.SealDatagram(key, b, probes.UDPEcho, uint64(i+1))
		_, _ = c.Write(b)
		_ = c.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		if n, err := c.Read(make([]byte, 2048)); err == nil && n > 0 {
			answered++
		}
		c.Close()
	}
	return answered
}

// specDigest is the --token-sha256 argument of an agent container.
func specDigest(args []string) string {
	for i, a := range args {
		if a == "--token-sha256" && i+1 < len(args) {
			return args[i+1]
		}
	}
	return ""
}

// compareUnderSiege holds a probe's p50 under siege to the runs without it: within their own
// spread three times over, plus 100 µs (the lab's timer and scheduling floor).
func compareUnderSiege(t *testing.T, name string, base []*v1alpha1.PathReport, siege *v1alpha1.PathReport) {
	t.Helper()
	p50 := func(r *v1alpha1.PathReport) float64 {
		res := resultNamed(r, name)
		switch {
		case res == nil:
		case res.RTT != nil:
			return res.RTT.RTT.P50Micros
		case res.HTTP != nil:
			return res.HTTP.Latency.P50Micros
		}
		t.Fatalf("%s: no latency in %+v", name, r.Probes)
		return 0
	}
	b0, b1, s := p50(base[0]), p50(base[1]), p50(siege)
	bound := math.Max(b0, b1) + 3*math.Abs(b0-b1) + 100
	t.Logf("%s p50: %.0f and %.0f µs without the siege, %.0f µs under it (bound %.0f µs)", name, b0, b1, s, bound)
	if s > bound {
		t.Errorf("%s p50 %.0f µs under siege, above %.0f µs (the runs without it: %.0f, %.0f µs)", name, s, bound, b0, b1)
	}
}

// resultNamed is the report's result of the probe with this name (nil if none).
func resultNamed(r *v1alpha1.PathReport, name string) *agent.ProbeResult {
	for _, p := range r.Probes {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// siegePerSource is how many connections each stranger keeps open: two more than the agent's
// slots for one source, so that every slot is held and the eviction of the oldest is exercised
// too, without the attackers' own CPU (on the lab's two cores) standing in for the agent's.
const siegePerSource = 10

// siegeAgentPorts watches the namespace's pods for the run's agents and, for each agent port
// it learns (from the container's --listen argument, or its ready event in the log), starts a
// siege from every stranger's network namespace, until stop.
func siegeAgentPorts(t *testing.T, cs kubernetes.Interface, ns string, strangers map[string]string, stop chan struct{}, opened *sync.Map, forged *atomic.Int64) (wait func()) {
	t.Helper()
	dialers := map[string]hostile.Dialer{}
	var sources []string
	for ip, netns := range strangers {
		d, err := hostile.NewNetnsDialer(netns)
		if err != nil {
			t.Fatal(err)
		}
		dialers[ip] = d
		sources = append(sources, ip)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	seen := map[string]bool{}
	for range agentAddrs(cs, ns, seen) { // earlier runs' agents: not this run's
	}
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			for addr, digest := range agentAddrs(cs, ns, seen) {
				n, waitSiege := hostile.SiegeWith(func(src string) hostile.Dialer { return dialers[src] }, addr, sources, siegePerSource, stop)
				opened.Store(addr, n)
				wg.Add(2)
				go func() { defer wg.Done(); waitSiege() }()
				go func() {
					defer wg.Done()
					time.Sleep(time.Second) // past the first lease renewal: the agent knows its key
					forged.Add(int64(forgedAnswers(t, dialers[sources[0]], addr, digest)))
				}()
			}
		}
	}()
	return func() {
		wg.Wait()
		for _, d := range dialers {
			d.(*hostile.NetnsDialer).Close()
		}
	}
}

// agentAddrs are the listening addresses of netbench agents in ns not yet in seen, with the
// token digest their spec carries.
func agentAddrs(cs kubernetes.Interface, ns string, seen map[string]bool) map[string]string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	out := map[string]string{}
	for _, p := range pods.Items {
		var agents []corev1.Container
		for _, c := range p.Spec.EphemeralContainers {
			if strings.HasPrefix(c.Name, "netbench-") {
				agents = append(agents, corev1.Container(c.EphemeralContainerCommon))
			}
		}
		if p.Labels["app.kubernetes.io/managed-by"] == "kubectl-netbench" {
			agents = append(agents, p.Spec.Containers...) // a temporary agent pod
		}
		for _, c := range agents {
			key := p.Name + "/" + c.Name
			if seen[key] || p.Status.PodIP == "" {
				continue
			}
			addr := listenArg(c.Args, p.Status.PodIP)
			if addr == "" {
				addr = readyAddr(cs, ns, p.Name, c.Name, p.Status.PodIP)
			}
			if addr != "" {
				seen[key] = true
				out[addr] = specDigest(c.Args)
			}
		}
	}
	return out
}

// listenArg is the address in an agent's --listen argument, if it names a port.
func listenArg(args []string, podIP string) string {
	for i, a := range args {
		if a != "--listen" || i+1 == len(args) {
			continue
		}
		host, port, err := net.SplitHostPort(args[i+1])
		if err != nil || port == "0" {
			return ""
		}
		if host == "" || strings.HasPrefix(host, "$(") {
			host = podIP
		}
		return net.JoinHostPort(host, port)
	}
	return ""
}

// readyAddr reads an agent's ready event from its log (a port picked at start).
func readyAddr(cs kubernetes.Interface, ns, pod, container, podIP string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	rc, err := cs.CoreV1().Pods(ns).GetLogs(pod, &corev1.PodLogOptions{Container: container}).Stream(ctx)
	if err != nil {
		return ""
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	for sc.Scan() {
		var ev agent.Event
		if json.Unmarshal(sc.Bytes(), &ev) == nil && ev.Type == agent.EventReady && ev.Port > 0 {
			return net.JoinHostPort(podIP, strconv.Itoa(ev.Port))
		}
	}
	return ""
}

// noRestarts fails if a container of the selected pods restarted.
func noRestarts(t *testing.T, cs kubernetes.Interface, ns, selector string) {
	t.Helper()
	pods, err := cs.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, s := range p.Status.ContainerStatuses {
			if s.RestartCount > 0 {
				t.Errorf("%s/%s restarted %d times", p.Name, s.Name, s.RestartCount)
			}
		}
	}
}
