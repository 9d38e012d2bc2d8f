package agent

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cpustat"
	"github.com/kubectl-netbench/kubectl-netbench/internal/ifstat"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// ServeOptions configures the agent server.
type ServeOptions struct {
	// Listen is the address to listen on; port 0 picks a free port.
	Listen string
	// IPs, when set, are the addresses to listen on at Listen's port instead (a dual-stack
	// pod's address of each family).
	IPs   []string
	Token string
	// TokenSHA256 accepts clients whose token has this hex digest (instead of Token).
	TokenSHA256 string
	// NotAfter bounds the server's life: it exits then whether or not a client came.
	NotAfter time.Time
	// Lease, when set, ends the server unless the plugin renews it (PathLease) within each
	// period: a plugin that died does not leave its agents measuring.
	Lease time.Duration
	// Limits against peers without the token (defaults: DefaultLimits).
	Limits Limits
	// Identity is what PathWhoAmI answers.
	Identity Identity
	// Jobs lets token holders post jobs to PathJob, run one at a time, each answered with its
	// events: an agent that serves its peers and measures them (the matrix's).
	Jobs bool
}

// Identity names the pod an agent server runs in.
type Identity struct {
	Pod  string `json:"pod"`
	Node string `json:"node,omitempty"`
	Zone string `json:"zone,omitempty"`
}

// Paths of the control API; every other path answers the latency probes.
const (
	PathDone = "/netbench/v1/done"
	PathCPU  = "/netbench/v1/cpu"
	// PathWhoAmI answers with the server's Identity: which endpoint a connection reached.
	PathWhoAmI = "/netbench/v1/whoami"
	PathLease  = "/netbench/v1/lease" // POST renews the server's lease; GET says it is alive
)

// CPUReply is the answer of PathCPU: the server's CPU time so far, its peak resident memory,
// what its CPU accounting says (cpustat.Sample), and its pod's interface counters with its own
// I/O (ifstat.Sample): the server's side of a probe's accounting.
type CPUReply struct {
	CPUNanos         int64   `json:"cpuNanos"`
	PeakRSSBytes     int64   `json:"peakRSSBytes,omitempty"`
	RunDelayNanos    int64   `json:"runDelayNanos,omitempty"`
	ThrottledNanos   int64   `json:"throttledNanos,omitempty"`
	ThrottledPeriods int64   `json:"throttledPeriods,omitempty"`
	LimitCores       float64 `json:"limitCores,omitempty"`
	// The server's pod interfaces and own I/O (ifstat.Sample), when readable.
	InterfaceBytes   int64 `json:"interfaceBytes,omitempty"`
	InterfacePackets int64 `json:"interfacePackets,omitempty"`
	OwnBytes         int64 `json:"ownBytes,omitempty"`
	TrafficOK        bool  `json:"trafficOK,omitempty"`
	// App is, at the last of a probe's two scans, what the server pod's other containers did
	// since the first, by container ID, over AppWindowNanos; AppCut when a scan was cut short.
	App            map[string]cpustat.Group `json:"app,omitempty"`
	AppWindowNanos int64                    `json:"appWindowNanos,omitempty"`
	AppCut         bool                     `json:"appCut,omitempty"`
	// SampledAgoNanos is how long before the reply the CPU was sampled (a scan after it).
	SampledAgoNanos int64 `json:"sampledAgoNanos,omitempty"`
	// IdleEntries is cpustat.Sample's, absent where the node has none to read.
	IdleEntries *int64 `json:"idleEntries,omitempty"`
}

// cpuReply is this process's CPUReply now.
func cpuReply() CPUReply {
	s, n := cpustat.Read(), ifstat.Read()
	return CPUReply{CPUNanos: int64(s.CPU), PeakRSSBytes: cpustat.PeakRSS(), RunDelayNanos: int64(s.RunDelay),
		ThrottledNanos: int64(s.Throttled), ThrottledPeriods: s.ThrottledPeriods, LimitCores: s.LimitCores,
		InterfaceBytes: n.Bytes, InterfacePackets: n.Packets, OwnBytes: n.OwnBytes, TrafficOK: n.OK, IdleEntries: counted(s.IdleEntries, s.IdleCounted)}
}

// appScans holds the server's first scans of its pod's containers around the probes in
// progress, by the key the client gave the probe: a late last call, or another client, never
// takes another probe's baseline.
type appScans struct {
	mu    sync.Mutex
	first map[string]firstScan
}

type firstScan struct {
	scan *cpustat.Scan
	at   time.Time
}

// maxAppProbes bounds the baselines kept (the oldest goes): a client runs one probe at a time.
const maxAppProbes = 4

// keep stores a probe's first scan, making room by dropping the oldest.
func (a *appScans) keep(key string, scan *cpustat.Scan) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.first == nil {
		a.first = map[string]firstScan{}
	}
	for len(a.first) >= maxAppProbes {
		oldest := ""
		for k, f := range a.first {
			if oldest == "" || f.at.Before(a.first[oldest].at) {
				oldest = k
			}
		}
		delete(a.first, oldest)
	}
	a.first[key] = firstScan{scan: scan, at: time.Now()}
}

// take removes and returns a probe's first scan; nil without one.
func (a *appScans) take(key string) *cpustat.Scan {
	a.mu.Lock()
	defer a.mu.Unlock()
	f := a.first[key]
	delete(a.first, key)
	return f.scan
}

// maxAppIDs bounds the container IDs a query names.
const maxAppIDs = 64

// appIDs are the container IDs of PathCPU's query: at most maxAppIDs, each like a runtime's.
func appIDs(q string) []string {
	var ids []string
	for _, id := range strings.Split(q, ",") {
		if len(ids) < maxAppIDs && cpustat.LooksLikeID(id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// reply is the CPUReply for PathCPU's query (app, ids, and the probe's key): the first scan
// before the CPU sample, the last after it with what the containers did since the first; none
// without IDs or a key.
func (a *appScans) reply(app string, ids []string, key string) CPUReply {
	if len(ids) == 0 || !cpustat.LooksLikeID(key) {
		return cpuReply()
	}
	if app == appFirst {
		a.keep(key, cpustat.ScanOthers(ids))
	}
	r := cpuReply()
	if app == appLast {
		at := time.Now()
		first := a.take(key)
		res := appSince(cpustat.ScanOthers(ids), first)
		r.App, r.AppWindowNanos, r.AppCut = res.groups, int64(res.window), res.cut
		r.SampledAgoNanos = int64(time.Since(at))
	}
	return r
}

// sample is the accounting the reply holds, received at `at` (sampled at most maxAgo before).
func (r CPUReply) sample(at time.Time, maxAgo time.Duration) usage {
	at = at.Add(-min(max(0, time.Duration(r.SampledAgoNanos)), maxAgo))
	return usage{
		cpu: cpustat.Sample{At: at, CPU: time.Duration(r.CPUNanos), RunDelay: time.Duration(r.RunDelayNanos),
			Throttled: time.Duration(r.ThrottledNanos), ThrottledPeriods: r.ThrottledPeriods, LimitCores: r.LimitCores,
			IdleEntries: ptrValue(r.IdleEntries), IdleCounted: r.IdleEntries != nil && *r.IdleEntries >= 0},
		net: ifstat.Sample{At: at, Bytes: r.InterfaceBytes, Packets: r.InterfacePackets, OwnBytes: r.OwnBytes, OK: r.TrafficOK},
		app: appResult{groups: r.App, window: time.Duration(r.AppWindowNanos), cut: r.AppCut},
	}
}

// Footprint is v1alpha1.Footprint, a type of the reports' schema.
type Footprint = v1alpha1.Footprint

// OwnFootprint is this process's footprint.
func OwnFootprint() Footprint {
	return Footprint{CPUSeconds: cpustat.ProcessCPU().Seconds(), PeakRSSBytes: cpustat.PeakRSS()}
}

// leaseExpired is why a server ends whose lease the plugin stopped renewing.
const leaseExpired = "lease expired: the plugin stopped renewing it"

// Serve runs the agent server: HTTP, gRPC, the throughput sink and control, all on one port
// (each connection is routed on its first bytes). It emits ready, then exit, and returns when
// a client posts PathDone, the deadline passes, or ctx ends.
func Serve(ctx context.Context, o ServeOptions, em *Emitter) error {
	if err := o.complete(); err != nil {
		return err
	}
	ctx, cancel := context.WithDeadline(ctx, o.NotAfter)
	defer cancel()

	ln, listenNote, err := listenAll(o.Listen, o.IPs)
	if err != nil {
		return fmt.Errorf("listening on %s %v: %w", o.Listen, o.IPs, err)
	}
	keys := &udpKeys{}
	accept := keys.learning(tokenAccepter(o.Token, o.TokenSHA256))
	if o.Token != "" {
		keys.learn(o.Token)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	udpNote := ""
	if listenNote != "" {
		udpNote = "; " + listenNote
	}
	waitUDP, err := serveUDP(ctx, port, keys.get)
	if err != nil {
		waitUDP, udpNote = func() {}, udpNote+fmt.Sprintf("; no UDP echo: %v", err)
	}

	var doneOnce sync.Once
	doneBy := "deadline reached"
	done := func(reason string) {
		doneOnce.Do(func() {
			doneBy = reason
			cancel()
		})
	}
	ls := newLease(ctx, o.Lease, func() {
		// Said at once, before the listener closes: the exit event comes only after the
		// shutdown, later than a client's refused connection.
		em.Emit(Event{Type: EventError, Message: leaseExpired + "; the server stops"})
		done(leaseExpired)
	})

	var jobs http.Handler
	if o.Jobs {
		jobs = &meshJobs{run: Run}
	}
	g := newGate(o.Limits)
	httpSrv := newHTTPServer(o.Limits, accept, ls, done, o.Identity, jobs, keys.token)
	grpcSrv := newGRPCServer(o.Limits, accept, g)
	httpLn := newChanListener(ln.Addr())
	grpcLn := newChanListener(ln.Addr())
	var wg sync.WaitGroup
	wg.Add(3)
	go func() { defer wg.Done(); _ = httpSrv.Serve(httpLn) }()
	go func() { defer wg.Done(); _ = grpcSrv.Serve(grpcLn) }()
	go func() {
		defer wg.Done()
		r := &router{ln: &gatedListener{Listener: ln, g: g}, http: httpLn, grpc: grpcLn, accept: accept, limits: o.Limits}
		r.run(ctx)
	}()

	em.Emit(Event{Type: EventReady, Port: port, Message: fmt.Sprintf("listening on %s (TCP and UDP) until %s%s", ln.Addr(), o.NotAfter.UTC().Format(time.RFC3339), udpNote)})

	<-ctx.Done()
	ln.Close()
	shutCtx, shutCancel := context.WithTimeout(context.Background(), time.Second)
	defer shutCancel()
	_ = httpSrv.Shutdown(shutCtx)
	_ = httpSrv.Close()
	grpcSrv.Stop()
	httpLn.Close()
	grpcLn.Close()
	waitOrTimeout(&wg, time.Second)
	waitUDP()
	em.Emit(Event{Type: EventExit, Message: doneBy})
	return nil
}

// complete checks o and fills in its defaults.
func (o *ServeOptions) complete() error {
	if o.Token == "" && o.TokenSHA256 == "" {
		return errors.New("agent serve needs a token (--token, --token-sha256 or " + TokenEnv + ")")
	}
	if o.NotAfter.IsZero() {
		return errors.New("agent serve needs a not-after time")
	}
	if !time.Now().Before(o.NotAfter) {
		return ErrTooLate
	}
	if o.Listen == "" {
		o.Listen = ":0"
	}
	if o.Limits.MaxConns == 0 { // none given: the defaults, with the sources trusted
		trusted := o.Limits.Trusted
		o.Limits = DefaultLimits
		o.Limits.Trusted = trusted
	}
	return nil
}

// udpKeys holds the UDP datagrams' key. It derives from the token itself, which the spec does
// not carry (only its digest): a server started with the digest learns the token from the
// first token holder that presents it over TCP (the plugin's first lease renewal through the
// pod proxy, before any client is started), and answers no datagram before that.
type udpKeys struct {
	key atomic.Pointer[[]byte]
	tok atomic.Pointer[string]
}

func (k *udpKeys) learn(token string) {
	if k.key.Load() == nil {
		key := probes.UDPKey(token)
		k.tok.CompareAndSwap(nil, &token)
		k.key.CompareAndSwap(nil, &key)
	}
}

// token is the token once learnt ("" before): the spread probe's proofs are checked with it.
func (k *udpKeys) token() string {
	if p := k.tok.Load(); p != nil {
		return *p
	}
	return ""
}

// get is the key, or nil while the token is unknown.
func (k *udpKeys) get() []byte {
	if p := k.key.Load(); p != nil {
		return *p
	}
	return nil
}

// learning wraps accept: an accepted token teaches the key.
func (k *udpKeys) learning(accept func(string) bool) func(string) bool {
	return func(tok string) bool {
		if !accept(tok) {
			return false
		}
		k.learn(tok)
		return true
	}
}

// waitOrTimeout waits for wg, but not longer than d: a peer stuck mid-handshake must not keep
// the agent alive.
func waitOrTimeout(wg *sync.WaitGroup, d time.Duration) {
	ch := make(chan struct{})
	go func() { wg.Wait(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(d):
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
