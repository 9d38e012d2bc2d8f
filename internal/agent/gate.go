package agent

import (
	"context"
	"errors"
	"net"
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// MaxAgentRSS is the resident memory an agent stays under whatever peers without the token
// send (docs/security.md; the siege tests hold the agent to it).
const MaxAgentRSS = 64 << 20

// gate admits the connections of one listener. A connection is a stranger until it presents
// the run's token; strangers are bounded per source address and in total, and each is closed
// if it has not authenticated within its window, whatever it sends or holds. When a stranger
// arrives over a bound, the oldest stranger of the source holding the most is closed: a source
// can only ever push out its own connections until every source holds as few as the newcomer's,
// so one peer (or a few) holding and re-opening connections cannot keep the plugin's
// single connection out. Authenticated connections have their own slots and never count
// against strangers; a source that authenticated once is trusted, and its new connections
// are not counted against the strangers' total either.
type gate struct {
	limits Limits

	mu        sync.Mutex
	strangers map[netip.Addr][]*gatedConn // by source, oldest first
	nStranger int                         // strangers from untrusted sources: what Strangers bounds
	nAuthed   int
	admitted  uint64
	trusted   map[netip.Addr]bool
	byRemote  map[string]*gatedConn // every open connection by its remote address

	// Strangers admitted per untrusted source in the current second: past StrangerRate the
	// rest are closed on accept, before a goroutine or a byte is spent on them.
	rateStart time.Time
	rate      map[netip.Addr]int
	// credit counts, per untrusted source, connections past its rate that proofs paid for: a
	// proven connection (authenticated without trusting its source) lets one more in, up to
	// maxProofCredit waiting, so a token holder's connections one after another through a node
	// port are not held to the strangers' rate, and whoever shares its source gets no more
	// than it paid for.
	credit map[netip.Addr]int
}

// maxProofCredit bounds the admissions past the rate that proofs may have paid for in advance.
const maxProofCredit = 8

func newGate(l Limits) *gate {
	g := &gate{limits: l, strangers: map[netip.Addr][]*gatedConn{}, trusted: map[netip.Addr]bool{},
		byRemote: map[string]*gatedConn{}, rate: map[netip.Addr]int{}, credit: map[netip.Addr]int{}}
	for _, a := range l.Trusted {
		g.trusted[a] = true
	}
	return g
}

// gatedConn is one admitted connection.
type gatedConn struct {
	net.Conn
	g      *gate
	src    netip.Addr
	seq    uint64 // admission order
	authed bool   // under g.mu
	// counted: admitted from an untrusted source, so counted against Strangers (under g.mu).
	counted bool
	closed  bool // under g.mu
	timer   *time.Timer

	trusted  atomic.Bool  // authed, read without the lock on every Read
	unauthed atomic.Int64 // bytes read while a stranger
}

// ErrStrangerBytes is the error of a Read past StrangerBytes without the token.
var ErrStrangerBytes = errors.New("too many bytes without the token")

// Read counts what a stranger sends: past StrangerBytes it is closed. A token holder's request,
// preface and headers fit many times over, so only a peer without the token gets here; and it
// costs the agent at most that much parsing per connection, whatever it sends.
func (c *gatedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 && !c.trusted.Load() && c.unauthed.Add(int64(n)) > int64(c.g.limits.StrangerBytes) {
		c.Close()
		return 0, ErrStrangerBytes
	}
	return n, err
}

// sourceOf is a connection's remote IP address (v4-mapped addresses unmapped).
func sourceOf(c net.Conn) netip.Addr {
	if ap, err := netip.ParseAddrPort(c.RemoteAddr().String()); err == nil {
		return ap.Addr().Unmap()
	}
	return netip.Addr{}
}

// admit registers a new connection as a stranger, closing whichever stranger the bounds say
// must make room, and arms its authentication window. It returns nil for a connection from an
// untrusted source past its rate: the caller closes it at once.
func (g *gate) admit(c net.Conn) *gatedConn {
	gc := &gatedConn{Conn: c, g: g, src: sourceOf(c)}
	var evict []*gatedConn
	g.mu.Lock()
	if !g.withinRate(gc.src) {
		g.mu.Unlock()
		return nil
	}
	if q := g.strangers[gc.src]; len(q) >= g.perSource(gc.src) {
		evict = append(evict, q[0])
		g.dropStranger(q[0])
	}
	if !g.trusted[gc.src] && g.nStranger >= g.limits.Strangers {
		if v := g.victim(); v != nil {
			evict = append(evict, v)
			g.dropStranger(v)
		}
	}
	g.admitted++
	gc.seq = g.admitted
	g.strangers[gc.src] = append(g.strangers[gc.src], gc)
	if gc.counted = !g.trusted[gc.src]; gc.counted {
		g.nStranger++
	}
	g.byRemote[c.RemoteAddr().String()] = gc
	gc.timer = time.AfterFunc(g.limits.AuthWindow, gc.expire)
	g.mu.Unlock()
	for _, v := range evict {
		v.Close()
	}
	return gc
}

// withinRate counts a new connection of src against StrangerRate per second (g.mu held);
// trusted sources are not counted.
func (g *gate) withinRate(src netip.Addr) bool {
	if g.trusted[src] {
		return true
	}
	if now := time.Now(); now.Sub(g.rateStart) >= time.Second {
		g.rateStart = now
		clear(g.rate)
	}
	g.rate[src]++
	if g.rate[src] <= g.limits.StrangerRate {
		return true
	}
	if g.credit[src] > 0 {
		g.credit[src]--
		return true
	}
	return false
}

// perSource is how many strangers one source may hold (g.mu held): a trusted source (the API
// server's pod proxy, the client agent) as many as token holders have slots, since a burst of
// its new connections (a closed-loop probe's) are token holders' that have not spoken yet.
func (g *gate) perSource(src netip.Addr) int {
	if g.trusted[src] {
		return trustedWaiting
	}
	return g.limits.StrangersPerSource
}

// trustedWaiting bounds the connections of one trusted source waiting to speak: a closed-loop
// probe's burst fits, and a peer that came to share a trusted address (a reused pod IP, a
// node's address shared by host-network pods) holds at most this many.
const trustedWaiting = 128

// victim is the oldest stranger of the untrusted source that holds the most; among sources
// holding as many, the one admitted first.
func (g *gate) victim() *gatedConn {
	var v *gatedConn
	most := 0
	for src, q := range g.strangers {
		if g.trusted[src] || len(q) == 0 {
			continue
		}
		if len(q) > most || (len(q) == most && q[0].seq < v.seq) {
			v, most = q[0], len(q)
		}
	}
	return v
}

// dropStranger removes c from the strangers (g.mu held).
func (g *gate) dropStranger(c *gatedConn) {
	q := g.strangers[c.src]
	for i, x := range q {
		if x == c {
			q = append(q[:i:i], q[i+1:]...)
			if c.counted {
				g.nStranger--
			}
			break
		}
	}
	if len(q) == 0 {
		delete(g.strangers, c.src)
	} else {
		g.strangers[c.src] = q
	}
}

// authenticate moves c from the strangers to the authenticated connections and trusts its
// source. It reports false when the authenticated slots are full (the caller then closes it).
func (c *gatedConn) authenticate() bool { return c.admitAuthed(true) }

// admitAuthed is authenticate, trusting c's source from now on only when trust is set; else
// the proof pays for one more of its source's connections past the strangers' rate.
func (c *gatedConn) admitAuthed(trust bool) bool {
	g := c.g
	g.mu.Lock()
	defer g.mu.Unlock()
	if c.authed || c.closed {
		return c.authed
	}
	if g.nAuthed >= g.limits.MaxConns {
		return false
	}
	g.dropStranger(c)
	c.authed = true
	c.trusted.Store(true)
	g.nAuthed++
	if trust {
		g.trusted[c.src] = true
	} else if g.credit[c.src] < maxProofCredit {
		g.credit[c.src]++
	}
	c.timer.Stop()
	return true
}

// expire closes a stranger whose window passed. It decides and gives the slot back under the
// lock, so a connection authenticating at that moment is either authenticated or closed.
func (c *gatedConn) expire() {
	c.g.mu.Lock()
	expired := !c.authed && !c.closed
	if expired {
		c.release()
	}
	c.g.mu.Unlock()
	if expired {
		_ = c.Conn.Close()
	}
}

// Close gives the connection's slot back once.
func (c *gatedConn) Close() error {
	c.g.mu.Lock()
	if !c.closed {
		c.release()
	}
	c.g.mu.Unlock()
	if c.timer != nil {
		c.timer.Stop()
	}
	return c.Conn.Close()
}

// release marks the connection closed and gives its slot back (g.mu held).
func (c *gatedConn) release() {
	g := c.g
	c.closed = true
	if c.authed {
		g.nAuthed--
	} else {
		g.dropStranger(c)
	}
	if g.byRemote[c.RemoteAddr().String()] == c {
		delete(g.byRemote, c.RemoteAddr().String())
	}
}

// authenticateRemote authenticates the open connection with this remote address (gRPC tells
// its handlers only the peer's address).
func (g *gate) authenticateRemote(addr net.Addr) bool {
	if addr == nil {
		return false
	}
	g.mu.Lock()
	c := g.byRemote[addr.String()]
	g.mu.Unlock()
	return c != nil && c.authenticate()
}

// counts says how many strangers and authenticated connections are open.
func (g *gate) counts() (strangers, authed int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.nStranger, g.nAuthed
}

// gatedListener admits every accepted connection through its gate.
type gatedListener struct {
	net.Listener
	g *gate
}

func (l *gatedListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if gc := l.g.admit(c); gc != nil {
			return gc, nil
		}
		c.Close()
	}
}

type gatedKey struct{}

// withGated is an http.Server's ConnContext: it lets handlers find their connection.
func withGated(ctx context.Context, c net.Conn) context.Context {
	for {
		switch x := c.(type) {
		case *gatedConn:
			return context.WithValue(ctx, gatedKey{}, x)
		case *peekedConn:
			c = x.Conn
		default:
			return ctx
		}
	}
}

// authenticateRequest marks the request's connection authenticated (false: no slot left).
func authenticateRequest(ctx context.Context) bool {
	gc, ok := ctx.Value(gatedKey{}).(*gatedConn)
	return !ok || gc.authenticate()
}

// authenticateProven marks the request's connection authenticated without trusting its source:
// a proof arrives through a Service or a node port, whose source (a node's SNAT) is every
// stranger's who comes the same way.
func authenticateProven(ctx context.Context) bool {
	gc, ok := ctx.Value(gatedKey{}).(*gatedConn)
	return !ok || gc.admitAuthed(false)
}

// SyscallConn is the connection's socket (a rate probe's server waits on it in blocking reads).
func (c *gatedConn) SyscallConn() (syscall.RawConn, error) {
	sc, ok := c.Conn.(syscall.Conn)
	if !ok {
		return nil, errors.New("not a socket")
	}
	return sc.SyscallConn()
}

// CloseSocket closes the connection's descriptor and keeps its slot until Close (a rate
// probe's server has taken a descriptor of its own for the socket).
func (c *gatedConn) CloseSocket() error { return c.Conn.Close() }
