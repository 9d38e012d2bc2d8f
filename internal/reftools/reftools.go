// Package reftools runs the reference tools the benchmarks compare the agent with — iperf3,
// iputils ping and fortio's own HTTP runner — inside a network namespace, and reads their
// results. The benchmarks use it on a veth pair (hack/bench) and in the lab's pods (hack/benchlab).
package reftools

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/periodic"
	"fortio.org/log"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
)

// Runner builds a command that runs inside the namespace under test (ip netns exec, nsenter).
type Runner func(name string, args ...string) *exec.Cmd

// IperfPort is where the benchmarks start iperf3's server.
const IperfPort = "5201"

// Throughput is one iperf3 (or agent) run: Gbit/s received, and the sender's and the receiver's
// CPU in % of one core.
type Throughput struct {
	Gbps, CPU, ServerCPU float64
	Retransmits          int64
}

// Iperf runs an iperf3 client with streams parallel streams for secs seconds against addr.
func Iperf(run Runner, addr string, streams int, secs float64) (Throughput, error) {
	out, err := run("iperf3", "-c", addr, "-p", IperfPort, "-J", "-P", strconv.Itoa(streams), "-t", fmt.Sprint(secs)).Output()
	if err != nil {
		return Throughput{}, fmt.Errorf("iperf3: %w: %s", err, out)
	}
	var r struct {
		End struct {
			SumSent struct {
				Retransmits int64 `json:"retransmits"`
			} `json:"sum_sent"`
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
			CPU struct {
				HostTotal   float64 `json:"host_total"`
				RemoteTotal float64 `json:"remote_total"`
			} `json:"cpu_utilization_percent"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return Throughput{}, fmt.Errorf("iperf3 output: %w", err)
	}
	return Throughput{Gbps: r.End.SumReceived.BitsPerSecond / 1e9, CPU: r.End.CPU.HostTotal,
		ServerCPU: r.End.CPU.RemoteTotal, Retransmits: r.End.SumSent.Retransmits}, nil
}

// IperfServer starts iperf3's server; stop it with the returned function.
func IperfServer(run Runner) (stop func(), err error) {
	return startServer(run, "iperf3", "-s", "-p", IperfPort)
}

var pingTime = regexp.MustCompile(`time=([0-9.]+) ms`)

// Ping returns iputils ping's median (nearest rank, as the agent's probes use) and mean RTT in µs
// over count echoes interval apart; ping prints 1 µs resolution.
func Ping(run Runner, addr string, count int, interval time.Duration) (p50, avg float64, err error) {
	out, err := run("ping", "-n", "-c", strconv.Itoa(count), "-i", fmt.Sprintf("%.3f", interval.Seconds()), addr).Output()
	if err != nil {
		return 0, 0, fmt.Errorf("ping: %w", err)
	}
	var v []float64
	for _, m := range pingTime.FindAllSubmatch(out, -1) {
		f, _ := strconv.ParseFloat(string(m[1]), 64)
		v = append(v, f*1000)
	}
	if len(v) == 0 {
		return 0, 0, errors.New("ping printed no replies")
	}
	sort.Float64s(v)
	var sum float64
	for _, x := range v {
		sum += x
	}
	return v[(len(v)+1)/2-1], sum / float64(len(v)), nil
}

// FortioArg and NewConnArg are the first arguments that make a benchmark binary act as the
// fortio runner or as the new-connection client (see MaybeRunReference): both must start inside
// the namespace, so the benchmark re-executes itself there.
const (
	FortioArg      = "fortio-ref"
	FortioCloseArg = "fortio-close-ref"
	NewConnArg     = "newconn-ref"
)

// HTTPRun is one fortio run's settings: qps 0 runs closed loop (as fast as the connections go).
type HTTPRun struct {
	URL, Token  string
	Seconds     float64
	QPS         float64
	Connections int
}

// Fortio runs fortio's own HTTP runner in the namespace by re-executing the benchmark binary
// (which must call MaybeRunReference first thing), with GOMAXPROCS set to procs ("" for Go's
// default).
func Fortio(run Runner, h HTTPRun, procs string) (probes.Latency, float64, error) {
	return reference(run, FortioArg, h, procs)
}

// FortioCloseEach runs fortio's HTTP runner with keep-alive off (fortio's -keepalive=false):
// each request on a connection of its own, opened and closed around it — the connection-rate
// reference beside tcp-crr (its requests and answers are HTTP's, larger than tcp-crr's bytes).
func FortioCloseEach(run Runner, h HTTPRun, procs string) (probes.Latency, float64, error) {
	return reference(run, FortioCloseArg, h, procs)
}

// NewConn runs the new-connection client (Go's net/http, keep-alive off) in the namespace: h.QPS
// requests per second spread over h.Connections workers, as the http-new-conn probe paces them,
// timed from the dial to the first byte of the answer (what curl calls time_starttransfer).
func NewConn(run Runner, h HTTPRun) (probes.Latency, error) {
	lat, _, err := reference(run, NewConnArg, h, "1")
	return lat, err
}

func reference(run Runner, kind string, h HTTPRun, procs string) (probes.Latency, float64, error) {
	self, err := os.Executable()
	if err != nil {
		return probes.Latency{}, 0, err
	}
	cmd := run(self, kind, h.URL, h.Token, fmt.Sprint(h.Seconds), fmt.Sprint(h.QPS), strconv.Itoa(h.Connections))
	cmd.Env = append(os.Environ(), "GOMAXPROCS="+procs)
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return probes.Latency{}, 0, fmt.Errorf("%s: %w: %s", kind, err, strings.TrimSpace(string(exit.Stderr)))
		}
		return probes.Latency{}, 0, fmt.Errorf("%s: %w", kind, err)
	}
	var r refResult
	if err := json.Unmarshal(out, &r); err != nil {
		return probes.Latency{}, 0, fmt.Errorf("%s output %q: %w", kind, out, err)
	}
	return r.Latency, r.QPS, nil
}

type refResult struct {
	Latency probes.Latency `json:"latency"`
	QPS     float64        `json:"qps"`
}

// MaybeRunReference runs a reference client and exits when the process was started as one.
func MaybeRunReference() {
	if len(os.Args) < 2 {
		return
	}
	if os.Args[1] == CgroupArg {
		err := runInCgroupOf(os.Args[2:]) // returns only on failure
		fmt.Fprintln(os.Stderr, CgroupArg+":", err)
		os.Exit(1)
	}
	var run func(HTTPRun) (refResult, error)
	switch os.Args[1] {
	case FortioArg:
		run = func(h HTTPRun) (refResult, error) { return runFortio(h, true) }
	case FortioCloseArg:
		run = func(h HTTPRun) (refResult, error) { return runFortio(h, false) }
	case NewConnArg:
		run = runNewConn
	default:
		return
	}
	h, err := parseHTTPRun(os.Args[2:])
	var r refResult
	if err == nil {
		r, err = run(h)
	}
	if err == nil {
		err = json.NewEncoder(os.Stdout).Encode(r)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, os.Args[1]+":", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func parseHTTPRun(args []string) (HTTPRun, error) {
	if len(args) != 5 {
		return HTTPRun{}, errors.New("usage: URL TOKEN SECONDS QPS CONNECTIONS")
	}
	secs, err1 := strconv.ParseFloat(args[2], 64)
	qps, err2 := strconv.ParseFloat(args[3], 64)
	conns, err3 := strconv.Atoi(args[4])
	return HTTPRun{URL: args[0], Token: args[1], Seconds: secs, QPS: qps, Connections: conns}, errors.Join(err1, err2, err3)
}

// runFortio runs fortio's HTTP runner configured as fortio's CLI would be with
// -qps Q -c C -t S -uniform -H "X-Netbench-Token: T" (and -keepalive=false without keepAlive), and takes every request's latency as the
// probe does (probes.RecordLatencies): fortio's own percentiles are interpolated in buckets that
// are 10 ms wide between 10 and 20 ms, which would compare the histograms, not the engines.
func runFortio(h HTTPRun, keepAlive bool) (refResult, error) {
	log.SetLogLevelQuiet(log.Error)
	log.SetOutput(io.Discard)
	o := fhttp.HTTPRunnerOptions{}
	o.Init(h.URL)
	o.InitHeaders()
	if h.Token != "" {
		if err := o.AddAndValidateExtraHeader(agent.TokenHeader + ": " + h.Token); err != nil {
			return refResult{}, err
		}
	}
	o.QPS = h.QPS
	if h.QPS <= 0 {
		o.QPS = -1 // fortio: as fast as possible
	}
	o.NumThreads = h.Connections
	o.Uniform = true
	o.DisableKeepAlive = !keepAlive
	o.Duration = time.Duration(h.Seconds * float64(time.Second))
	latency := probes.RecordLatencies(&o.RunnerOptions)
	o.Out = io.Discard
	o.Stop = periodic.NewAborter()
	res, err := fhttp.RunHTTPTest(&o)
	if err != nil {
		return refResult{}, err
	}
	if res.RetCodes[200] != res.DurationHistogram.Count {
		return refResult{}, fmt.Errorf("fortio: non-200 answers: %v", res.RetCodes)
	}
	return refResult{Latency: latency(), QPS: res.ActualQPS}, nil
}

// Median is the middle value (the mean of the two middle ones for an even count).
func Median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// Range is the smallest and the largest value.
func Range(v []float64) (lo, hi float64) {
	if len(v) == 0 {
		return 0, 0
	}
	lo, hi = v[0], v[0]
	for _, x := range v {
		lo, hi = min(lo, x), max(hi, x)
	}
	return lo, hi
}

// FirstLine is the first line a command prints (a version), or "NAME ?".
func FirstLine(name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return name + " ?"
	}
	return strings.TrimSpace(strings.SplitN(string(out), "\n", 2)[0])
}

// CPUModel is the machine's CPU model name.
func CPUModel() string {
	b, _ := os.ReadFile("/proc/cpuinfo")
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "model name") {
			return strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
		}
	}
	return "?"
}

// Spread is (max − min) ÷ median of v, in %.
func Spread(v []float64) float64 {
	lo, hi := Range(v)
	if m := Median(v); m != 0 {
		return (hi - lo) / m * 100
	}
	return 0
}

// Overlap says whether the ranges of a and b meet.
func Overlap(a, b []float64) bool {
	alo, ahi := Range(a)
	blo, bhi := Range(b)
	return alo <= bhi && blo <= ahi
}
