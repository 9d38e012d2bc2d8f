package probes

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// RateResult is v1alpha1.RateResult, a type of the reports' schema.
type RateResult = v1alpha1.RateResult

// Bounds and defaults of the rate probes.
const (
	// MaxRateBytes bounds a request's and a response's size: the server answers from one
	// shared buffer and reads requests through its small per-connection buffer.
	MaxRateBytes = 8 << 10
	// rateIOTimeout bounds each transaction's wait: a path that stopped answering ends the loop.
	rateIOTimeout = 3 * time.Second
	// udpRRTimeout is how long a udp-rr datagram waits for its answer before it counts as lost.
	udpRRTimeout = 200 * time.Millisecond
	// maxFailuresInARow ends one client after so many failed transactions in a row.
	maxFailuresInARow = 3
	// MaxRateClients bounds the clients of tcp-crr and udp-rr: a tcp-crr client's connection
	// waits at the server's gate to present the token among at most 128 of its source's, and
	// the server's UDP echo answers one datagram at a time.
	MaxRateClients = 64
)

// RateSpec configures a rate probe: Connections clients in a closed loop for Duration, each
// transaction a request of RequestBytes answered with ResponseBytes (udp-rr: one datagram size,
// RequestBytes, answered with as many).
type RateSpec struct {
	Address       string // host:port of an agent server
	Token         string // tcp-rr, tcp-crr
	Key           []byte // udp-rr: the datagrams' key (UDPKey)
	Connections   int
	Duration      time.Duration
	RequestBytes  int
	ResponseBytes int
	// MaxTransactions, when positive, ends the loop once so many transactions have started
	// (tcp-crr: connections), before Duration if it comes first.
	MaxTransactions int64
	// PodTimeWaitCeiling, when positive, also holds tcp-crr to that many TIME-WAIT sockets in
	// the whole pod, whatever their peers (a matrix agent's, whose pairs follow each other).
	PodTimeWaitCeiling int
}

func (s *RateSpec) defaults(kind string) {
	s.Connections = max(s.Connections, 1)
	if s.Duration <= 0 {
		s.Duration = 3 * time.Second
	}
	if kind == v1alpha1.ProbeUDPRR {
		s.RequestBytes = max(s.RequestBytes, UDPHeaderLen)
		s.ResponseBytes = s.RequestBytes
		return
	}
	s.RequestBytes, s.ResponseBytes = max(s.RequestBytes, 1), max(s.ResponseBytes, 1)
}

// rateLoop is the state Connections clients of one closed loop share. What a client does
// between two transactions takes no lock (atomics): under a busy CPU a lock's holder descheduled
// would hold the others, a gap between transactions that Little's law then shows.
type rateLoop struct {
	kind     string
	spec     RateSpec
	deadline atomic.Int64 // Unix ns; 0 once stopped
	lat      *sampleRecorder
	connect  *sampleRecorder // tcp-crr

	end     atomic.Int64 // the last transaction's end, Unix ns
	started atomic.Int64
	capped  atomic.Bool
	dropped atomic.Int64 // transactions done, counted only under fault.RateSampleDropped

	mu         sync.Mutex // the errors' fields
	errors     int64
	firstError error
	stopped    string
}

func newRateLoop(kind string, spec RateSpec) *rateLoop {
	return &rateLoop{kind: kind, spec: spec, lat: newSampleRecorder(MaxExactSamples), connect: newSampleRecorder(MaxExactSamples)}
}

// done records one completed transaction that started at start.
func (l *rateLoop) done(start time.Time) {
	now := time.Now()
	if !fault.On(fault.RateSampleDropped) || l.dropped.Add(1)%10 != 0 {
		l.lat.add(now.Sub(start))
	}
	l.ended(now)
}

// ended moves the loop's end to now, unless a later one is there already.
func (l *rateLoop) ended(now time.Time) {
	ns := now.UnixNano()
	for e := l.end.Load(); ns > e && !l.end.CompareAndSwap(e, ns); e = l.end.Load() {
	}
}

// failed records one failed transaction: the loop's time runs until its failure too.
func (l *rateLoop) failed(err error) {
	l.ended(time.Now())
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errors++
	if l.firstError == nil {
		l.firstError = err
	}
}

// stop ends the loop early for a reason the result names.
func (l *rateLoop) stop(reason string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped == "" {
		l.stopped = reason
	}
	l.deadline.Store(0)
}

// more says whether a client starts another transaction, and counts it.
func (l *rateLoop) more(ctx context.Context) bool {
	if ctx.Err() != nil || time.Now().UnixNano() >= l.deadline.Load() {
		return false
	}
	if limit := l.spec.MaxTransactions; limit > 0 && l.started.Add(1) > limit {
		l.capped.Store(true)
		return false
	} else if limit <= 0 {
		l.started.Add(1)
	}
	return true
}

// run starts the deadline and runs client(i) for each of the Connections clients until they
// return.
func (l *rateLoop) run(client func(i int)) time.Time {
	start := time.Now()
	l.end.Store(start.UnixNano())
	l.deadline.Store(start.Add(l.spec.Duration).UnixNano())
	var wg sync.WaitGroup
	for i := range l.spec.Connections {
		wg.Add(1)
		go func() { defer wg.Done(); client(i) }()
	}
	wg.Wait()
	return start
}

// result summarises a loop that started at start.
func (l *rateLoop) result(start time.Time) *RateResult {
	l.mu.Lock()
	defer l.mu.Unlock()
	took := time.Unix(0, l.end.Load()).Sub(start)
	r := &RateResult{Kind: l.kind, Connections: l.spec.Connections, RequestBytes: l.spec.RequestBytes, ResponseBytes: l.spec.ResponseBytes,
		DurationSeconds: round3(took.Seconds()), Latency: l.lat.latency(), Errors: l.errors, Stopped: l.stopped, Capped: l.capped.Load(),
		Cap: l.spec.MaxTransactions}
	r.Transactions = r.Latency.Count
	if s := took.Seconds(); s > 0 {
		r.PerSecond = round3(float64(r.Transactions) / s)
	}
	if r.Latency.AvgMicros > 0 {
		r.LittleLawPerSecond = round3(float64(r.Connections) / (r.Latency.AvgMicros / 1e6))
	}
	if l.firstError != nil {
		r.FirstError = l.firstError.Error()
	}
	if l.kind == v1alpha1.ProbeTCPCRR {
		c := l.connect.latency()
		r.Connect = &c
	}
	return r
}

// clientSocket is a rate client's connection: its socket detached (blockingSocket) where it
// could be, in Go's network poller otherwise.
type clientSocket struct {
	c  net.Conn
	bs *blockingSocket
}

// interrupt ends the transaction under way, and every later one.
func (s *clientSocket) interrupt() {
	if s.bs != nil {
		s.bs.interrupt()
		return
	}
	_ = s.c.SetDeadline(time.Now())
}

// clientWait is how the clients of socks waited for their answers: in blocking reads if every
// one of them did.
func clientWait[S interface{ blocking() bool }](socks []S) string {
	for _, s := range socks {
		if !s.blocking() {
			return v1alpha1.WaitPoller
		}
	}
	return v1alpha1.WaitBlockingRead
}

func (s *clientSocket) blocking() bool { return s.bs != nil }

func (s *clientSocket) close() {
	if s.bs != nil {
		s.bs.close()
	}
	s.c.Close()
}
