package probes

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// RTT methods, as reported in RTTResult.Method.
const (
	MethodICMPUnprivileged = "icmp-unprivileged" // SOCK_DGRAM ICMP socket, allowed by net.ipv4.ping_group_range
	MethodICMPRaw          = "icmp-raw"          // raw socket, needs CAP_NET_RAW
	MethodTCPConnect       = "tcp-connect"       // time of the TCP three-way handshake (connect(2))
)

// ErrICMPNotPermitted is returned when neither an unprivileged ICMP socket nor a raw socket may
// be opened by this process.
var ErrICMPNotPermitted = errors.New("ICMP not permitted: the group is outside net.ipv4.ping_group_range and the process lacks CAP_NET_RAW")

// Timestamp sources, as reported in RTTResult.Timestamps.
const (
	TimestampsKernel    = "kernel"    // receive time stamped by the kernel (SO_TIMESTAMPNS), as iputils ping does
	TimestampsUserspace = "userspace" // receive time read after the process woke up
)

// RTTSpec configures an RTT probe.
type RTTSpec struct {
	// Target is a host (ICMP) or host:port (TCP connect).
	Target   string
	Count    int
	Interval time.Duration
	// Timeout for each probe; a probe without an answer by then counts as lost.
	Timeout time.Duration
	// Raw forces a raw ICMP socket; by default the unprivileged socket is used when the
	// ping group range allows it, and a raw socket otherwise.
	Raw bool
}

func (s *RTTSpec) defaults() {
	if s.Count <= 0 {
		s.Count = 20
	}
	if s.Interval <= 0 {
		s.Interval = 50 * time.Millisecond
	}
	if s.Timeout <= 0 {
		s.Timeout = time.Second
	}
}

// RTTResult is v1alpha1.RTTResult, a type of the reports' schema.
type RTTResult = v1alpha1.RTTResult

// ICMPMethod reports which ICMP socket this process can use, or ErrICMPNotPermitted.
func ICMPMethod() (string, error) {
	if unprivilegedICMPAllowed() {
		return MethodICMPUnprivileged, nil
	}
	c, err := net.ListenPacket("ip4:icmp", "0.0.0.0")
	if err != nil {
		return "", ErrICMPNotPermitted
	}
	c.Close()
	return MethodICMPRaw, nil
}

// readRange reads a sysctl of two numbers, "LOW HIGH".
func readRange(path string) (lo, hi int64, ok bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0, false
	}
	lo, err1 := strconv.ParseInt(f[0], 10, 64)
	hi, err2 := strconv.ParseInt(f[1], 10, 64)
	return lo, hi, err1 == nil && err2 == nil
}

func unprivilegedICMPAllowed() bool {
	lo, hi, ok := readRange("/proc/sys/net/ipv4/ping_group_range")
	if !ok {
		return false
	}
	groups, err := os.Getgroups()
	if err != nil {
		groups = nil
	}
	groups = append(groups, os.Getegid())
	for _, g := range groups {
		if int64(g) >= lo && int64(g) <= hi {
			return true
		}
	}
	return false
}

// TCPConnectRTT measures the TCP handshake to Target (host:port) Count times. It needs no
// privilege and works wherever the port is reachable. The RTT is the kernel's own sample of the
// SYN → SYN-ACK round trip (TCP_INFO right after connect, microsecond resolution); the time
// connect(2) took as the process saw it is reported beside it. Each connection is reset at once.
func TCPConnectRTT(ctx context.Context, spec RTTSpec) (*RTTResult, error) {
	spec.defaults()
	if _, _, err := net.SplitHostPort(spec.Target); err != nil {
		return nil, fmt.Errorf("tcp rtt target %q: want host:port", spec.Target)
	}
	d := net.Dialer{Timeout: spec.Timeout}
	var rtts, connects []time.Duration
	sent := 0
	source := TimestampsKernel
	var firstErr error
	start := time.Now()
	tick := time.NewTicker(spec.Interval)
	defer tick.Stop()
	for i := 0; i < spec.Count; i++ {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-tick.C:
			}
		}
		sent++
		t0 := time.Now()
		c, err := d.DialContext(ctx, "tcp", spec.Target)
		connect := time.Since(t0)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		rtt := connect
		if tc, ok := c.(*net.TCPConn); ok {
			if k, ok := handshakeRTT(tc); ok {
				rtt = k
			} else {
				source = TimestampsUserspace
			}
			// RST instead of FIN: no TIME_WAIT pile-up on either side for short probes.
			_ = tc.SetLinger(0)
		}
		c.Close()
		rtts = append(rtts, rtt)
		connects = append(connects, connect)
	}
	if len(rtts) == 0 && firstErr != nil {
		return nil, fmt.Errorf("tcp connect to %s: %w", spec.Target, firstErr)
	}
	r := rttResult(MethodTCPConnect, spec, sent, rtts, time.Since(start))
	r.Timestamps = source
	cl := LatencyFromSamples(connects)
	r.ConnectLatency = &cl
	return r, nil
}

func rttResult(method string, spec RTTSpec, sent int, rtts []time.Duration, elapsed time.Duration) *RTTResult {
	r := &RTTResult{
		Method:          method,
		Target:          spec.Target,
		RequestedCount:  spec.Count,
		IntervalMillis:  float64(spec.Interval) / 1e6,
		Sent:            sent,
		Received:        len(rtts),
		RTT:             LatencyFromSamples(rtts),
		DurationSeconds: round3(elapsed.Seconds()),
	}
	if sent > 0 {
		r.LossPercent = round3(100 * float64(sent-len(rtts)) / float64(sent))
		if fault.On(fault.LossOneWay) {
			r.LossPercent = round3(100 * (1 - math.Sqrt(float64(len(rtts))/float64(sent))))
		}
	}
	// mdev as ping prints it: the standard deviation of the RTTs.
	r.MdevMicros = r.RTT.StdDevMicros
	return r
}
