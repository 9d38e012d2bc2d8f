package agent

import (
	"bufio"
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"fortio.org/fortio/fgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/probes"
)

// ServeOptions configures the agent server.
type ServeOptions struct {
	// Listen is the address to listen on; port 0 picks a free port.
	Listen string
	Token  string
	// Deadline bounds the server's life: it exits then whether or not a client came.
	Deadline time.Duration
}

// Paths of the control API; every other path answers the latency probes.
const (
	PathDone = "/netbench/v1/done"
	PathCPU  = "/netbench/v1/cpu"
)

// CPUReply is the answer of PathCPU.
type CPUReply struct {
	CPUNanos int64 `json:"cpuNanos"`
}

// Serve runs the agent server: HTTP, gRPC, the throughput sink and control, all on one port
// (each connection is routed on its first bytes). It emits ready, then exit, and returns when
// a client posts PathDone, the deadline passes, or ctx ends.
func Serve(ctx context.Context, o ServeOptions, em *Emitter) error {
	if o.Token == "" {
		return errors.New("agent serve needs a token (--token or " + TokenEnv + ")")
	}
	if o.Deadline <= 0 {
		return errors.New("agent serve needs a positive --deadline")
	}
	if o.Listen == "" {
		o.Listen = ":0"
	}
	ctx, cancel := context.WithTimeout(ctx, o.Deadline)
	defer cancel()

	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", o.Listen, err)
	}
	accept := func(tok string) bool { return subtle.ConstantTimeCompare([]byte(tok), []byte(o.Token)) == 1 }

	var doneOnce sync.Once
	doneBy := "deadline reached"
	done := func(reason string) {
		doneOnce.Do(func() {
			doneBy = reason
			cancel()
		})
	}

	mux := http.NewServeMux()
	mux.HandleFunc(PathDone, func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			http.Error(w, "POST only", http.StatusMethodNotAllowed)
			return
		}
		w.WriteHeader(http.StatusNoContent)
		done("client said done")
	})
	mux.HandleFunc(PathCPU, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(CPUReply{CPUNanos: int64(probes.ProcessCPU())})
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	httpSrv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if !accept(r.Header.Get(TokenHeader)) {
				http.Error(w, "missing or wrong "+TokenHeader, http.StatusUnauthorized)
				return
			}
			mux.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	grpcSrv := grpc.NewServer(grpc.UnaryInterceptor(func(c context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(c)
		if v := md.Get(TokenMetadata); len(v) != 1 || !accept(v[0]) {
			return nil, status.Error(codes.Unauthenticated, "missing or wrong "+TokenMetadata)
		}
		return h(c, req)
	}))
	fgrpc.RegisterPingServerServer(grpcSrv, probes.PingService{})

	httpLn := newChanListener(ln.Addr())
	grpcLn := newChanListener(ln.Addr())
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); _ = httpSrv.Serve(httpLn) }()
	go func() { defer wg.Done(); _ = grpcSrv.Serve(grpcLn) }()
	go func() {
		defer wg.Done()
		route(ctx, ln, httpLn, grpcLn, accept)
	}()

	port := ln.Addr().(*net.TCPAddr).Port
	em.Emit(Event{Type: EventReady, Port: port, Message: fmt.Sprintf("listening on %s, deadline %s", ln.Addr(), o.Deadline)})

	<-ctx.Done()
	ln.Close()
	shutCtx, shutCancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer shutCancel()
	_ = httpSrv.Shutdown(shutCtx)
	grpcSrv.Stop()
	httpLn.Close()
	grpcLn.Close()
	wg.Wait()
	em.Emit(Event{Type: EventExit, Message: doneBy})
	return nil
}

// route accepts connections and hands each to the server its first bytes belong to.
func route(ctx context.Context, ln net.Listener, httpLn, grpcLn *chanListener, accept func(string) bool) {
	for {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		go func() {
			br := bufio.NewReaderSize(c, 4096)
			_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
			head, err := br.Peek(4)
			if err != nil {
				c.Close()
				return
			}
			_ = c.SetReadDeadline(time.Time{})
			switch {
			case string(head) == probes.ThroughputMagic:
				_, _ = br.Discard(len(probes.ThroughputMagic))
				stop := context.AfterFunc(ctx, func() { c.Close() })
				defer stop()
				_ = probes.ServeThroughput(c, br, accept)
			case string(head) == "PRI ": // the HTTP/2 preface gRPC opens with
				grpcLn.deliver(&peekedConn{Conn: c, r: br})
			default:
				httpLn.deliver(&peekedConn{Conn: c, r: br})
			}
		}()
	}
}

// peekedConn is a connection whose first bytes were read into r.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (p *peekedConn) Read(b []byte) (int, error) { return p.r.Read(b) }

// chanListener is a net.Listener fed by route.
type chanListener struct {
	addr   net.Addr
	ch     chan net.Conn
	closed chan struct{}
	once   sync.Once
}

func newChanListener(addr net.Addr) *chanListener {
	return &chanListener{addr: addr, ch: make(chan net.Conn), closed: make(chan struct{})}
}

func (l *chanListener) deliver(c net.Conn) {
	select {
	case l.ch <- c:
	case <-l.closed:
		c.Close()
	}
}

func (l *chanListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.ch:
		return c, nil
	case <-l.closed:
		return nil, net.ErrClosed
	}
}

func (l *chanListener) Close() error {
	l.once.Do(func() { close(l.closed) })
	return nil
}

func (l *chanListener) Addr() net.Addr { return l.addr }
