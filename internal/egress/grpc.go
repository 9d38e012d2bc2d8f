package egress

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"
)

// A gRPC destination is asked the standard health check (grpc.health.v1.Health/Check, the whole
// server): every server answers it, with SERVING or its status, or with Unimplemented when it
// has no health service. Any status the server sends is an answer, and its time is one round
// trip and the server's time; only what the client itself ends with (no connection, a
// handshake that failed, a timeout, an answer that is not gRPC) is a failure.

// grpcDial is one gRPC connection's moments and what ended it, kept by its dialer and its
// credentials: grpc-go hands the RPC a status whose message is all that is left of the cause.
type grpcDial struct {
	mu    sync.Mutex
	ph    phases
	dials int
	err   error // the last dial's or handshake's failure
	state *tls.ConnectionState
}

func (d *grpcDial) failed(err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.err = err
}

// grpc makes Count health checks each on a new connection (each with its own lookup), then one
// to open a kept connection and Count more on it.
func (m *meter) grpc(ctx context.Context) error {
	for i := range m.spec.Count {
		if err := pause(ctx, i, m.spec.Interval); err != nil {
			return err
		}
		if err := m.grpcNew(ctx); err != nil {
			return err
		}
	}
	kept := &grpcDial{}
	conn, err := m.grpcConn(kept)
	if err != nil {
		return err
	}
	defer func() { conn.Close() }()
	for i := range m.spec.Count + 1 {
		if err := pause(ctx, i, m.spec.Interval); err != nil {
			return err
		}
		if fault.On(fault.EgressGRPCNoReuse) && i > 0 {
			conn.Close()
			kept = &grpcDial{}
			if conn, err = m.grpcConn(kept); err != nil {
				return err
			}
		}
		start := time.Now()
		if err := m.check(ctx, conn, kept); err != nil {
			return err
		}
		if kept.dialsSoFar() > 1 {
			m.notReused = "the server did not keep the connection open: the client had to connect again"
			return nil
		}
		if i > 0 { // the first opened the connection the others reuse
			m.firstReused = append(m.firstReused, time.Since(start))
		}
	}
	return nil
}

func (d *grpcDial) dialsSoFar() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.dials
}

// grpcNew is one health check on a connection of its own: its lookup, handshake(s) and answer.
func (m *meter) grpcNew(ctx context.Context) error {
	d := &grpcDial{}
	conn, err := m.grpcConn(d)
	if err != nil {
		return err
	}
	defer conn.Close()
	start := time.Now()
	if err := m.check(ctx, conn, d); err != nil {
		return err
	}
	m.firstNew = append(m.firstNew, time.Since(start))
	m.recordConnection(&d.ph)
	if d.state != nil {
		m.tlsHS = append(m.tlsHS, d.ph.tlsDone.Sub(d.ph.tlsStart))
		m.state = d.state
	}
	return nil
}

// grpcConn is a client of the destination that connects (lazily, on its first call) through
// this package's dialer, timed into d. No proxy and no service config are used.
func (m *meter) grpcConn(d *grpcDial) (*grpc.ClientConn, error) {
	var creds credentials.TransportCredentials = insecure.NewCredentials()
	if m.t.scheme == "grpcs" {
		creds = credentials.NewTLS(&tls.Config{RootCAs: m.spec.RootCAs, MinVersion: tls.VersionTLS12})
	}
	dialer := &net.Dialer{Timeout: m.spec.Timeout, Resolver: m.spec.Resolver}
	conn, err := grpc.NewClient("passthrough:///"+net.JoinHostPort(m.t.host, m.t.port),
		grpc.WithTransportCredentials(timedCreds{creds, d}),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			d.mu.Lock()
			d.dials++
			d.mu.Unlock()
			c, err := dialer.DialContext(httptrace.WithClientTrace(ctx, d.ph.trace()), "tcp", addr)
			if err != nil {
				d.failed(err)
				return nil, err
			}
			d.ph.remote = c.RemoteAddr().String()
			return c, nil
		}),
		grpc.WithNoProxy(), grpc.WithDisableServiceConfig(), grpc.WithUserAgent("kubectl-netbench"),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<10)))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTarget, err)
	}
	return conn, nil
}

// check asks the health of the whole server and keeps its answer's status.
func (m *meter) check(ctx context.Context, conn *grpc.ClientConn, d *grpcDial) error {
	cctx, cancel := context.WithTimeout(ctx, m.spec.Timeout)
	defer cancel()
	resp, err := healthpb.NewHealthClient(conn).Check(cctx, &healthpb.HealthCheckRequest{})
	switch code := status.Code(err); {
	case err == nil:
		m.grpcStatus = resp.GetStatus().String()
	case answered(code):
		m.grpcStatus = code.String()
	default:
		return m.grpcFailure(ctx, d, err)
	}
	m.proto = "gRPC"
	return nil
}

// answered says whether a status is one a server sends (the client makes the others itself:
// no connection, a timeout, a malformed answer).
func answered(c codes.Code) bool {
	switch c {
	case codes.Unavailable, codes.DeadlineExceeded, codes.Canceled, codes.Internal, codes.Unknown:
		return false
	}
	return true
}

// grpcFailure names why a health check got no answer: the connection's own failure when there
// was one, else the RPC's status (a server that does not speak gRPC, or no answer in time).
func (m *meter) grpcFailure(ctx context.Context, d *grpcDial, err error) error {
	d.mu.Lock()
	cause := d.err
	d.mu.Unlock()
	if cause != nil {
		return classify(ctx, m.t, m.spec.Timeout, cause)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	where := net.JoinHostPort(m.t.host, m.t.port)
	if status.Code(err) == codes.DeadlineExceeded {
		return fmt.Errorf("%w: %s: no gRPC answer within %s", ErrUnreachable, where, m.spec.Timeout)
	}
	return fmt.Errorf("%w: %s did not answer the gRPC health check as a gRPC server: %s", ErrUnreachable, where, boundedStatus(err))
}

// boundedStatus is an RPC's failure as a line of bounded length (a hostile server chooses it).
func boundedStatus(err error) string {
	s := status.Convert(err)
	msg := s.Message()
	if len(msg) > 160 {
		msg = msg[:160] + "…"
	}
	return s.Code().String() + ": " + msg
}

// timedCreds times each handshake of its credentials into d and keeps its outcome.
type timedCreds struct {
	credentials.TransportCredentials
	d *grpcDial
}

func (c timedCreds) ClientHandshake(ctx context.Context, authority string, raw net.Conn) (net.Conn, credentials.AuthInfo, error) {
	start := time.Now()
	conn, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, raw)
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	if ti, ok := info.(credentials.TLSInfo); ok && err == nil {
		c.d.ph.tlsStart, c.d.ph.tlsDone, c.d.state = start, time.Now(), &ti.State
	}
	if err != nil {
		c.d.err = err
	}
	return conn, info, err
}

func (c timedCreds) Clone() credentials.TransportCredentials {
	return timedCreds{c.TransportCredentials.Clone(), c.d}
}
