package egress

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/status"
)

// countingListener counts the connections it accepted.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

// grpcServer serves gRPC on loopback (TLS with the certificate of tlsFrom when it is not nil),
// with hs as its health service (none when nil); it counts the connections it accepted.
func grpcServer(t *testing.T, tlsFrom *httptest.Server, hs healthpb.HealthServer, opts ...grpc.ServerOption) (string, *countingListener) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	if tlsFrom != nil {
		opts = append(opts, grpc.Creds(credentials.NewServerTLSFromCert(&tlsFrom.TLS.Certificates[0])))
	}
	s := grpc.NewServer(opts...)
	if hs != nil {
		healthpb.RegisterHealthServer(s, hs)
	}
	cl := &countingListener{Listener: ln}
	go func() { _ = s.Serve(cl) }()
	t.Cleanup(s.Stop)
	return ln.Addr().String(), cl
}

// gRPC over TLS: every phase of each new connection (its own connection each), then the health
// check's answer on one kept connection; the server's SERVING is kept.
func TestMeasureGRPCS(t *testing.T) {
	cert, _ := tlsServer(t, 0, http.StatusOK)
	addr, conns := grpcServer(t, cert, health.NewServer())
	r, err := Measure(context.Background(), Spec{Target: "grpcs://" + addr, Count: 5, Interval: time.Millisecond, RootCAs: roots(cert)})
	if err != nil {
		t.Fatal(err)
	}
	if r.Scheme != "grpcs" || r.Protocol != "gRPC" || r.GRPCStatus != "SERVING" || r.NewConnections != 5 || r.Connect.Count != 5 || r.DNS != nil {
		t.Errorf("result %+v", r)
	}
	if r.TLS == nil || !r.TLS.Verified || r.TLS.Latency.Count != 5 || r.TLS.Version == "" {
		t.Errorf("tls %+v, want 5 verified handshakes", r.TLS)
	}
	if r.FirstByteNew == nil || r.FirstByteNew.Count != 5 || r.FirstByteReused == nil || r.FirstByteReused.Count != 5 || r.NotReused != "" {
		t.Errorf("answers new %+v, reused %+v (%s)", r.FirstByteNew, r.FirstByteReused, r.NotReused)
	}
	if r.FirstByteNew.P50Micros <= r.TLS.Latency.P50Micros {
		t.Errorf("a new connection's answer (p50 %.0f µs) came before its TLS handshake ended (p50 %.0f µs)", r.FirstByteNew.P50Micros, r.TLS.Latency.P50Micros)
	}
	if n := conns.n.Load(); n != 6 {
		t.Errorf("the server accepted %d connections, want one per new sample and one for the reused ones (6)", n)
	}
}

// A plain gRPC server without a health service answers Unimplemented: an answer, timed; the
// name is looked up before each connection.
func TestMeasureGRPCWithoutHealthService(t *testing.T) {
	addr, _ := grpcServer(t, nil, nil)
	res, queries := resolverFor(t, "api.outside.test")
	_, port, _ := net.SplitHostPort(addr)
	r, err := Measure(context.Background(), Spec{Target: "grpc://api.outside.test.:" + port, Count: 3, Interval: time.Millisecond, Resolver: res})
	if err != nil {
		t.Fatal(err)
	}
	if r.GRPCStatus != "Unimplemented" || r.TLS != nil || r.DNS == nil || r.DNS.Count != 3 || r.FirstByteReused == nil || r.FirstByteReused.Count != 3 {
		t.Errorf("result %+v", r)
	}
	if n := queries.Load(); n != 8 {
		t.Errorf("%d queries, want an A and an AAAA per connection, the kept one's too (8)", n)
	}
}

// A server that ends its connections after a moment: the new connections stand, the reused
// figure is cut short with the reason.
func TestMeasureGRPCServerThatEndsItsConnections(t *testing.T) {
	addr, _ := grpcServer(t, nil, health.NewServer(), grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionAge: 20 * time.Millisecond, MaxConnectionAgeGrace: time.Millisecond}))
	r, err := Measure(context.Background(), Spec{Target: "grpc://" + addr, Count: 4, Interval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.NewConnections != 4 || !strings.Contains(r.NotReused, "did not keep the connection open") || (r.FirstByteReused != nil && r.FirstByteReused.Count >= 4) {
		t.Errorf("result %+v, reused %+v", r, r.FirstByteReused)
	}
}

// Each way a gRPC destination fails is named from its cause, not from grpc-go's status text.
func TestMeasureGRPCFailures(t *testing.T) {
	cert, _ := tlsServer(t, 0, http.StatusOK)
	addr, _ := grpcServer(t, cert, health.NewServer())
	_, port, _ := net.SplitHostPort(addr)
	plainHTTP := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer plainHTTP.Close()
	web404, _ := tlsServer(t, 0, http.StatusNotFound)
	web200, _ := tlsServer(t, 0, http.StatusOK)
	res, _ := resolverFor(t, "outside.test")
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	for _, tc := range []struct {
		name, target string
		roots        bool
		want         error
		says         string
	}{
		{"unknown authority", "grpcs://" + addr, false, ErrTLS, "authority the client does not trust"},
		{"wrong name", "grpcs://outside.test.:" + port, true, ErrTLS, "not for that name"},
		{"NXDOMAIN", "grpcs://missing.test.:" + port, true, ErrNotFound, "missing.test. does not resolve"},
		{"connection refused", "grpc://" + closedAddr, false, ErrUnreachable, "connection refused"},
		{"not gRPC", "grpc://" + plainHTTP.Listener.Addr().String(), false, ErrUnreachable, "as a gRPC server"},
		// grpc-go makes Unimplemented of a 404, and a multi-line message of a 200 that is not gRPC.
		{"a web server's 404 over HTTP/2", "grpcs://" + web404.Listener.Addr().String(), true, ErrUnreachable, "as a gRPC server"},
		{"a web server's 200 over HTTP/2", "grpcs://" + web200.Listener.Addr().String(), true, ErrUnreachable, "as a gRPC server"},
		{"without port", "grpcs://outside.test", false, ErrTarget, "grpcs://HOST:PORT"},
		{"with a path", "grpc://outside.test:50051/svc", false, ErrTarget, "grpc://HOST:PORT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec{Target: tc.target, Count: 2, Interval: time.Millisecond, Timeout: 2 * time.Second, Resolver: res, RootCAs: x509.NewCertPool()}
			if tc.roots {
				spec.RootCAs = roots(cert) // every tlsServer has the same certificate
			}
			start := time.Now()
			_, err := Measure(context.Background(), spec)
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.says) || strings.Contains(err.Error(), "\n") {
				t.Errorf("%s: %v, want %v saying %q on one line", tc.target, err, tc.want, tc.says)
			}
			if time.Since(start) > time.Second {
				t.Errorf("%s: named after %s, want at once", tc.target, time.Since(start))
			}
		})
	}
}

// downHealth answers every health check with Unavailable and a message of two lines.
type downHealth struct {
	healthpb.UnimplementedHealthServer
}

func (downHealth) Check(context.Context, *healthpb.HealthCheckRequest) (*healthpb.HealthCheckResponse, error) {
	return nil, status.Error(codes.Unavailable, "draining\n\x1b[31mnow")
}

// A status the server sends, even one grpc-go also makes itself (Unavailable), is its answer.
func TestMeasureGRPCServerStatusIsAnAnswer(t *testing.T) {
	addr, _ := grpcServer(t, nil, downHealth{})
	r, err := Measure(context.Background(), Spec{Target: "grpc://" + addr, Count: 2, Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.GRPCStatus != "Unavailable" || r.FirstByteNew == nil || r.FirstByteNew.Count != 2 || r.FirstByteReused == nil || r.FirstByteReused.Count != 2 {
		t.Errorf("result %+v: want the server's Unavailable, timed as an answer", r)
	}
}
