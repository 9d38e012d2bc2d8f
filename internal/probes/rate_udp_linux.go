package probes

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// UDPRR runs spec.Connections sockets in a closed loop for spec.Duration, each sending one
// authenticated datagram to the agent server's UDP echo and waiting for its answer before the
// next. A datagram without an answer within udpRRTimeout counts as lost and the socket goes on.
func UDPRR(ctx context.Context, spec RateSpec) (*RateResult, error) {
	spec.defaults(v1alpha1.ProbeUDPRR)
	if spec.Connections > MaxRateClients {
		return nil, fmt.Errorf("udp-rr with %d sockets: at most %d", spec.Connections, MaxRateClients)
	}
	if spec.RequestBytes > UDPMaxDatagram {
		return nil, fmt.Errorf("udp-rr datagram size %d: want %d-%d bytes", spec.RequestBytes, UDPHeaderLen, UDPMaxDatagram)
	}
	socks := make([]*udpSocket, spec.Connections)
	defer func() {
		for _, s := range socks {
			if s != nil {
				s.close()
			}
		}
	}()
	for i := range socks {
		s, err := dialUDP(ctx, spec.Address, spec.Key, spec.RequestBytes)
		if err != nil {
			return nil, err
		}
		socks[i] = s
	}
	l := newRateLoop(v1alpha1.ProbeUDPRR, spec)
	start := l.run(func(i int) {
		buf, oob := make([]byte, UDPMaxDatagram), make([]byte, 128)
		for seq := 0; l.more(ctx); seq++ {
			t, err := socks[i].send(seq)
			if err != nil {
				l.failed(err)
				return
			}
			if awaitAnswer(ctx, socks[i], seq, buf, oob) {
				l.done(t)
			} else {
				l.failed(fmt.Errorf("no answer within %s", udpRRTimeout))
			}
		}
	})
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

// awaitAnswer waits up to udpRRTimeout for the answer to seq, dropping earlier answers.
func awaitAnswer(ctx context.Context, s *udpSocket, seq int, buf, oob []byte) bool {
	deadline := time.Now().Add(udpRRTimeout)
	for ctx.Err() == nil && time.Now().Before(deadline) {
		got, _, _, _, ok, err := s.recvTyped(buf, oob, 'E')
		if err != nil {
			return false
		}
		if ok && got == seq {
			return true
		}
	}
	return false
}
