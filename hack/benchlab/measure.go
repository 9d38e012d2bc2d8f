package main

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/reftools"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// tcpN is the plugin's result for pluginStreams streams.
var tcpN = fmt.Sprintf("tcp-%d", pluginStreams)

// figure is one measurement taken both ways in every round.
type figure struct{ ours, ref []float64 }

func (f *figure) add(ours, ref float64) { f.ours, f.ref = append(f.ours, ours), append(f.ref, ref) }

// pathResult holds every round of one path, by figure name (see rows in render.go).
type pathResult struct {
	spec    pathSpec
	figures map[string]*figure
	// footprint: the agents' own CPU seconds and peak RSS (MiB) per run, by role.
	cpu, rss map[string][]float64
	method   string // the agent's ICMP method
	// icmpSkipped is why the agent measured no ICMP from this client (a node without
	// unprivileged ICMP for its pods, say): ping's rounds are then not compared.
	icmpSkipped string
	detail      string // what the section's intro says of its setup, as read from the cluster
}

func (r *pathResult) add(name string, ours, ref float64) {
	if r.figures[name] == nil {
		r.figures[name] = &figure{}
	}
	r.figures[name].add(ours, ref)
}

func measurePath(c config, l *lab, p pathSpec) (pathResult, error) {
	res := pathResult{spec: p, figures: map[string]*figure{}, cpu: map[string][]float64{}, rss: map[string][]float64{}}
	srvIP := l.ips["srv"]
	inClient, err := nsRunner(p.node, l.ips[p.client])
	if err != nil {
		return res, err
	}
	inServer, err := nsRunner(serverNode, srvIP)
	if err != nil {
		return res, err
	}
	stopIperf, err := reftools.IperfServer(inServer)
	if err != nil {
		return res, err
	}
	defer stopIperf()
	rateSrv, err := startRateServers(inServer)
	if err != nil {
		return res, err
	}
	defer rateSrv.stop()
	ref, err := startRefServer(c.agentBin, inServer, srvIP)
	if err != nil {
		return res, err
	}
	defer ref.stop()
	plan := plannedFrom(nil)
	for round := 0; round < c.rounds; round++ {
		fmt.Fprintf(os.Stderr, "%s: round %d/%d\n", p.name, round+1, c.rounds)
		var ours *report.PathReport
		if round%2 == 0 {
			if ours, err = runPlugin(c, p.client); err != nil {
				return res, err
			}
			plan = plannedFrom(ours)
		}
		refs, err := runReferences(c, inClient, srvIP, ref, plan)
		if err != nil {
			return res, err
		}
		if round%2 == 1 {
			if ours, err = runPlugin(c, p.client); err != nil {
				return res, err
			}
			plan = plannedFrom(ours)
		}
		if err := res.record(ours, refs); err != nil {
			return res, err
		}
		rr, tcp, udp, err := rrRound(c, p.client, inClient, srvIP, round, c.holdCPUs)
		if err != nil {
			return res, err
		}
		if err := res.recordRR(rr, tcp, udp); err != nil {
			return res, err
		}
	}
	return res, nil
}

// runPlugin runs `path` from the client pod to the server pod and reads its JSON report.
func runPlugin(c config, client string) (*report.PathReport, error) {
	return runPath(c, pluginArgs(c, client))
}

// runPath runs the plugin's path command with args and reads its JSON report.
func runPath(c config, args []string) (*report.PathReport, error) {
	return runReport[report.PathReport](c, args)
}

// runReport runs the plugin with args (its command first) and reads its JSON report.
func runReport[R any](c config, args []string) (*R, error) {
	cmd := exec.Command(c.plugin, args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("kubectl-netbench %s: %w", args[0], err)
	}
	var r R
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("the plugin's report: %w", err)
	}
	return &r, nil
}

// pluginArgs is the plugin's command line (render prints it with CLIENT for the client).
func pluginArgs(c config, client string) []string {
	return []string{"path", "-n", namespace, client, "srv", "--port", strconv.Itoa(appPort), "--probes", pluginProbes,
		"--streams", strconv.Itoa(pluginStreams), "--request-size", strconv.Itoa(rrBytes), "--response-size", strconv.Itoa(rrBytes),
		"--duration", fmt.Sprintf("%gs", c.seconds), "-o", "json"}
}

// planned is what the references copy from the plugin's run: the same rates, counts and
// connections (the defaults until the plugin has run once in the round).
type planned struct {
	pingCount          int
	pingInterval       time.Duration
	appQPS             float64
	appConns, maxConns int
	newConnQPS         float64
	newConnConns       int
	udpCount           int
	udpInterval        time.Duration
	crrClients         int
}

func plannedFrom(r *report.PathReport) planned {
	p := planned{pingCount: 20, pingInterval: 50 * time.Millisecond, appQPS: 100, appConns: 4, maxConns: 16, newConnQPS: 100, newConnConns: 4,
		udpCount: 1000, udpInterval: time.Millisecond, crrClients: 4}
	if r == nil {
		return p
	}
	p.fromRates(r)
	if icmp := find(r.Probes, "icmp"); icmp != nil && icmp.RTT != nil {
		p.pingCount, p.pingInterval = icmp.RTT.RequestedCount, time.Duration(icmp.RTT.IntervalMillis)*time.Millisecond
	}
	if h := find(r.AppPort, "app-http"); h != nil && h.HTTP != nil {
		p.appQPS, p.appConns = h.HTTP.RequestedQPS, h.HTTP.Connections
	}
	if h := find(r.Probes, "http-max"); h != nil && h.HTTP != nil {
		p.maxConns = h.HTTP.Connections
	}
	if h := find(r.Probes, "http-new-conn"); h != nil && h.HTTP != nil {
		p.newConnQPS, p.newConnConns = h.HTTP.RequestedQPS, h.HTTP.Connections
	}
	return p
}

// skipReason is why the probe named name was skipped (or that it is missing).
func skipReason(rs []*agent.ProbeResult, name string) string {
	for _, r := range rs {
		if r.Name == name && r.Skipped != "" {
			return r.Skipped
		}
	}
	return "not in the report"
}

func find(rs []*agent.ProbeResult, name string) *agent.ProbeResult {
	for _, r := range rs {
		if r.Name == name && r.Skipped == "" {
			return r
		}
	}
	return nil
}

// references is one round of the reference tools.
type references struct {
	iperf1, iperfN                 reftools.Throughput
	pingP50                        float64
	appP50, appP99, maxQPS, maxP50 float64
	newConnP50, curlP50            float64
	pingCount                      int
	rates                          rateRefs
}

func runReferences(c config, in reftools.Runner, srvIP string, ref *refServer, p planned) (references, error) {
	var r references
	var err error
	if r.iperf1, err = reftools.Iperf(in, srvIP, 1, c.seconds); err != nil {
		return r, err
	}
	if r.iperfN, err = reftools.Iperf(in, srvIP, pluginStreams, c.seconds); err != nil {
		return r, err
	}
	if r.pingP50, _, err = reftools.Ping(in, srvIP, p.pingCount, p.pingInterval); err != nil {
		return r, err
	}
	r.pingCount = p.pingCount
	app := reftools.HTTPRun{URL: appURL(srvIP), Seconds: c.seconds, QPS: p.appQPS, Connections: p.appConns}
	lat, _, err := reftools.Fortio(in, app, refProcs)
	if err != nil {
		return r, err
	}
	r.appP50, r.appP99 = lat.P50Micros, lat.P99Micros
	// The agent server's gate holds at most 8 connections of a source that has not yet proven
	// the token (docs/security.md); the client pod proves it first, as the plugin's own clients
	// do, so that the closed loop's connections all open at once.
	if _, err := curlTTFB(in, ref, 1); err != nil {
		return r, err
	}
	closed := reftools.HTTPRun{URL: ref.url, Token: ref.token, Seconds: c.seconds, QPS: 0, Connections: p.maxConns}
	lat, r.maxQPS, err = reftools.Fortio(in, closed, refProcs)
	if err != nil {
		return r, err
	}
	r.maxP50 = lat.P50Micros
	paced := reftools.HTTPRun{URL: ref.url, Token: ref.token, Seconds: c.seconds, QPS: p.newConnQPS, Connections: p.newConnConns}
	if lat, err = reftools.NewConn(in, paced); err != nil {
		return r, err
	}
	r.newConnP50 = lat.P50Micros
	if r.curlP50, err = curlTTFB(in, ref, c.newConns); err != nil {
		return r, err
	}
	r.rates, err = runRateReferences(c, in, srvIP, p)
	return r, err
}

// appURL is the sample app's address in the server pod.
func appURL(srvIP string) string {
	return fmt.Sprintf("http://%s/", net.JoinHostPort(srvIP, strconv.Itoa(appPort)))
}

// curlTTFB is curl's median time to first byte in µs over n requests, each a new process and so
// a new connection (handshake + request + first byte of the answer), back to back: the machine
// never idles between them, unlike at the probe's pace.
func curlTTFB(in reftools.Runner, ref *refServer, n int) (float64, error) {
	var v []float64
	for i := 0; i < n; i++ {
		out, err := in("curl", "-s", "-o", "/dev/null", "-H", agent.TokenHeader+": "+ref.token, "-w", "%{time_starttransfer}", ref.url).Output()
		if err != nil {
			return 0, fmt.Errorf("curl: %w", err)
		}
		s, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
		if err != nil {
			return 0, fmt.Errorf("curl output %q: %w", out, err)
		}
		v = append(v, s*1e6)
	}
	return reftools.Median(v), nil
}

func (r *pathResult) record(ours *report.PathReport, refs references) error {
	need := map[string]*agent.ProbeResult{}
	for _, n := range []string{"tcp-1", tcpN, "http-new-conn", "http-max"} {
		if need[n] = find(ours.Probes, n); need[n] == nil {
			return fmt.Errorf("the plugin's report has no %s result", n)
		}
	}
	app := find(ours.AppPort, "app-http")
	if app == nil || app.HTTP == nil {
		return fmt.Errorf("the plugin's report has no app-http result")
	}
	for _, t := range []struct {
		name string
		ref  reftools.Throughput
	}{{"tcp-1", refs.iperf1}, {tcpN, refs.iperfN}} {
		tp := need[t.name].Throughput
		gbps := tp.BitsPerSecondReceived / 1e9
		r.add(t.name+" gbps", gbps, t.ref.Gbps)
		r.add(t.name+" cpu/gbps", tp.ClientCPUPercent/gbps, t.ref.CPU/t.ref.Gbps)
		r.add(t.name+" server cpu/gbps", tp.ServerCPUPercent/gbps, t.ref.ServerCPU/t.ref.Gbps)
	}
	if icmp := find(ours.Probes, "icmp"); icmp != nil && icmp.RTT != nil {
		r.method = icmp.RTT.Method
		r.add("icmp p50", icmp.RTT.RTT.P50Micros, refs.pingP50)
	} else {
		r.icmpSkipped = skipReason(ours.Probes, "icmp")
	}
	r.add("http p50", app.HTTP.Latency.P50Micros, refs.appP50)
	r.add("http p99", app.HTTP.Latency.P99Micros, refs.appP99)
	r.add("max qps", need["http-max"].HTTP.AchievedQPS, refs.maxQPS)
	r.add("max p50", need["http-max"].HTTP.Latency.P50Micros, refs.maxP50)
	r.add("new-conn p50", need["http-new-conn"].HTTP.Latency.P50Micros, refs.newConnP50)
	r.add("new-conn curl", need["http-new-conn"].HTTP.Latency.P50Micros, refs.curlP50)
	if err := r.recordRates(ours, refs.rates); err != nil {
		return err
	}
	for role, f := range ours.AgentFootprint {
		r.cpu[role] = append(r.cpu[role], f.CPUSeconds)
		r.rss[role] = append(r.rss[role], float64(f.PeakRSSBytes)/(1<<20))
	}
	return nil
}
