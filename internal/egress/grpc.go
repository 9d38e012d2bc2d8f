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
	"github.com/kubectl-netbench/kubectl-netbench/internal/text"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/stats"
	"google.golang.org/grpc/status"
)

// A gRPC destination is asked the standard health check (grpc.health.v1.Health/Check, the whole
// server): every gRPC server answers it, with SERVING or its status, or with Unimplemented when
// it has no health service. A status is the server's when it came in gRPC trailers (grpc-go
// makes one of an HTTP status too: a web server's 404 would read as Unimplemented); any status
// the server sends is an answer, and its time is one round trip and the server's time. What the
// client ends with itself (no connection, a handshake that failed, a timeout, an answer that is
// not gRPC, one over its limits) is a failure.

// grpcDial is one gRPC connection's moments and what ended it, kept by its dialer and its
// credentials: grpc-go hands the RPC a status whose message is all that is left of the cause.
type grpcDial struct {
	mu       sync.Mutex
	ph       phases
	dials    int
	trailers int   // gRPC trailers received (serverStatus)
	err      error // the last dial's or handshake's failure
	state    *tls.ConnectionState
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
			next, kd := m.faultyConn()
			if next == nil {
				return fmt.Errorf("%w: a new client", ErrTarget)
			}
			conn.Close()
			conn, kept = next, kd
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

func (d *grpcDial) trailersSoFar() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.trailers
}

// faultyConn is a client of its own for each "reused" call (fault EgressGRPCNoReuse).
func (m *meter) faultyConn() (*grpc.ClientConn, *grpcDial) {
	d := &grpcDial{}
	conn, err := m.grpcConn(d)
	if err != nil {
		return nil, nil
	}
	return conn, d
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
	took := time.Since(start)
	if d.dialsSoFar() > 1 {
		return fmt.Errorf("%w: %s ended a new connection before answering on it, and the client had to connect again (a server that sends GOAWAY at once)", ErrUnreachable, net.JoinHostPort(m.t.host, m.t.port))
	}
	m.firstNew = append(m.firstNew, took)
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
			d.mu.Lock()
			d.ph.remote = c.RemoteAddr().String()
			d.mu.Unlock()
			return c, nil
		}),
		grpc.WithStatsHandler(trailerCounter{d}),
		grpc.WithNoProxy(), grpc.WithDisableServiceConfig(), grpc.WithUserAgent("kubectl-netbench"),
		// A hostile server chooses its answer's size and its headers' (grpc-go allows 16 MiB).
		grpc.WithMaxHeaderListSize(16<<10), grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(64<<10)))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTarget, err)
	}
	return conn, nil
}

// check asks the health of the whole server and keeps its answer's status.
func (m *meter) check(ctx context.Context, conn *grpc.ClientConn, d *grpcDial) error {
	cctx, cancel := context.WithTimeout(ctx, m.spec.Timeout)
	defer cancel()
	before := d.trailersSoFar()
	resp, err := healthpb.NewHealthClient(conn).Check(cctx, &healthpb.HealthCheckRequest{})
	switch {
	case err == nil:
		m.grpcStatus = resp.GetStatus().String()
	case d.trailersSoFar() > before && status.Code(err) != codes.ResourceExhausted:
		m.grpcStatus = status.Code(err).String() // the server's status (a limit of ours: not an answer)
	default:
		return m.grpcFailure(ctx, d, err)
	}
	m.proto = "gRPC"
	return nil
}

// trailerCounter counts the gRPC trailers a connection's calls received: grpc-go reports them
// only once it found them gRPC's (a content type of application/grpc), before the call ends.
type trailerCounter struct{ d *grpcDial }

func (trailerCounter) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (trailerCounter) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (trailerCounter) HandleConn(context.Context, stats.ConnStats) {}
func (c trailerCounter) HandleRPC(_ context.Context, s stats.RPCStats) {
	if _, ok := s.(*stats.InTrailer); ok {
		c.d.mu.Lock()
		c.d.trailers++
		c.d.mu.Unlock()
	}
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
	return fmt.Errorf("%w: %s did not answer the gRPC health check as a gRPC server (no gRPC status came back): %s", ErrUnreachable, where, boundedStatus(err))
}

// boundedStatus is an RPC's failure as one printable line of bounded length (a hostile server
// chooses its message).
func boundedStatus(err error) string {
	s := status.Convert(err)
	msg := []rune(text.Sanitize(s.Message()))
	if len(msg) > 160 {
		msg = append(msg[:160], '…')
	}
	return s.Code().String() + ": " + string(msg)
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
