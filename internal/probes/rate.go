package probes

import (
	"context"
	"sync"
	"time"

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

// rateLoop is the state Connections clients of one closed loop share.
type rateLoop struct {
	kind     string
	spec     RateSpec
	deadline time.Time
	lat      *sampleRecorder
	connect  *sampleRecorder // tcp-crr

	mu         sync.Mutex
	errors     int64
	firstError error
	stopped    string
	end        time.Time // the last transaction's end
	started    int64
	capped     bool
}

func newRateLoop(kind string, spec RateSpec) *rateLoop {
	return &rateLoop{kind: kind, spec: spec, lat: newSampleRecorder(MaxExactSamples), connect: newSampleRecorder(MaxExactSamples)}
}

// done records one completed transaction that started at start.
func (l *rateLoop) done(start time.Time) {
	now := time.Now()
	l.lat.add(now.Sub(start))
	l.mu.Lock()
	if now.After(l.end) {
		l.end = now
	}
	l.mu.Unlock()
}

// failed records one failed transaction: the loop's time runs until its failure too.
func (l *rateLoop) failed(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if now := time.Now(); now.After(l.end) {
		l.end = now
	}
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
	l.deadline = time.Time{}
}

// more says whether a client starts another transaction, and counts it.
func (l *rateLoop) more(ctx context.Context) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ctx.Err() != nil || !time.Now().Before(l.deadline) {
		return false
	}
	if limit := l.spec.MaxTransactions; limit > 0 && l.started >= limit {
		l.capped = true
		return false
	}
	l.started++
	return true
}

// run starts the deadline and runs client(i) for each of the Connections clients until they
// return.
func (l *rateLoop) run(client func(i int)) time.Time {
	start := time.Now()
	l.mu.Lock()
	l.deadline = start.Add(l.spec.Duration)
	l.end = start
	l.mu.Unlock()
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
	r := &RateResult{Kind: l.kind, Connections: l.spec.Connections, RequestBytes: l.spec.RequestBytes, ResponseBytes: l.spec.ResponseBytes,
		DurationSeconds: round3(l.end.Sub(start).Seconds()), Latency: l.lat.latency(), Errors: l.errors, Stopped: l.stopped, Capped: l.capped,
		Cap: l.spec.MaxTransactions}
	r.Transactions = r.Latency.Count
	if s := l.end.Sub(start).Seconds(); s > 0 {
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
