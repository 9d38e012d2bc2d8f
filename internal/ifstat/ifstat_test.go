package ifstat

import (
	"net"
	"testing"
	"time"
)

const devSample = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 5000000    4000    0    0    0     0          0         0  5000000    4000    0    0    0     0       0          0
  eth0: 1000    10    0    0    0     0          0         0    2000      20    0    0    0     0       0          0
 net1: 300 3 0 0 0 0 0 0 400 4 0 0 0 0 0 0
bogus
`

func TestParseDevSkipsLoopback(t *testing.T) {
	b, p := parseDev([]byte(devSample))
	if b != 1000+2000+300+400 || p != 10+20+3+4 {
		t.Errorf("parseDev = %d bytes, %d packets; want 3700, 37 (every interface but lo, both directions)", b, p)
	}
}

func TestParseIO(t *testing.T) {
	io := "rchar: 1200\nwchar: 34\nsyscr: 5\nsyscw: 6\nread_bytes: 9999\nwrite_bytes: 0\n"
	if got := parseIO([]byte(io)); got != 1234 {
		t.Errorf("parseIO = %d, want rchar + wchar = 1234", got)
	}
}

func TestOtherIsALowerBoundNeverNegative(t *testing.T) {
	for _, c := range []struct {
		bytes, packets, own, want int64
	}{
		{1_000_000, 100, 0, 1_000_000 - 100*HeadersIPv4},
		{1_000_000, 100, 999_000, 0},     // own payload and headers: nothing else
		{1_000_000, 0, 400_000, 600_000}, // no packets counted: payload only
		{0, 0, 5, 0},
	} {
		if got := Other(c.bytes, c.packets, c.own, HeadersIPv4); got != c.want {
			t.Errorf("Other(%d, %d, %d) = %d, want %d", c.bytes, c.packets, c.own, got, c.want)
		}
	}
}

func TestSinceUnreadableOrBackwards(t *testing.T) {
	a := Sample{At: time.Now(), Bytes: 100, OK: true}
	for _, end := range []Sample{
		{At: a.At.Add(time.Second), Bytes: 900},          // unreadable
		{At: a.At.Add(time.Second), Bytes: 50, OK: true}, // an interface went away
		{At: a.At, Bytes: 900, OK: true},                 // no time passed
	} {
		if u := end.Since(a, HeadersIPv4); u != (Use{}) {
			t.Errorf("Since(%+v) = %+v, want the zero Use", end, u)
		}
	}
}

// Datagrams and retransmissions, which /proc/self/io does not see, count as own through CountOwn.
func TestCountOwn(t *testing.T) {
	before := Read()
	CountOwn(1500)
	CountOwn(-7)
	if got := Read().OwnBytes - before.OwnBytes; got < 1500 {
		t.Errorf("own bytes grew by %d after CountOwn(1500), want at least 1500", got)
	}
}

// A process's own TCP traffic shows in its I/O and on loopback, which is not counted: the
// interfaces see nothing of it, and the own bytes all of it.
func TestOwnTCPOnLoopback(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	const n = 1 << 20
	done := make(chan struct{})
	go func() {
		defer close(done)
		c, err := l.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		buf := make([]byte, 64<<10)
		for got := 0; got < n; {
			m, err := c.Read(buf)
			if err != nil {
				return
			}
			got += m
		}
	}()
	before := Read()
	if !before.OK {
		t.Fatal("/proc/net/dev or /proc/self/io unreadable")
	}
	c, err := net.Dial("tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(make([]byte, n)); err != nil {
		t.Fatal(err)
	}
	c.Close()
	<-done
	u := Read().Since(before, HeadersIPv4)
	if u.OwnBytes < 2*n { // written by the client, read by the server: the same process
		t.Errorf("own bytes %d after writing and reading %d bytes on loopback, want at least %d", u.OwnBytes, n, 2*n)
	}
}
