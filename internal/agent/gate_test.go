package agent

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeConn is a connection from a given remote address that records whether it was closed.
type fakeConn struct {
	net.Conn
	remote net.Addr
	closed atomic.Bool
}

func (c *fakeConn) RemoteAddr() net.Addr { return c.remote }
func (c *fakeConn) Close() error         { c.closed.Store(true); return nil }

func from(ip string, port int) *fakeConn {
	return &fakeConn{remote: &net.TCPAddr{IP: net.ParseIP(ip), Port: port}}
}

var testLimits = Limits{MaxConns: 4, Strangers: 6, StrangersPerSource: 2, Handshake: time.Second, AuthWindow: time.Hour, StrangerBytes: 1000, StrangerRate: 1000, Idle: time.Minute}

// A source that keeps opening connections only ever closes its own: the others' stay.
func TestGateSourceOnlyPushesOutItsOwn(t *testing.T) {
	g := newGate(testLimits)
	plugin := from("10.0.0.1", 1000)
	g.admit(plugin)
	var attacker []*fakeConn
	for i := range 50 {
		c := from("10.0.0.66", 2000+i)
		attacker = append(attacker, c)
		g.admit(c)
	}
	if plugin.closed.Load() {
		t.Fatal("the plugin's connection was closed by one source re-opening its own")
	}
	open := 0
	for _, c := range attacker {
		if !c.closed.Load() {
			open++
		}
	}
	strangers, _ := g.counts()
	if diff := cmp.Diff([2]int{2, 3}, [2]int{open, strangers}); diff != "" {
		t.Errorf("attacker's open connections, strangers (-want +got):\n%s", diff)
	}
}

// Many sources filling every stranger slot: a newcomer pushes out the oldest connection of the
// source holding the most, never the single connection of another source.
func TestGateTotalBoundEvictsTheLargestSource(t *testing.T) {
	g := newGate(testLimits)
	plugin := from("10.0.0.1", 1000)
	g.admit(plugin)
	for i := range 30 {
		g.admit(from([]string{"10.0.0.2", "10.0.0.3", "10.0.0.4"}[i%3], 3000+i))
	}
	if plugin.closed.Load() {
		t.Fatal("the single connection of a source was closed while others held two each")
	}
	if s, _ := g.counts(); s != testLimits.Strangers {
		t.Errorf("%d strangers open, want the bound %d", s, testLimits.Strangers)
	}
}

// Authenticated connections have slots of their own, and their source is trusted: its new
// connections are not refused when strangers fill every slot.
func TestGateAuthenticatedDoNotCompete(t *testing.T) {
	g := newGate(testLimits)
	first := g.admit(from("10.0.0.1", 1000))
	if !first.authenticate() {
		t.Fatal("the first authenticated connection was refused")
	}
	for i := range 40 {
		for _, ip := range []string{"10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"} {
			g.admit(from(ip, 4000+i))
		}
	}
	var mine []*gatedConn
	for i := range 4 {
		c := from("10.0.0.1", 1001+i)
		mine = append(mine, g.admit(c))
		if c.closed.Load() {
			t.Fatalf("connection %d of a trusted source closed on admission", i)
		}
	}
	for i, c := range mine[:3] {
		if !c.authenticate() {
			t.Errorf("authenticated connection %d refused with %d slots", i+2, testLimits.MaxConns)
		}
	}
	if mine[3].authenticate() {
		t.Error("a fifth authenticated connection was given a slot past MaxConns 4")
	}
	strangers, authed := g.counts()
	t.Logf("strangers %d, authenticated %d", strangers, authed)
	if authed != 4 {
		t.Errorf("%d authenticated connections, want 4", authed)
	}
	mine[0].Close()
	if !mine[3].authenticate() {
		t.Error("a closed authenticated connection did not give its slot back")
	}
}

// A stranger that does not authenticate within its window is closed; one that did stays.
func TestGateClosesStrangersAfterTheWindow(t *testing.T) {
	l := testLimits
	l.AuthWindow = 50 * time.Millisecond
	g := newGate(l)
	idle, authed := from("10.0.0.9", 1), from("10.0.0.8", 2)
	g.admit(idle)
	g.admit(authed).authenticate()
	time.Sleep(200 * time.Millisecond)
	got := [2]bool{idle.closed.Load(), authed.closed.Load()}
	if diff := cmp.Diff([2]bool{true, false}, got); diff != "" {
		t.Errorf("closed: stranger, authenticated (-want +got):\n%s", diff)
	}
}

// endless is a connection that always has more to read.
type endless struct{ fakeConn }

func (e *endless) Read(b []byte) (int, error) { return len(b), nil }

// A stranger is closed once it has sent StrangerBytes without the token; a token holder reads on.
func TestGateBoundsWhatStrangersSend(t *testing.T) {
	g := newGate(testLimits)
	for _, authed := range []bool{false, true} {
		e := &endless{fakeConn{remote: &net.TCPAddr{IP: net.ParseIP("10.0.0.7"), Port: 9}}}
		c := g.admit(e)
		if authed {
			c.authenticate()
		}
		total, err := 0, error(nil)
		for total < 100*testLimits.StrangerBytes && err == nil {
			var n int
			n, err = c.Read(make([]byte, 300))
			total += n
		}
		switch {
		case !authed && (!errors.Is(err, ErrStrangerBytes) || total > testLimits.StrangerBytes || !e.closed.Load()):
			t.Errorf("stranger: read %d bytes, err %v, closed %v; want closed with ErrStrangerBytes within %d bytes", total, err, e.closed.Load(), testLimits.StrangerBytes)
		case authed && err != nil:
			t.Errorf("token holder: %v after %d bytes", err, total)
		}
	}
}

// A source that never presented the token opens at most StrangerRate connections a second; a
// trusted source is not counted.
func TestGateRateOfStrangers(t *testing.T) {
	l := testLimits
	l.StrangerRate = 5
	g := newGate(l)
	g.admit(from("10.0.0.1", 1)).authenticate()
	admitted := map[string]int{}
	for i := range 50 {
		for _, ip := range []string{"10.0.0.1", "10.0.0.2"} {
			if g.admit(from(ip, 100+i)) != nil {
				admitted[ip]++
			}
		}
	}
	if diff := cmp.Diff(map[string]int{"10.0.0.1": 50, "10.0.0.2": 5}, admitted); diff != "" {
		t.Errorf("admitted within a second (-want +got):\n%s", diff)
	}
}

// The plugin's first connection through the API server's pod proxy, before it ever presented the
// token, cannot be pushed out by strangers from any number of distinct sources once the API
// server's address is trusted from the start (--trust); without that, the oldest stranger goes
// first, and it is the oldest.
func TestGateTrustedFromTheStart(t *testing.T) {
	apiServer := netip.MustParseAddr("10.77.0.1")
	for _, tc := range []struct {
		name    string
		trusted []netip.Addr
		pushed  bool
	}{{"API server trusted", []netip.Addr{apiServer}, false}, {"nothing trusted", nil, true}} {
		t.Run(tc.name, func(t *testing.T) {
			l := testLimits
			l.Trusted = tc.trusted
			g := newGate(l)
			plugin := from(apiServer.String(), 1000)
			admitted := g.admit(plugin)
			for i := range 4 * l.Strangers {
				g.admit(from(fmt.Sprintf("10.1.%d.%d", i/250, i%250+1), 2000+i))
			}
			if plugin.closed.Load() != tc.pushed {
				t.Errorf("the plugin's connection closed: %v, want %v", plugin.closed.Load(), tc.pushed)
			}
			if !tc.pushed && !admitted.authenticate() {
				t.Error("the plugin's connection could not authenticate")
			}
		})
	}
}

// Connections waiting from a trusted address (the API server's, which a host-network pod on its
// node may share) do not fill the strangers' total: with 100 of them waiting, one stranger from
// another source is not pushed out when a third source connects.
func TestGateTrustedWaitingDoNotCrowdStrangers(t *testing.T) {
	l := testLimits
	l.Trusted = []netip.Addr{netip.MustParseAddr("10.77.0.1")}
	g := newGate(l)
	for i := range 100 {
		g.admit(from("10.77.0.1", 1000+i))
	}
	client := from("10.0.0.9", 2000)
	g.admit(client)
	g.admit(from("10.0.0.10", 3000))
	if client.closed.Load() {
		t.Error("a stranger was pushed out although the untrusted sources hold 2 of 6 slots")
	}
}

// A connection authenticated by a proof (through a Service or a node port, whose source is a
// node's SNAT shared with every stranger who comes the same way) gets its slot, but its source
// stays a stranger's: its other connections are bounded per source as before, where a token's
// connection would have made the source trusted.
func TestGateProofDoesNotTrustTheSource(t *testing.T) {
	for _, trust := range []bool{false, true} {
		g := newGate(testLimits)
		if !g.admit(from("10.77.0.11", 1000)).admitAuthed(trust) {
			t.Fatal("the proven connection was refused")
		}
		var later []*fakeConn
		for i := range 40 {
			c := from("10.77.0.11", 2000+i)
			g.admit(c)
			later = append(later, c)
		}
		open := 0
		for _, c := range later {
			if !c.closed.Load() {
				open++
			}
		}
		_, authed := g.counts()
		want := testLimits.StrangersPerSource
		if trust {
			want = 40
		}
		if authed != 1 || open < want || (!trust && open > want) {
			t.Errorf("trusted %v: %d of 40 later connections from the source open, %d authenticated: want %d open and the one", trust, open, authed, want)
		}
	}
}

// Past the strangers' rate, a source's connections are let in only as far as its proven ones
// paid for, one each, at most maxProofCredit ahead: a token holder's connections one after
// another go on, and whoever shares the source gets no more.
func TestGateProofsPayPastTheRate(t *testing.T) {
	l := testLimits
	l.StrangerRate = 2
	g := newGate(l)
	began := time.Now()
	admitted := func(port int) *gatedConn { return g.admit(from("10.77.0.11", port)) }
	first, second := admitted(100), admitted(101)
	if first == nil || second == nil {
		t.Fatal("a stranger within the rate was refused")
	}
	if admitted(200) != nil {
		t.Fatal("a stranger past the rate was let in without a proof")
	}
	if !second.admitAuthed(false) {
		t.Fatal("a proven connection was refused a slot")
	}
	for i := range 20 { // one after another, each proving: each pays for the next
		c := admitted(300 + i)
		if c == nil {
			t.Fatalf("connection %d after a proof was refused", i)
		}
		if !c.admitAuthed(false) {
			t.Fatal("a proven connection was refused a slot")
		}
		c.Close()
	}
	n := 0
	for i := range 40 {
		if admitted(500+i) != nil {
			n++
		}
	}
	switch {
	case time.Since(began) >= time.Second:
		t.Logf("the rate's second passed during the test (%s): %d let in", time.Since(began), n)
	case n != 1:
		t.Errorf("%d strangers let in past the rate after the proofs stopped: want the 1 the last proof paid for", n)
	}
}
