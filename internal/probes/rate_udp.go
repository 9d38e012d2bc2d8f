package probes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// UDPRR runs spec.Connections sockets in a closed loop for spec.Duration, each sending one
// authenticated datagram to the agent server's UDP echo and waiting for its answer before the
// next (netperf's UDP_RR). A datagram without an answer within udpRRTimeout counts as lost and
// the socket goes on. One socket alone waits in blocking reads, as tcp-rr's connection does.
func UDPRR(ctx context.Context, spec RateSpec) (*RateResult, error) {
	spec.defaults(v1alpha1.ProbeUDPRR)
	switch {
	case spec.Connections > MaxRateClients:
		return nil, fmt.Errorf("udp-rr with %d sockets: at most %d", spec.Connections, MaxRateClients)
	case spec.RequestBytes > UDPMaxDatagram:
		return nil, fmt.Errorf("udp-rr datagram size %d: want %d-%d bytes", spec.RequestBytes, UDPHeaderLen, UDPMaxDatagram)
	}
	socks := make([]*datagramConn, spec.Connections)
	defer func() {
		for _, s := range socks {
			if s != nil {
				s.close()
			}
		}
	}()
	var d net.Dialer
	for i := range socks {
		c, err := d.DialContext(ctx, "udp", spec.Address)
		if err != nil {
			return nil, fmt.Errorf("udp-rr socket to %s: %w", spec.Address, err)
		}
		socks[i] = newDatagramConn(c, spec.Connections == 1)
	}
	stop := context.AfterFunc(ctx, func() {
		for _, s := range socks {
			s.interrupt()
		}
	})
	defer stop()
	l := newRateLoop(v1alpha1.ProbeUDPRR, spec)
	start := l.run(func(i int) { udpRRClient(ctx, l, socks[i]) })
	r, err := rateResult(ctx, l, start)
	if err != nil && ctx.Err() == nil {
		return nil, fmt.Errorf("%w (UDP to the agent's port does not get through, or the token is wrong): %w", err, os.ErrDeadlineExceeded)
	}
	if err != nil {
		return nil, err
	}
	if n := r.Transactions + r.Errors; n > 0 {
		r.LossPercent = round3(100 * float64(r.Errors) / float64(n))
	}
	r.TimeoutMillis = float64(udpRRTimeout.Milliseconds())
	r.ClientWait = clientWait(socks)
	return r, nil
}

// datagramConn is a udp-rr socket: a blockingSocket where it can be, in Go's network poller
// otherwise.
type datagramConn struct {
	clientSocket
	io.ReadWriter
}

func newDatagramConn(c net.Conn, blocking bool) *datagramConn {
	if !blocking {
		return &datagramConn{clientSocket: clientSocket{c: c}, ReadWriter: c}
	}
	if bs, err := detach(c, udpRRTimeout); err == nil {
		return &datagramConn{clientSocket: clientSocket{c: c, bs: bs}, ReadWriter: bs}
	}
	return &datagramConn{clientSocket: clientSocket{c: c}, ReadWriter: c}
}

// readBy bounds the next reads' wait to deadline.
func (d *datagramConn) readBy(deadline time.Time) error {
	if d.bs != nil {
		return d.bs.readBy(deadline)
	}
	return d.c.SetReadDeadline(deadline)
}

// udpRRClient is one socket's loop.
func udpRRClient(ctx context.Context, l *rateLoop, c *datagramConn) {
	out, in := make([]byte, l.spec.RequestBytes), make([]byte, UDPMaxDatagram)
	s := NewSealer(l.spec.Key)
	for seq := uint64(0); l.more(ctx); seq++ {
		s.Seal(out, UDPRate, seq)
		t := time.Now()
		if _, err := c.Write(out); err != nil {
			l.failed(err)
			return
		}
		switch err := awaitAnswer(c, in, s, seq, t.Add(udpRRTimeout)); {
		case err == nil:
			l.done(t)
		case errors.Is(err, os.ErrDeadlineExceeded) && ctx.Err() == nil:
			l.failed(fmt.Errorf("no answer within %s", udpRRTimeout))
		default:
			l.failed(err)
			if ctx.Err() != nil {
				return
			}
		}
	}
}

// awaitAnswer reads until the answer to seq arrives or the deadline passes, dropping earlier
// answers and anything s does not verify.
func awaitAnswer(c *datagramConn, buf []byte, s *Sealer, seq uint64, deadline time.Time) error {
	for {
		if err := c.readBy(deadline); err != nil {
			return err
		}
		n, err := c.Read(buf)
		if err != nil {
			return err
		}
		if typ, got, err := s.Open(buf[:n]); err == nil && typ == 'R' && got == seq {
			return nil
		}
	}
}
