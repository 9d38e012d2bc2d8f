package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"fortio.org/fortio/fgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/probes"
)

// Limits bound what the agent server gives peers, above all those without the run's token.
type Limits struct {
	// MaxConns caps the connections open at once; more are closed on accept.
	MaxConns int
	// MaxPending caps connections that have not yet sent their first bytes; more are closed.
	MaxPending int
	// Handshake is how long a new connection has to send its first bytes (and a gRPC client
	// its HTTP/2 preface, an HTTP client its request headers).
	Handshake time.Duration
	// Idle closes keep-alive HTTP and gRPC connections that carry nothing for this long.
	Idle time.Duration
}

// DefaultLimits fit the largest job the plugin accepts (1024 connections, 128 streams).
var DefaultLimits = Limits{MaxConns: 1280, MaxPending: 64, Handshake: 2 * time.Second, Idle: 30 * time.Second}

// router accepts connections and hands each to the server its first bytes belong to.
type router struct {
	ln         net.Listener
	http, grpc *chanListener
	accept     func(string) bool
	limits     Limits
	open       atomic.Int64
	pending    atomic.Int64
}

func (r *router) run(ctx context.Context) {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		if r.open.Load() >= int64(r.limits.MaxConns) || r.pending.Load() >= int64(r.limits.MaxPending) {
			c.Close()
			continue
		}
		r.open.Add(1)
		r.pending.Add(1)
		go r.handle(ctx, &countedConn{Conn: c, open: &r.open})
	}
}

func (r *router) handle(ctx context.Context, c net.Conn) {
	br := bufio.NewReaderSize(c, 4096)
	_ = c.SetReadDeadline(time.Now().Add(r.limits.Handshake))
	head, err := br.Peek(4)
	r.pending.Add(-1)
	if err != nil {
		c.Close()
		return
	}
	switch {
	case string(head) == probes.ThroughputMagic:
		_, _ = br.Discard(len(probes.ThroughputMagic))
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
		_ = probes.ServeThroughput(c, br, r.accept)
	case string(head) == "PRI ": // the HTTP/2 preface gRPC opens with
		// gRPC's own ConnectionTimeout bounds the rest of the handshake.
		_ = c.SetReadDeadline(time.Time{})
		r.grpc.deliver(&peekedConn{Conn: c, r: br})
	default:
		// The HTTP server's ReadHeaderTimeout takes over from here.
		_ = c.SetReadDeadline(time.Time{})
		r.http.deliver(&peekedConn{Conn: c, r: br})
	}
}

// countedConn gives its slot back once when closed.
type countedConn struct {
	net.Conn
	open   *atomic.Int64
	closed atomic.Bool
}

func (c *countedConn) Close() error {
	if c.closed.CompareAndSwap(false, true) {
		c.open.Add(-1)
	}
	return c.Conn.Close()
}

// newHTTPServer serves the latency probes and the control API; a request without the token is
// answered 401 and its connection closed.
func newHTTPServer(l Limits, accept func(string) bool, ls *lease, done func(string), id Identity, jobs http.Handler) *http.Server {
	mux := http.NewServeMux()
	if jobs != nil {
		mux.Handle("POST "+PathJob, jobs)
	}
	mux.HandleFunc("GET "+PathWhoAmI, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(id)
	})
	mux.HandleFunc("POST "+PathDone, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
		done("client said done")
	})
	mux.HandleFunc("POST "+PathLease, func(w http.ResponseWriter, r *http.Request) {
		ls.renew()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET "+PathLease, func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc(PathCPU, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(CPUReply{CPUNanos: int64(probes.ProcessCPU()), PeakRSSBytes: probes.ProcessPeakRSS()})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	return &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !accept(r.Header.Get(TokenHeader)) {
				w.Header().Set("Connection", "close")
				http.Error(w, "missing or wrong "+TokenHeader, http.StatusUnauthorized)
				return
			}
			mux.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: l.Handshake,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       l.Idle,
		MaxHeaderBytes:    16 << 10,
	}
}

// newGRPCServer serves the ping service; the token is checked before any message is decoded.
func newGRPCServer(l Limits, accept func(string) bool) *grpc.Server {
	s := grpc.NewServer(
		grpc.InTapHandle(func(ctx context.Context, info *tap.Info) (context.Context, error) {
			if v := info.Header.Get(TokenMetadata); len(v) != 1 || !accept(v[0]) {
				return nil, status.Error(codes.Unauthenticated, "missing or wrong "+TokenMetadata)
			}
			return ctx, nil
		}),
		grpc.UnaryInterceptor(func(c context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			md, _ := metadata.FromIncomingContext(c)
			if v := md.Get(TokenMetadata); len(v) != 1 || !accept(v[0]) {
				return nil, status.Error(codes.Unauthenticated, "missing or wrong "+TokenMetadata)
			}
			return h(c, req)
		}),
		grpc.ConnectionTimeout(l.Handshake),
		grpc.MaxRecvMsgSize(64<<10),
		grpc.MaxConcurrentStreams(1024),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: l.Idle}),
	)
	fgrpc.RegisterPingServerServer(s, probes.PingService{})
	return s
}
