package probes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// UDPRR runs spec.Connections sockets in a closed loop for spec.Duration, each sending one
// authenticated datagram to the agent server's UDP echo and waiting for its answer before the
// next (netperf's UDP_RR). A datagram without an answer within udpRRTimeout counts as lost and
// the socket goes on. The sockets wait in Go's network poller, as tcp-rr's connections do.
func UDPRR(ctx context.Context, spec RateSpec) (*RateResult, error) {
	spec.defaults(v1alpha1.ProbeUDPRR)
	switch {
	case spec.Connections > MaxRateClients:
		return nil, fmt.Errorf("udp-rr with %d sockets: at most %d", spec.Connections, MaxRateClients)
	case spec.RequestBytes > UDPMaxDatagram:
		return nil, fmt.Errorf("udp-rr datagram size %d: want %d-%d bytes", spec.RequestBytes, UDPHeaderLen, UDPMaxDatagram)
	}
	socks := make([]net.Conn, spec.Connections)
	defer func() {
		for _, s := range socks {
			if s != nil {
				s.Close()
			}
		}
	}()
	var d net.Dialer
	for i := range socks {
		c, err := d.DialContext(ctx, "udp", spec.Address)
		if err != nil {
			return nil, fmt.Errorf("udp-rr socket to %s: %w", spec.Address, err)
		}
		socks[i] = c
	}
	stop := context.AfterFunc(ctx, func() {
		for _, s := range socks {
			_ = s.SetDeadline(time.Now())
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
	return r, nil
}

// udpRRClient is one socket's loop.
func udpRRClient(ctx context.Context, l *rateLoop, c net.Conn) {
	out, in := make([]byte, l.spec.RequestBytes), make([]byte, UDPMaxDatagram)
	for seq := uint64(0); l.more(ctx); seq++ {
		SealDatagram(l.spec.Key, out, UDPRate, seq)
		t := time.Now()
		if _, err := c.Write(out); err != nil {
			l.failed(err)
			return
		}
		switch err := awaitAnswer(c, in, l.spec.Key, seq, t.Add(udpRRTimeout)); {
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
// answers and anything not sealed with key.
func awaitAnswer(c net.Conn, buf, key []byte, seq uint64, deadline time.Time) error {
	_ = c.SetReadDeadline(deadline)
	for {
		n, err := c.Read(buf)
		if err != nil {
			return err
		}
		if typ, got, err := OpenDatagram(key, buf[:n]); err == nil && typ == 'R' && got == seq {
			return nil
		}
	}
}
