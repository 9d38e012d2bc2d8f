package probes

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cpustat"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/internal/ifstat"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// ThroughputMagic opens every throughput stream; a server that multiplexes one port can route on it.
const ThroughputMagic = "NBTP"

const (
	throughputBufSize = 128 << 10 // iperf3's default TCP block
	tcpInfoEvery      = 100 * time.Millisecond
)

// ThroughputSpec configures a TCP bulk-transfer probe (client sends, server counts).
type ThroughputSpec struct {
	Address  string // host:port of a throughput sink
	Token    string
	Streams  int
	Duration time.Duration
	// Interval, if set, adds a report every Interval (e.g. 10 s over a 180 s sustained run).
	Interval time.Duration
	// ServerCPU, if set, returns the server process's consumed CPU time; it is sampled before
	// and after the run to report the server's CPU use.
	ServerCPU func(ctx context.Context) (time.Duration, error)
	// Started, if set, is told when the streams are open and the transfer starts, and when it
	// is to end.
	Started func(start, end time.Time)
}

// StreamResult is v1alpha1.StreamResult, a type of the reports' schema.
type StreamResult = v1alpha1.StreamResult

// ThroughputInterval is v1alpha1.ThroughputInterval, a type of the reports' schema.
type ThroughputInterval = v1alpha1.ThroughputInterval

// ThroughputResult is v1alpha1.ThroughputResult, a type of the reports' schema.
type ThroughputResult = v1alpha1.ThroughputResult

type streamState struct {
	conn     *net.TCPConn
	raw      syscall.RawConn
	sent     atomic.Int64
	received int64
	mu       sync.Mutex
	rttSum   float64
	samples  int
	maxCwnd  int64
	mss      int64
	retrans  int64
	// retransBytes is what the stream sent again (TCP_INFO bytes_retrans): on the interface,
	// not in the process's write count.
	retransBytes int64
	// ackedAtStart and acked are TCP_INFO's bytes_acked when sending began and at the last
	// sample (the end of sending): the bytes the receiver took in between.
	ackedAtStart, acked int64
}

// delivered is what the receiver acknowledged while the stream was sending: what crossed the
// path in that time, without what the send buffer and the path's queues still held at its end.
func (s *streamState) delivered() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(s.acked-s.ackedAtStart, 0)
}

func (s *streamState) retransmits() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.retrans
}

// dialThroughput opens one authenticated stream.
func dialThroughput(ctx context.Context, addr, token string) (*net.TCPConn, error) {
	hello, err := tokenHello(ThroughputMagic, token)
	if err != nil {
		return nil, err
	}
	var d net.Dialer
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	tc := c.(*net.TCPConn)
	_ = tc.SetDeadline(time.Now().Add(5 * time.Second))
	if _, err := tc.Write(hello); err != nil {
		tc.Close()
		return nil, err
	}
	var ack [1]byte
	_, err = io.ReadFull(tc, ack[:])
	switch {
	case err != nil:
		tc.Close()
		return nil, fmt.Errorf("throughput sink at %s closed the stream before accepting it: %w", addr, err)
	case ack[0] == sinkWrongToken:
		tc.Close()
		return nil, fmt.Errorf("throughput sink at %s refused the stream: wrong token", addr)
	case ack[0] == sinkFull:
		tc.Close()
		return nil, fmt.Errorf("throughput sink at %s refused the stream: its connections for token holders are all in use", addr)
	case ack[0] != sinkAccepted:
		tc.Close()
		return nil, fmt.Errorf("throughput sink at %s answered %q, not a netbench sink", addr, ack[0])
	}
	_ = tc.SetDeadline(time.Time{})
	return tc, nil
}

// Throughput sends as fast as TCP allows on spec.Streams parallel connections for spec.Duration.
func Throughput(ctx context.Context, spec ThroughputSpec) (*ThroughputResult, error) {
	if spec.Streams <= 0 {
		spec.Streams = 1
	}
	if spec.Duration <= 0 {
		spec.Duration = 5 * time.Second
	}
	streams := make([]*streamState, spec.Streams)
	defer closeStreams(streams)
	if err := dialStreams(ctx, spec, streams); err != nil {
		return nil, err
	}

	var serverCPU0 time.Duration
	haveServerCPU := false
	if spec.ServerCPU != nil {
		if v, err := spec.ServerCPU(ctx); err == nil {
			serverCPU0, haveServerCPU = v, true
		}
	}
	for _, s := range streams {
		s.markAcked()
	}
	cpu0 := cpustat.ProcessCPU()
	start := time.Now()
	end := start.Add(spec.Duration)
	if spec.Started != nil {
		spec.Started(start, end)
	}

	sendDone := make(chan error, 1)
	go func() { sendDone <- sendAll(ctx, streams, end) }()
	sampler := startTCPInfoSampler(streams, start, spec.Interval)
	sendErr := <-sendDone
	sendElapsed := time.Since(start)
	intervals := sampler.stop() // before the last sample: the delivery counted ends here
	for _, s := range streams {
		s.sampleTCPInfo()
		ifstat.CountRetransmitted(s.retransBytes)
	}
	cpu1 := cpustat.ProcessCPU()
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if sendErr != nil {
		return nil, sendErr
	}
	if err := readSinkCounts(streams); err != nil {
		return nil, err
	}
	el := sendElapsed.Seconds()
	r := &ThroughputResult{
		Address:          spec.Address,
		Streams:          spec.Streams,
		RequestedSeconds: spec.Duration.Seconds(),
		DurationSeconds:  round3(el),
		Intervals:        intervals,
		ClientCPUPercent: round3(100 * (cpu1 - cpu0).Seconds() / el),
	}
	if haveServerCPU {
		if v, err := spec.ServerCPU(ctx); err == nil {
			r.ServerCPUPercent = round3(100 * (v - serverCPU0).Seconds() / el)
		}
	}
	addStreams(r, streams, el)
	return r, nil
}

// dialStreams opens every stream of streams, stopping at the first that fails; the caller
// closes those opened (closeStreams).
func dialStreams(ctx context.Context, spec ThroughputSpec, streams []*streamState) error {
	for i := range streams {
		c, err := dialThroughput(ctx, spec.Address, spec.Token)
		if err != nil {
			return fmt.Errorf("throughput stream %d to %s: %w", i+1, spec.Address, err)
		}
		raw, err := c.SyscallConn()
		if err != nil {
			c.Close()
			return err
		}
		streams[i] = &streamState{conn: c, raw: raw}
	}
	return nil
}

// closeStreams closes the streams opened.
func closeStreams(streams []*streamState) {
	for _, s := range streams {
		if s != nil {
			s.conn.Close()
		}
	}
}

// tcpInfoSampler samples TCP_INFO and cuts intervals while the streams run.
type tcpInfoSampler struct {
	halt, done chan struct{}
	intervals  []ThroughputInterval // written by run, read after done
}

// startTCPInfoSampler samples every stream's TCP_INFO every tcpInfoEvery and, if interval is
// set, cuts the transfer since start into intervals of about that length, until stopped.
func startTCPInfoSampler(streams []*streamState, start time.Time, interval time.Duration) *tcpInfoSampler {
	sm := &tcpInfoSampler{halt: make(chan struct{}), done: make(chan struct{})}
	go sm.run(streams, start, interval)
	return sm
}

func (sm *tcpInfoSampler) run(streams []*streamState, start time.Time, interval time.Duration) {
	defer close(sm.done)
	t := time.NewTicker(tcpInfoEvery)
	defer t.Stop()
	lastCut := start
	var lastBytes, lastRetrans int64
	for {
		select {
		case <-sm.halt:
			return
		case now := <-t.C:
			for _, s := range streams {
				s.sampleTCPInfo()
			}
			if interval > 0 && now.Sub(lastCut) >= interval-tcpInfoEvery/2 {
				var b, r int64
				for _, s := range streams {
					b += s.sent.Load()
					r += s.retransmits()
				}
				el := now.Sub(lastCut).Seconds()
				sm.intervals = append(sm.intervals, ThroughputInterval{
					StartSeconds:  round3(lastCut.Sub(start).Seconds()),
					EndSeconds:    round3(now.Sub(start).Seconds()),
					BytesSent:     b - lastBytes,
					BitsPerSecond: round3(float64(b-lastBytes) * 8 / el),
					Retransmits:   r - lastRetrans,
				})
				lastCut, lastBytes, lastRetrans = now, b, r
			}
		}
	}
}

// stop ends the sampling and returns the intervals cut.
func (sm *tcpInfoSampler) stop() []ThroughputInterval {
	close(sm.halt)
	<-sm.done
	return sm.intervals
}

// readSinkCounts half-closes every stream and collects what the sink counted.
func readSinkCounts(streams []*streamState) error {
	for i, s := range streams {
		if err := s.conn.CloseWrite(); err != nil {
			return fmt.Errorf("throughput stream %d: %w", i+1, err)
		}
		_ = s.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		var buf [8]byte
		if _, err := io.ReadFull(s.conn, buf[:]); err != nil {
			return fmt.Errorf("throughput stream %d: reading the sink's byte count: %w", i+1, err)
		}
		s.received = int64(binary.BigEndian.Uint64(buf[:]))
	}
	return nil
}

// addStreams adds each stream's result and their totals to r, over el seconds of sending.
func addStreams(r *ThroughputResult, streams []*streamState, el float64) {
	for _, s := range streams {
		sent := s.sent.Load()
		sr := StreamResult{
			BytesSent:      sent,
			BytesReceived:  s.received,
			BitsPerSecond:  round3(float64(sent) * 8 / el),
			Retransmits:    s.retrans,
			MaxCwndBytes:   s.maxCwnd,
			MSSBytes:       s.mss,
			TCPInfoSamples: s.samples,
		}
		if s.samples > 0 {
			sr.MeanRTTMicros = round3(s.rttSum / float64(s.samples))
		}
		r.PerStream = append(r.PerStream, sr)
		r.BytesSent += sent
		r.BytesReceived += s.received
		r.BytesDelivered += s.delivered()
		r.Retransmits += s.retrans
	}
	if fault.On(fault.ThroughputInflated) {
		r.BytesReceived += r.BytesReceived / 3
		r.BytesDelivered += r.BytesDelivered / 3
	}
	r.BitsPerSecondSent = round3(float64(r.BytesSent) * 8 / el)
	delivered := r.BytesDelivered
	if delivered == 0 {
		// A kernel without TCP_INFO bytes_acked (before Linux 4.1, or a sandbox that fills
		// only part of it): the sink's count, which adds what drained after the end.
		delivered = r.BytesReceived
	}
	r.BitsPerSecondReceived = round3(float64(delivered) * 8 / el)
}

// The sink's answer to a stream's hello.
const (
	sinkAccepted   = 'K'
	sinkWrongToken = 'T'
	sinkFull       = 'F'
)

// ErrSinkFull is what admit returns for a right token when no slot is left for it.
var ErrSinkFull = errors.New("no connection slot left for token holders")

// tokenHello is the hello of a stream that a server routes on magic: magic, the token's length
// (one byte) and the token.
func tokenHello(magic, token string) ([]byte, error) {
	if len(token) > 255 {
		return nil, errors.New("token longer than 255 bytes")
	}
	return append(append([]byte(magic), byte(len(token))), token...), nil
}

// readToken reads a hello's token (its magic already read from r) and lets admit decide; a
// refusal is answered with its reason (a wrong token, or ErrSinkFull) and returned.
func readToken(r *bufio.Reader, c net.Conn, admit func(string) error) error {
	n, err := r.ReadByte()
	if err != nil {
		return err
	}
	tok := make([]byte, n)
	if _, err := io.ReadFull(r, tok); err != nil {
		return err
	}
	if err := admit(string(tok)); err != nil {
		answer := byte(sinkWrongToken)
		if errors.Is(err, ErrSinkFull) {
			answer = sinkFull
		}
		_, _ = c.Write([]byte{answer})
		return fmt.Errorf("refused: %w", err)
	}
	return nil
}

// ServeThroughput is the sink side of one stream whose ThroughputMagic has already been read
// from r (r wraps c). admit decides whether the stream is let in; a refusal is answered with
// its reason (a wrong token, or ErrSinkFull), so the client says which. It reads until the
// client half-closes, then answers with the byte count it received.
func ServeThroughput(c net.Conn, r *bufio.Reader, admit func(token string) error) error {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if err := readToken(r, c, admit); err != nil {
		return fmt.Errorf("throughput stream: %w", err)
	}
	_ = c.SetReadDeadline(time.Time{})
	if _, err := c.Write([]byte{sinkAccepted}); err != nil {
		return err
	}
	buf := make([]byte, throughputBufSize)
	var total int64
	for {
		m, err := r.Read(buf)
		total += int64(m)
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	var out [8]byte
	binary.BigEndian.PutUint64(out[:], uint64(total))
	_, err := c.Write(out[:])
	return err
}
