package probes

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// RateMagic opens every tcp-rr and tcp-crr connection; a server that multiplexes one port can
// route on it. The hello that follows: the token's length (one byte), the token, the request
// and the response size (4 bytes each, big-endian). The client sends its first request right
// behind the hello; the server answers it with one byte of acceptance (sinkAccepted) and the
// response, then each further request with a response.
const RateMagic = "NBRR"

// rateHello is the hello of a connection with these sizes.
func rateHello(token string, req, resp int) ([]byte, error) {
	b, err := tokenHello(RateMagic, token)
	if err != nil {
		return nil, err
	}
	b = binary.BigEndian.AppendUint32(b, uint32(req))
	return binary.BigEndian.AppendUint32(b, uint32(resp)), nil
}

// rateConn is one client's TCP connection: its first transaction carries the hello.
type rateConn struct {
	clientSocket        // detached (tcp-rr of one connection) after the hello
	out, in      []byte // a request; the acceptance and a response
	first        []byte // the hello and a request
	helloSent    bool
}

// transact sends one request and reads its response.
func (rc *rateConn) transact() error {
	var rw io.ReadWriter = rc.bs
	if rc.bs == nil {
		rw = rc.c
		_ = rc.c.SetDeadline(time.Now().Add(rateIOTimeout))
	} else {
		rc.bs.deadline = time.Now().Add(rateIOTimeout)
	}
	out, in := rc.out, rc.in[1:]
	if !rc.helloSent {
		out, in = rc.first, rc.in
	}
	if _, err := rw.Write(out); err != nil {
		return err
	}
	n, err := io.ReadFull(rw, in)
	if rc.helloSent {
		return err
	}
	if n > 0 {
		if refused := acceptance(in[0]); refused != nil {
			return refused
		}
	}
	if err != nil {
		return fmt.Errorf("the server closed the connection before accepting it: %w", err)
	}
	rc.helloSent = true
	return nil
}

// acceptance turns the server's answer to a hello into an error, nil when it accepted.
func acceptance(b byte) error {
	switch b {
	case sinkAccepted:
		return nil
	case sinkWrongToken:
		return errors.New("refused: wrong token")
	case sinkFull:
		return errors.New("refused: its connections for token holders are all in use")
	}
	return fmt.Errorf("answered %q, not a netbench agent", b)
}

// detach moves the connection out of Go's network poller (blockingSocket), where the platform
// allows; it stays in it otherwise.
func (rc *rateConn) detach() {
	if bs, err := detach(rc.c, rateIOTimeout); err == nil {
		rc.bs = bs
	}
}

func newRateConn(c net.Conn, spec RateSpec, hello []byte) *rateConn {
	out := make([]byte, spec.RequestBytes)
	return &rateConn{clientSocket: clientSocket{c: c}, out: out, first: slices.Concat(hello, out), in: make([]byte, 1+spec.ResponseBytes)}
}

// TCPRR runs spec.Connections persistent connections in a closed loop for spec.Duration: each
// sends a request and waits for the response, then sends the next (netperf's TCP_RR). The
// connections are opened and their first transaction made before the loop starts; one alone
// then waits for its answers in blocking reads (blockingSocket).
func TCPRR(ctx context.Context, spec RateSpec) (*RateResult, error) {
	spec.defaults(v1alpha1.ProbeTCPRR)
	hello, err := rateHello(spec.Token, spec.RequestBytes, spec.ResponseBytes)
	if err != nil {
		return nil, err
	}
	conns := make([]*rateConn, spec.Connections)
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.close()
			}
		}
	}()
	d := net.Dialer{Timeout: rateIOTimeout}
	for i := range conns {
		c, err := d.DialContext(ctx, "tcp", spec.Address)
		if err != nil {
			return nil, fmt.Errorf("tcp-rr connection to %s: %w", spec.Address, err)
		}
		conns[i] = newRateConn(c, spec, hello)
		if err := conns[i].transact(); err != nil {
			return nil, fmt.Errorf("tcp-rr connection to %s: %w", spec.Address, err)
		}
		if spec.Connections == 1 { // several share the poller's wake-ups better than threads
			conns[i].detach()
		}
	}
	stop := context.AfterFunc(ctx, func() {
		for _, c := range conns {
			c.interrupt()
		}
	})
	defer stop()
	l := newRateLoop(v1alpha1.ProbeTCPRR, spec)
	start := l.run(func(i int) {
		for l.more(ctx) {
			t := time.Now()
			if err := conns[i].transact(); err != nil {
				l.failed(err)
				return
			}
			l.done(t)
		}
	})
	r, err := rateResult(ctx, l, start)
	if err != nil {
		return nil, err
	}
	r.ClientWait = clientWait(conns)
	return r, nil
}

// rateResult is the loop's result; an error when ctx ended it or nothing completed.
func rateResult(ctx context.Context, l *rateLoop, start time.Time) (*RateResult, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	r := l.result(start)
	if r.Transactions == 0 && r.Stopped != "" {
		return nil, fmt.Errorf("%s to %s: %w: %s", l.kind, l.spec.Address, ErrStoppedFirst, r.Stopped)
	}
	if r.Transactions == 0 {
		return nil, fmt.Errorf("%s to %s: no transaction completed: %s", l.kind, l.spec.Address, r.FirstError)
	}
	return r, nil
}

// ErrStoppedFirst means a loop stopped before its first transaction (tcp-crr: the pod had no
// ephemeral ports to spare): nothing was measured, and nothing failed.
var ErrStoppedFirst = errors.New("stopped before the first transaction")

// TCPCRR runs spec.Connections clients in a closed loop for spec.Duration, each connecting,
// sending a request, reading the response and closing, then again (netperf's TCP_CRR). The
// client closes first, so each connection leaves a TIME-WAIT socket on the client's side for
// 60 s; the loop stops before those hold half the pod's ephemeral port range.
func TCPCRR(ctx context.Context, spec RateSpec) (*RateResult, error) {
	spec.defaults(v1alpha1.ProbeTCPCRR)
	if spec.Connections > MaxRateClients {
		return nil, fmt.Errorf("tcp-crr with %d clients: at most %d", spec.Connections, MaxRateClients)
	}
	hello, err := rateHello(spec.Token, spec.RequestBytes, spec.ResponseBytes)
	if err != nil {
		return nil, err
	}
	ports := newPortBudget(spec.Address, spec.PodTimeWaitCeiling)
	l := newRateLoop(v1alpha1.ProbeTCPCRR, spec)
	d := net.Dialer{Timeout: rateIOTimeout}
	start := l.run(func(int) {
		rc := newRateConn(nil, spec, hello)
		for inARow := 0; inARow < maxFailuresInARow && l.more(ctx); {
			if !ports.take() {
				l.stop(fmt.Sprintf("the probe's connections held %d ephemeral ports: half the pod's range less the TIME-WAIT sockets it had before towards the server%s", ports.budget, ceilingNote(spec.PodTimeWaitCeiling)))
				return
			}
			connected, err := crrOnce(ctx, &d, l, rc)
			ports.release(connected)
			if err != nil {
				l.failed(err)
				inARow++
				continue
			}
			inARow = 0
		}
	})
	r, err := rateResult(ctx, l, start)
	if err != nil {
		return nil, err
	}
	r.HelloBytes, r.Ports, r.ClientWait = len(hello), ports.result(), v1alpha1.WaitPoller
	return r, nil
}

// crrOnce makes one connection's transaction on rc's buffers and closes it; connected says
// whether it got as far as a connection (whose port then stays in TIME-WAIT).
func crrOnce(ctx context.Context, d *net.Dialer, l *rateLoop, rc *rateConn) (connected bool, err error) {
	t := time.Now()
	c, err := d.DialContext(ctx, "tcp", l.spec.Address)
	if err != nil {
		return false, err
	}
	at := time.Now()
	rc.c, rc.helloSent = c, false
	err = rc.transact()
	c.Close()
	if err != nil {
		return true, err
	}
	l.connect.add(at.Sub(t))
	if fault.On(fault.CRRFromConnect) {
		t = at
	}
	l.done(t)
	return true, nil
}

// ceilingNote names a pod-wide ceiling on TIME-WAIT sockets in a stop's reason.
func ceilingNote(ceiling int) string {
	if ceiling <= 0 {
		return ""
	}
	return fmt.Sprintf(", or %d in the whole pod less those it had", ceiling)
}
