//go:build linux

package probes

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"os"
	"runtime"
	"testing"
	"time"
)

// tcpPair is a connected pair of TCP connections on loopback.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

// A detached socket reads what comes, times out after its timeout, is woken at once by
// interrupt, and its connection's own descriptor is closed (out of the poller).
func TestDetachedSocketWaitsAndWakes(t *testing.T) {
	client, server := tcpPair(t)
	bs, err := detach(client, 200*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer bs.close()
	if _, err := client.Write([]byte("x")); err == nil {
		t.Error("the connection's own descriptor still writes after detach")
	}
	go func() { time.Sleep(20 * time.Millisecond); server.Write([]byte("ping")) }()
	buf := make([]byte, 4)
	if _, err := io.ReadFull(bs, buf); err != nil || string(buf) != "ping" {
		t.Fatalf("read %q, %v; want ping", buf, err)
	}
	start := time.Now()
	if _, err := bs.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("a read of nothing: %v, want a deadline error", err)
	}
	if took := time.Since(start); took < 150*time.Millisecond || took > time.Second {
		t.Errorf("a read of nothing ended after %s, want about its 200ms timeout", took)
	}
	if _, err := bs.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	time.AfterFunc(30*time.Millisecond, bs.interrupt)
	start = time.Now()
	if _, err := bs.Read(buf); err == nil {
		t.Error("a read interrupted returned no error")
	}
	if took := time.Since(start); took > 150*time.Millisecond {
		t.Errorf("interrupt woke the read after %s, want at once (its timeout: 200ms)", took)
	}
}

// A peer that trickles bytes does not hold a read past the socket's deadline, though each
// read(2) returns within the timeout.
func TestDetachedSocketDeadlineAgainstTrickling(t *testing.T) {
	client, server := tcpPair(t)
	bs, err := detach(server, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer bs.close()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				client.Write([]byte("x"))
			}
		}
	}()
	bs.deadline = time.Now().Add(150 * time.Millisecond)
	start := time.Now()
	_, err = io.ReadFull(bs, make([]byte, 1000))
	if !errors.Is(err, os.ErrDeadlineExceeded) || time.Since(start) > 500*time.Millisecond {
		t.Errorf("a trickled request: %v after %s, want a deadline error soon after 150ms", err, time.Since(start))
	}
}

// No more sockets wait in blocking reads than the runtime has processors; a closed one frees
// its place.
func TestDetachHoldsToTheProcessors(t *testing.T) {
	waitForNoWaiters(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	a, _ := tcpPair(t)
	b, _ := tcpPair(t)
	first, err := detach(a, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := detach(b, time.Second); !errors.Is(err, errWaitersAtLimit) {
		t.Fatalf("a second socket detached with GOMAXPROCS=1: %v", err)
	}
	if _, err := b.Write([]byte("x")); err != nil {
		t.Errorf("the refused connection was changed: %v", err)
	}
	first.close()
	second, err := detach(b, time.Second)
	if err != nil {
		t.Fatalf("after the first closed: %v", err)
	}
	second.close()
}

// waitForNoWaiters waits until earlier tests' servers closed their detached sockets.
func waitForNoWaiters(t *testing.T) {
	t.Helper()
	for end := time.Now().Add(3 * time.Second); blockingWaiters.Load() != 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatalf("%d sockets still detached", blockingWaiters.Load())
		}
	}
}

// rateClient opens a rate connection to ServeRate by hand: its first request goes with the hello.
func rateClient(t *testing.T, addr string, req, resp int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	hello, err := rateHello("tok", req, resp)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(append(hello, make([]byte, req)...)); err != nil {
		t.Fatal(err)
	}
	readAnswers(t, c, 1+resp)
	return c
}

func readAnswers(t *testing.T, c net.Conn, n int) {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := io.ReadFull(c, make([]byte, n)); err != nil {
		t.Fatal(err)
	}
}

// The server answers a connection it serves alone from a blocking read from its third request
// on, what the client sent ahead included, and ends it at once when its context ends; beside
// another rate connection, it stays in the poller.
func TestServeRateDetachesAConnectionServedAlone(t *testing.T) {
	waitForNoWaiters(t)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	served := make(chan error, 4)
	addr := magicServer(t, RateMagic, "tok", func(c net.Conn, r *bufio.Reader, admit func(string) error) error {
		err := ServeRate(ctx, c, r, admit)
		served <- err
		return err
	})
	const req, resp = 10, 20
	a := rateClient(t, addr, req, resp)
	// The second and third requests in one segment: the third is read ahead before the switch.
	if _, err := a.Write(make([]byte, 2*req)); err != nil {
		t.Fatal(err)
	}
	readAnswers(t, a, 2*resp)
	if n := blockingWaiters.Load(); n != 1 {
		t.Fatalf("%d sockets detached after a lone connection's third answer, want 1", n)
	}
	a.Write(make([]byte, req))
	readAnswers(t, a, resp)

	b := rateClient(t, addr, req, resp) // served beside a: in the poller
	for range 3 {
		b.Write(make([]byte, req))
		readAnswers(t, b, resp)
	}
	if n := blockingWaiters.Load(); n != 1 {
		t.Errorf("%d sockets detached with a second connection served, want still 1", n)
	}
	start := time.Now()
	cancel()
	for range 2 {
		select {
		case err := <-served:
			if err != nil && !errors.Is(err, errInterrupted) && !errors.Is(err, net.ErrClosed) && !errors.Is(err, os.ErrDeadlineExceeded) {
				t.Errorf("served: %v", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("a connection was still served 2 s after its context ended (rateIdle: 10 s)")
		}
	}
	if took := time.Since(start); took > 500*time.Millisecond {
		t.Errorf("the connections ended %s after their context, want at once", took)
	}
	waitForNoWaiters(t)
}
