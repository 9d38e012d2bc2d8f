// Command bench measures kubectl-netbench's engines side by side with reference tools on one
// path — two network namespaces joined by a veth pair — in one run, and writes a markdown table
// of ratios: throughput vs iperf3 and HTTP keep-alive latency vs fortio's own runner (rounds,
// alternating who goes first), ICMP and TCP RTT vs iputils ping (one run each). The whole file,
// notes included, comes from the run and the parameters below. It needs root, iperf3 and ping.
//
//	go run ./hack/bench -agent bin/netbench-agent -out benchmarks/RESULTS.md
package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/benchinfo"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/reftools"
	"github.com/kubectl-netbench/kubectl-netbench/internal/vethpair"
)

type config struct {
	agentBin   string
	out        string
	tputSecs   float64
	httpSecs   float64
	rttCount   int
	rounds     int
	httpRounds int
}

// The comparisons' fixed parameters; render prints them from here.
const (
	httpQPS       = 100                                           // the HTTP keep-alive comparison's rate
	httpConns     = 4                                             // and its connections
	rttInterval   = 10 * time.Millisecond                         // between RTT probes, ping's and ours
	oneThread     = "1"                                           // GOMAXPROCS of the first fortio reference, the agent's default budget
	fortioModule  = "fortio.org/fortio"                           // the reference runner's module (its version is printed)
	resultsTarget = "bench"                                       // the make target that runs this
	notesFile     = "benchmarks/notes/2026-11-30-veth-engines.md" // one-off profiles and comparisons
)

var oneThreadTool = "fortio runner, GOMAXPROCS=" + oneThread

// streamCounts are the throughput comparisons' stream counts.
var streamCounts = []int{1, 8}

// Goals: how netbench's median must relate to the reference's.
var (
	tputGoal = benchinfo.AtLeast(0.95)
	cpuGoal  = benchinfo.AtMost(1)
	httpGoal = benchinfo.WithinPct(5)
	rttGoal  = benchinfo.WithinMicros(10)
)

// oursFirst says whether netbench goes first in a round; who goes first alternates because the
// machine's latency and throughput drift over tens of seconds.
func oursFirst(round int) bool { return round%2 == 0 }

func main() {
	reftools.MaybeRunReference()
	var c config
	flag.StringVar(&c.agentBin, "agent", "bin/netbench-agent", "the agent binary to measure")
	flag.StringVar(&c.out, "out", "", "also write the table to this file")
	flag.Float64Var(&c.tputSecs, "throughput-seconds", 5, "length of each throughput run")
	flag.Float64Var(&c.httpSecs, "http-seconds", 6, "length of each HTTP run")
	flag.IntVar(&c.rttCount, "rtt-count", 200, "probes per RTT run")
	flag.IntVar(&c.rounds, "rounds", 3, "alternating rounds per throughput comparison (the median of each tool is kept)")
	flag.IntVar(&c.httpRounds, "http-rounds", 6, "alternating rounds of the HTTP comparison (the median of each tool is kept)")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	if why := vethpair.Available(); why != "" {
		return errors.New(why)
	}
	for _, tool := range []string{"iperf3", "ping"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is needed (apt-get install iperf3 iputils-ping)", tool)
		}
	}
	e := env{
		command: benchinfo.Command("./hack/bench"),
		via:     benchinfo.ViaMake(resultsTarget),
		machine: benchinfo.ReadMachine(),
		versions: []string{runtime.Version(), benchinfo.FirstLine("iperf3", "--version"), benchinfo.FirstLine("ping", "-V"),
			"fortio " + benchinfo.ModuleVersion(fortioModule) + " runner (fhttp) in hack/bench", "kubectl-netbench agent from this tree (" + c.agentBin + ")"},
	}
	start := time.Now()
	p, err := vethpair.New("nbbench", 77)
	if err != nil {
		return fmt.Errorf("veth pair: %w", err)
	}
	defer p.Close()

	stopIperf, err := reftools.IperfServer(func(name string, args ...string) *exec.Cmd { return vethpair.Command(p.NSB, name, args...) })
	if err != nil {
		return fmt.Errorf("iperf3 server: %w", err)
	}
	defer stopIperf()

	b := &bench{c: c, p: p, token: randomToken()}
	stopAgent, err := b.startAgent()
	if err != nil {
		return err
	}
	defer stopAgent()

	var rows []row
	for _, measure := range []func() ([]row, error){b.throughput, b.http, b.rtt} {
		rs, err := measure()
		if err != nil {
			return err
		}
		rows = append(rows, rs...)
	}

	e.date, e.took, e.loadEnd = time.Now(), time.Since(start), benchinfo.LoadAverage()
	md := render(c, e, rows)
	fmt.Print(md)
	if c.out != "" {
		if err := os.WriteFile(c.out, []byte(md), 0o644); err != nil {
			return fmt.Errorf("writing the results: %w", err)
		}
	}
	return nil
}

// bench is one run's veth pair: the reference tools' clients and ours run in its A side, their
// servers and the agent server in its B side.
type bench struct {
	c     config
	p     *vethpair.Pair
	token string // the agent server's
	port  int    // the agent server's, once started
}

// startAgent starts the agent server in the B side and waits for its ready event; stop kills it.
func (b *bench) startAgent() (stop func(), err error) {
	srv := vethpair.Command(b.p.NSB, b.c.agentBin, "serve", "--token", b.token, "--deadline", "30m")
	out, err := srv.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("agent server: %w", err)
	}
	if err := srv.Start(); err != nil {
		return nil, fmt.Errorf("agent server: %w", err)
	}
	stop = func() { _ = srv.Process.Kill(); _ = srv.Wait() }
	var ready agent.Event
	if err := json.NewDecoder(bufio.NewReader(out)).Decode(&ready); err != nil || ready.Type != agent.EventReady {
		stop()
		return nil, fmt.Errorf("agent server not ready: %v %+v", err, ready)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	b.port = ready.Port
	return stop, nil
}

// inA is a command in the A side.
func (b *bench) inA(name string, args ...string) *exec.Cmd {
	return vethpair.Command(b.p.NSA, name, args...)
}

// job is a job of probes ps against the agent server.
func (b *bench) job(ps ...agent.ProbeSpec) agent.Job {
	return agent.Job{APIVersion: agent.APIVersion, Host: b.p.AddrB, Port: b.port, Token: b.token, Probes: ps}
}

// throughput compares our TCP probe with iperf3 for each stream count: alternating who goes
// first, the median of each figure over the rounds.
func (b *bench) throughput() ([]row, error) {
	c := b.c
	var rows []row
	for _, streams := range streamCounts {
		var gbps, cpu, srvCPU [2][]float64 // [0] netbench, [1] iperf3
		for r := 0; r < c.rounds; r++ {
			fmt.Fprintf(os.Stderr, "throughput, %d stream(s), round %d/%d\n", streams, r+1, c.rounds)
			var ours, ref reftools.Throughput
			runOurs := func() error {
				res, err := runAgent(c.agentBin, b.p.NSA, b.job(agent.ProbeSpec{Kind: agent.ProbeTCP, Streams: streams, DurationSeconds: c.tputSecs}))
				if err != nil {
					return err
				}
				tp := res[0].Throughput
				ours = reftools.Throughput{Gbps: tp.BitsPerSecondReceived / 1e9, CPU: tp.ClientCPUPercent, ServerCPU: tp.ServerCPUPercent, Retransmits: tp.Retransmits}
				return nil
			}
			if oursFirst(r) {
				if err := runOurs(); err != nil {
					return nil, err
				}
			}
			var err error
			if ref, err = reftools.Iperf(b.inA, b.p.AddrB, streams, c.tputSecs); err != nil {
				return nil, fmt.Errorf("iperf3: %w", err)
			}
			if !oursFirst(r) {
				if err := runOurs(); err != nil {
					return nil, err
				}
			}
			for i, t := range []reftools.Throughput{ours, ref} {
				gbps[i] = append(gbps[i], t.Gbps)
				cpu[i] = append(cpu[i], t.CPU/t.Gbps)
				srvCPU[i] = append(srvCPU[i], t.ServerCPU/t.Gbps)
			}
		}
		rows = append(rows, tputRows(streams, gbps, cpu, srvCPU)...)
	}
	return rows, nil
}

// http compares our HTTP keep-alive probe with fortio's runner, alternating who goes first,
// against the same server.
func (b *bench) http() ([]row, error) {
	c := b.c
	var oursP50, oursP99, refP50, refP99, ref2P50, ref2P99 []float64
	oursHTTPRun := func() error {
		res, err := runAgent(c.agentBin, b.p.NSA, b.job(agent.ProbeSpec{Kind: agent.ProbeHTTP, QPS: httpQPS, Connections: httpConns, DurationSeconds: c.httpSecs}))
		if err != nil {
			return err
		}
		oursP50, oursP99 = append(oursP50, res[0].HTTP.Latency.P50Micros), append(oursP99, res[0].HTTP.Latency.P99Micros)
		fmt.Fprintf(os.Stderr, "  netbench: p50 %.1f µs p99 %.1f µs\n", res[0].HTTP.Latency.P50Micros, res[0].HTTP.Latency.P99Micros)
		return nil
	}
	for r := 0; r < c.httpRounds; r++ {
		fmt.Fprintf(os.Stderr, "http keep-alive, round %d/%d\n", r+1, c.httpRounds)
		if oursFirst(r) {
			if err := oursHTTPRun(); err != nil {
				return nil, err
			}
		}
		// fortio with the agent's CPU budget (one thread), then with Go's default.
		for _, procs := range []string{oneThread, ""} {
			h := reftools.HTTPRun{URL: fmt.Sprintf("http://%s/", net.JoinHostPort(b.p.AddrB, strconv.Itoa(b.port))), Token: b.token, Seconds: c.httpSecs, QPS: httpQPS, Connections: httpConns}
			ref, _, err := reftools.Fortio(b.inA, h, procs)
			if err != nil {
				return nil, fmt.Errorf("fortio: %w", err)
			}
			fmt.Fprintf(os.Stderr, "  fortio (GOMAXPROCS=%q): p50 %.1f µs p99 %.1f µs\n", procs, ref.P50Micros, ref.P99Micros)
			if procs == oneThread {
				refP50, refP99 = append(refP50, ref.P50Micros), append(refP99, ref.P99Micros)
			} else {
				ref2P50, ref2P99 = append(ref2P50, ref.P50Micros), append(ref2P99, ref.P99Micros)
			}
		}
		if !oursFirst(r) {
			if err := oursHTTPRun(); err != nil {
				return nil, err
			}
		}
	}
	return httpRows([2][]float64{oursP50, oursP99}, [2][]float64{refP50, refP99}, [2][]float64{ref2P50, ref2P99}), nil
}

// rtt compares our ICMP and TCP-connect probes with iputils ping: one run each, ping first,
// then ours in one job.
func (b *bench) rtt() ([]row, error) {
	fmt.Fprintln(os.Stderr, "rtt")
	pingP50, pingAvg, err := reftools.Ping(b.inA, b.p.AddrB, b.c.rttCount, rttInterval)
	if err != nil {
		return nil, fmt.Errorf("ping: %w", err)
	}
	ms := float64(rttInterval) / float64(time.Millisecond)
	res, err := runAgent(b.c.agentBin, b.p.NSA, b.job(
		agent.ProbeSpec{Kind: agent.ProbeICMP, Count: b.c.rttCount, IntervalMillis: ms},
		agent.ProbeSpec{Kind: agent.ProbeTCPRTT, Count: b.c.rttCount, IntervalMillis: ms},
	))
	if err != nil {
		return nil, err
	}
	return rttRows(res[0].RTT.Method, res[0].RTT.RTT, res[1].RTT.RTT, pingP50, pingAvg), nil
}

// row is one line of the table: every round's figure of each tool.
type row struct {
	what, metric string
	ours, ref    []float64
	refTool      string
	goal         benchinfo.Goal
}

// tputRows are one stream count's rows; each argument holds netbench's rounds, then iperf3's.
func tputRows(streams int, gbps, cpu, srvCPU [2][]float64) []row {
	what := fmt.Sprintf("TCP throughput, %d stream(s)", streams)
	return []row{
		{what, "Gbps received", gbps[0], gbps[1], "iperf3", tputGoal},
		{what, "sender CPU % per Gbps", cpu[0], cpu[1], "iperf3", cpuGoal},
		{what, "receiver CPU % per Gbps", srvCPU[0], srvCPU[1], "iperf3", benchinfo.Info},
	}
}

// httpRows are the HTTP comparison's rows; each argument holds the rounds' p50s, then p99s.
func httpRows(ours, oneThreadRef, allCoresRef [2][]float64) []row {
	what := fmt.Sprintf("HTTP keep-alive %d qps × %d conns", httpQPS, httpConns)
	return []row{
		{what, "p50 µs", ours[0], oneThreadRef[0], oneThreadTool, httpGoal},
		{what, "p99 µs", ours[1], oneThreadRef[1], oneThreadTool, benchinfo.Info},
		{what, "p50 µs", ours[0], allCoresRef[0], "fortio runner, all cores", benchinfo.Info},
		{what, "p99 µs", ours[1], allCoresRef[1], "fortio runner, all cores", benchinfo.Info},
	}
}

// rttRows are the RTT comparison's rows: one run of each.
func rttRows(method string, icmp, tcp probes.Latency, pingP50, pingAvg float64) []row {
	one := func(x float64) []float64 { return []float64{x} }
	return []row{
		{"ICMP RTT (" + method + ")", "p50 µs", one(icmp.P50Micros), one(pingP50), "ping", rttGoal},
		{"ICMP RTT (" + method + ")", "avg µs", one(icmp.AvgMicros), one(pingAvg), "ping", benchinfo.Info},
		{"TCP-connect RTT", "p50 µs", one(tcp.P50Micros), one(pingP50), "ping", rttGoal},
	}
}

func runAgent(bin, ns string, job agent.Job) ([]*agent.ProbeResult, error) {
	data, _ := json.Marshal(job)
	cmd := vethpair.Command(ns, bin, "run", "--job", string(data))
	out, err := cmd.Output()
	var results []*agent.ProbeResult
	for _, line := range bytes.Split(out, []byte("\n")) {
		var ev agent.Event
		if json.Unmarshal(line, &ev) == nil {
			switch ev.Type {
			case agent.EventResult:
				results = append(results, ev.Result)
			case agent.EventError:
				return nil, fmt.Errorf("agent: %s", ev.Message)
			}
		}
	}
	if err != nil {
		return nil, fmt.Errorf("agent run: %w", err)
	}
	return results, nil
}

func randomToken() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
