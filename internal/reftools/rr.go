package reftools

import (
	"encoding/json"
	"fmt"
	"math"
	"net"
	"regexp"
	"strconv"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cpustat"
)

// Ports of the request/response references' servers.
const (
	SockperfTCPPort = 11111
	SockperfUDPPort = 11112
	IrttPort        = 2112
)

// RR is one request/response run: round trips per second and their median in µs.
type RR struct {
	PerSecond, P50Micros float64
	Sent, Received       int64
	// Answered is every answer of the whole run, its warm-up included; IdleEntries how many
	// times the machine's CPUs entered idle meanwhile (cpustat.IdleEntries, from before the
	// process started to after it ended), when IdleCounted.
	Answered    int64
	IdleEntries int64
	IdleCounted bool
}

// IdlePerAnswer is the machine's idle entries per answer of the whole run; not ok without a
// count.
func (r RR) IdlePerAnswer() (float64, bool) {
	if !r.IdleCounted || r.Answered <= 0 {
		return 0, false
	}
	return float64(r.IdleEntries) / float64(r.Answered), true
}

// SockperfServer starts sockperf's server (TCP or UDP) on its port; stop ends it.
func SockperfServer(run Runner, tcp bool) (stop func(), err error) {
	args := []string{"server", "-i", "0.0.0.0", "-p", strconv.Itoa(SockperfUDPPort)}
	if tcp {
		args = []string{"server", "--tcp", "-i", "0.0.0.0", "-p", strconv.Itoa(SockperfTCPPort)}
	}
	return startServer(run, "sockperf", args...)
}

// IrttServer starts irtt's server without its minimum interval (the probe sends every 1 ms).
func IrttServer(run Runner) (stop func(), err error) {
	return startServer(run, "irtt", "server", "-i", "0", "-b", ":"+strconv.Itoa(IrttPort))
}

// startServer starts a reference tool's server in the namespace; the returned func ends it.
func startServer(run Runner, name string, args ...string) (func(), error) {
	cmd := run(name, args...)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("%s server: %w", name, err)
	}
	time.Sleep(300 * time.Millisecond) // iperf3, sockperf and irtt have no ready signal
	return func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }, nil
}

var (
	sockperfRun   = regexp.MustCompile(`\[Valid Duration\] RunTime=([0-9.]+) sec; SentMessages=(\d+); ReceivedMessages=(\d+)`)
	sockperfTotal = regexp.MustCompile(`\[Total Run\] RunTime=[0-9.]+ sec;[^\n]*ReceivedMessages=(\d+)`)
	sockperfP50   = regexp.MustCompile(`percentile 50\.000 =\s*([0-9.]+)`)
)

// Sockperf runs sockperf's ping-pong client for secs seconds: one socket, one message of size
// bytes outstanding at a time, as fast as the answers come (--mps=max), round trips timed whole
// (--full-rtt) — what tcp-rr and udp-rr do with one client. Its figures are of its "valid
// duration": the run less its warm-up and its last moments.
func Sockperf(run Runner, addr string, tcp bool, size int, secs float64) (RR, error) {
	if secs < 1 || secs != math.Trunc(secs) {
		return RR{}, fmt.Errorf("sockperf runs whole seconds: %g s", secs)
	}
	args := []string{"ping-pong", "-i", addr, "-p", strconv.Itoa(SockperfUDPPort), "-m", strconv.Itoa(size),
		"-t", strconv.Itoa(int(secs)), "--mps=max", "--full-rtt"}
	if tcp {
		args = append(args, "--tcp")
		args[4] = strconv.Itoa(SockperfTCPPort)
	}
	before, ok0 := cpustat.IdleEntries()
	out, err := run("sockperf", args...).CombinedOutput()
	after, ok1 := cpustat.IdleEntries()
	if err != nil {
		return RR{}, fmt.Errorf("sockperf ping-pong: %w: %s", err, out)
	}
	r, err := parseSockperf(string(out))
	r.IdleEntries, r.IdleCounted = after-before, ok0 && ok1
	return r, err
}

func parseSockperf(out string) (RR, error) {
	m, p := sockperfRun.FindStringSubmatch(out), sockperfP50.FindStringSubmatch(out)
	if m == nil || p == nil {
		return RR{}, fmt.Errorf("sockperf printed no run time or median: %q", out)
	}
	secs, _ := strconv.ParseFloat(m[1], 64)
	var r RR
	r.Sent, _ = strconv.ParseInt(m[2], 10, 64)
	r.Received, _ = strconv.ParseInt(m[3], 10, 64)
	r.P50Micros, _ = strconv.ParseFloat(p[1], 64)
	if t := sockperfTotal.FindStringSubmatch(out); t != nil {
		r.Answered, _ = strconv.ParseInt(t[1], 10, 64)
	}
	if secs <= 0 || r.Received == 0 {
		return RR{}, fmt.Errorf("sockperf: %d answers in %g s", r.Received, secs)
	}
	r.PerSecond = float64(r.Received) / secs
	return r, nil
}

// Irtt is one irtt run: round-trip median in µs with the server's processing time taken off
// (irtt's own computation from the server's receive and send stamps), loss, and the mean
// round-trip IPDV in µs.
type Irtt struct {
	P50Micros, LossPercent, IPDVMicros float64
	Sent, Received                     int64
}

// RunIrtt sends count packets of size bytes interval apart to irtt's server at addr.
func RunIrtt(run Runner, addr string, count int, interval time.Duration, size int) (Irtt, error) {
	out, err := run("irtt", "client", "-Q", "-o", "-", "-i", interval.String(), "-d", (time.Duration(count) * interval).String(),
		"-l", strconv.Itoa(size), net.JoinHostPort(addr, strconv.Itoa(IrttPort))).Output()
	if err != nil {
		return Irtt{}, fmt.Errorf("irtt client: %w: %s", err, out)
	}
	return parseIrtt(out)
}

func parseIrtt(out []byte) (Irtt, error) {
	var r struct {
		Stats struct {
			RTT struct {
				Median float64 `json:"median"`
			} `json:"rtt"`
			IPDV struct {
				Mean float64 `json:"mean"`
			} `json:"ipdv_round_trip"`
			Sent     int64   `json:"packets_sent"`
			Received int64   `json:"packets_received"`
			Loss     float64 `json:"packet_loss_percent"`
		} `json:"stats"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		return Irtt{}, fmt.Errorf("irtt's JSON: %w", err)
	}
	if r.Stats.Received == 0 {
		return Irtt{}, fmt.Errorf("irtt: no answer to %d packets", r.Stats.Sent)
	}
	s := r.Stats
	return Irtt{P50Micros: s.RTT.Median / 1e3, LossPercent: s.Loss, IPDVMicros: s.IPDV.Mean / 1e3, Sent: s.Sent, Received: s.Received}, nil
}
