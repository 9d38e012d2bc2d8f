package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"fortio.org/fortio/fgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/grpc/status"
	"google.golang.org/grpc/tap"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
)

// Limits bound what the agent server gives peers, above all those without the run's token.
type Limits struct {
	// MaxConns caps the authenticated connections open at once.
	MaxConns int
	// Strangers caps the connections that have not yet presented the token, from sources that
	// never did; StrangersPerSource caps them per source address.
	Strangers, StrangersPerSource int
	// Handshake is how long a new connection has to send its first bytes (and an HTTP client
	// its request headers).
	Handshake time.Duration
	// AuthWindow is how long a connection may stay without presenting the token before it is
	// closed, whatever it sends.
	AuthWindow time.Duration
	// StrangerBytes is how much a connection may send before it presents the token.
	StrangerBytes int
	// StrangerRate is how many connections a source that never presented the token may open
	// per second; the rest are closed on accept.
	StrangerRate int
	// Idle closes keep-alive HTTP and gRPC connections that carry nothing for this long.
	Idle time.Duration
	// Trusted are sources trusted from the start, as if they had presented the token once (the
	// API server, whose pod proxy carries the plugin's requests): strangers' bounds never count
	// their connections, which must still present the token.
	Trusted []netip.Addr
}

// trustFlag is the --trust flag: addresses trusted from the start.
type trustFlag struct{ addrs *[]netip.Addr }

func (f trustFlag) String() string { return fmt.Sprint(*f.addrs) }
func (f trustFlag) Type() string   { return "addresses" }
func (f trustFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		a, err := netip.ParseAddr(strings.TrimSpace(s))
		if err != nil {
			return fmt.Errorf("--trust %q: want IP addresses separated by commas", v)
		}
		*f.addrs = append(*f.addrs, a.Unmap())
	}
	return nil
}

// DefaultLimits fit the largest job the plugin accepts (1024 connections, 128 streams).
var DefaultLimits = Limits{MaxConns: 1280, Strangers: 64, StrangersPerSource: 8,
	Handshake: 2 * time.Second, AuthWindow: 3 * time.Second, StrangerBytes: 8 << 10, StrangerRate: 16, Idle: 30 * time.Second}

var errWrongToken = errors.New("wrong token")

// Header limits: a token header fits many times over; nothing larger is read before the token.
const (
	maxHTTPHeaderBytes = 16 << 10
	maxGRPCHeaderList  = 8 << 10
)

// router accepts connections through the gate and hands each to the server its first bytes
// belong to.
type router struct {
	ln         net.Listener // gated
	http, grpc *chanListener
	accept     func(string) bool
	limits     Limits
}

func (r *router) run(ctx context.Context) {
	for {
		c, err := r.ln.Accept()
		if err != nil {
			return
		}
		go r.handle(ctx, c.(*gatedConn))
	}
}

func (r *router) handle(ctx context.Context, c *gatedConn) {
	br := bufio.NewReaderSize(c, 4096)
	_ = c.SetReadDeadline(time.Now().Add(r.limits.Handshake))
	head, err := br.Peek(4)
	if err != nil {
		c.Close()
		return
	}
	switch {
	case string(head) == probes.ThroughputMagic:
		_, _ = br.Discard(len(probes.ThroughputMagic))
		stop := context.AfterFunc(ctx, func() { c.Close() })
		defer stop()
		_ = probes.ServeThroughput(c, br, r.admit(c))
	case string(head) == probes.RateMagic:
		_, _ = br.Discard(len(probes.RateMagic))
		_ = probes.ServeRate(ctx, c, br, r.admit(c)) // closes c when ctx ends
	case string(head) == "PRI ": // the HTTP/2 preface gRPC opens with
		// The gate closes the connection unless a call presents the token within its window.
		_ = c.SetReadDeadline(time.Time{})
		r.grpc.deliver(&peekedConn{Conn: c, r: br})
	default:
		// The HTTP server's ReadHeaderTimeout takes over from here.
		_ = c.SetReadDeadline(time.Time{})
		r.http.deliver(&peekedConn{Conn: c, r: br})
	}
}

// admit is how a stream of c presenting a token is let in: the run's token, and a slot for
// token holders.
func (r *router) admit(c *gatedConn) func(tok string) error {
	return func(tok string) error {
		switch {
		case !r.accept(tok):
			return errWrongToken
		case !c.authenticate():
			return probes.ErrSinkFull
		}
		return nil
	}
}

// newHTTPServer serves the latency probes and the control API; a request without the token is
// answered 401 and its connection closed.
func newHTTPServer(l Limits, accept func(string) bool, ls *lease, done func(string), id Identity, jobs http.Handler, token func() string) *http.Server {
	return &http.Server{
		Handler:           proven(token, id, authenticated(accept, controlMux(ls, done, id, jobs))),
		ConnContext:       withGated,
		ReadHeaderTimeout: l.Handshake,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       l.Idle,
		MaxHeaderBytes:    maxHTTPHeaderBytes,
	}
}

// authenticated answers requests without the token 401 and closes their connection; a request
// with it authenticates its connection at the gate.
func authenticated(accept func(string) bool, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !accept(r.Header.Get(TokenHeader)) {
			w.Header().Set("Connection", "close")
			http.Error(w, "missing or wrong "+TokenHeader, http.StatusUnauthorized)
			return
		}
		if !authenticateRequest(r.Context()) {
			w.Header().Set("Connection", "close")
			http.Error(w, "too many connections", http.StatusServiceUnavailable)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// WhoAmIAnswer is what PathWhoAmI answers a request that carries a proof of the token: the
// server's identity and its own proof over the request's nonce and that identity.
type WhoAmIAnswer struct {
	Identity
	// Peer is the source address the request came from, as this agent saw it (after SNAT);
	// PeerIsGateway says it is this pod's default gateway (its node's pod-network address).
	Peer          string `json:"peer"`
	PeerIsGateway bool   `json:"peerIsGateway"`
	MAC           string `json:"mac"`
}

// maxNonces bounds the proofs an agent remembers, each for ProofWindow past its time: 32,768
// (about 1.5 MiB) is 546 connections a second for a minute to one endpoint, past what a ladder's
// sequential connections reach on the lab (4 nodes, 2 policies, 200 each: 1,600 a round).
const maxNonces = 32768

// proven answers PathWhoAmI for a request with a valid, fresh, unseen proof of the token
// (probes.ProofHeader; the spread probe's, which reaches whichever pod a Service picks and so
// never carries the token), authenticating its connection; everything else goes to next.
func proven(token func() string, id Identity, next http.Handler) http.Handler {
	seen := probes.NewNonces(maxNonces)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		proof := r.Header.Get(probes.ProofHeader)
		if proof == "" || r.Method != http.MethodGet || r.URL.Path != PathWhoAmI {
			next.ServeHTTP(w, r)
			return
		}
		tok, now := token(), time.Now()
		if tok == "" {
			http.Error(w, "the token is not known here yet", http.StatusServiceUnavailable)
			return
		}
		nonce, err := probes.CheckProof(tok, proof, now)
		if err != nil || !seen.First(nonce, now) || !authenticateProven(r.Context()) {
			w.Header().Set("Connection", "close")
			http.Error(w, "missing, stale or replayed "+probes.ProofHeader, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		peer, _, _ := net.SplitHostPort(r.RemoteAddr)
		gw := isGateway(peer)
		_ = json.NewEncoder(w).Encode(WhoAmIAnswer{Identity: id, Peer: peer, PeerIsGateway: gw, MAC: probes.AnswerMAC(tok, nonce, id.Pod, id.Node, id.Zone, peer, gw)})
	})
}

// controlMux serves the control API and the latency probes.
func controlMux(ls *lease, done func(string), id Identity, jobs http.Handler) http.Handler {
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
	var scans appScans
	mux.HandleFunc(PathCPU, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		q := r.URL.Query()
		_ = json.NewEncoder(w).Encode(scans.reply(q.Get("app"), appIDs(q.Get("ids")), q.Get("probe")))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = w.Write([]byte("ok\n"))
	})
	return mux
}

// newGRPCServer serves the ping service; the token is checked before any message is decoded,
// on a header list of at most maxGRPCHeaderList bytes, and a call with it authenticates its
// connection at the gate.
func newGRPCServer(l Limits, accept func(string) bool, g *gate) *grpc.Server {
	s := grpc.NewServer(
		grpc.InTapHandle(func(ctx context.Context, info *tap.Info) (context.Context, error) {
			if v := info.Header.Get(TokenMetadata); len(v) != 1 || !accept(v[0]) {
				return nil, status.Error(codes.Unauthenticated, "missing or wrong "+TokenMetadata)
			}
			if p, ok := peer.FromContext(ctx); !ok || !g.authenticateRemote(p.Addr) {
				return nil, status.Error(codes.ResourceExhausted, "too many connections")
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
		grpc.MaxHeaderListSize(maxGRPCHeaderList),
		grpc.MaxRecvMsgSize(64<<10),
		grpc.MaxConcurrentStreams(1024),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: l.Idle}),
	)
	fgrpc.RegisterPingServerServer(s, probes.PingService{})
	return s
}
