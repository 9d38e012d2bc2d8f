//go:build linux

package probes

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// blockingSocket is a connected socket outside Go's network poller, in blocking mode: its one
// user waits for each answer in one read(2), asleep in the kernel until the answer wakes it, as
// sockperf and netperf wait. Through the poller the same wait is a read that fails (EAGAIN), the
// goroutine's park, the poller's epoll_wait and the goroutine's wake-up on whichever thread
// picks it up: a transaction of tcp-rr or udp-rr is a few of those µs, so they showed in its
// rate. Each read and write waits at most the timeout it was made with; interrupt wakes a
// waiting read or write from another goroutine (shutdown(2)), and close waits for nothing.
type blockingSocket struct {
	mu          sync.Mutex
	fd          int           // -1 once closed
	datagrams   bool          // UDP: a read of 0 bytes is an empty datagram, not the peer's close
	readTimeout time.Duration // SO_RCVTIMEO's
	// deadline, when set, fails the first read or write that returns after it: each read(2)
	// waits at most the timeout, and a peer trickling bytes would renew it forever (so a read
	// may end up to one timeout past the deadline).
	deadline    time.Time
	interrupted atomic.Bool
}

// errInterrupted is a read's or write's error after interrupt.
var errInterrupted = errors.New("interrupted")

// Why detach leaves a connection in Go's network poller.
var (
	errNoSocket       = errors.New("not a socket")
	errWaitersAtLimit = errors.New("as many sockets wait in blocking reads as the runtime has processors")
)

// blockingWaiters counts the sockets detached at the moment: at most GOMAXPROCS (the agent's
// default: 1). The thread waiting on each holds one of the runtime's processors until the
// runtime's monitor hands it to goroutines that need it (after 20 µs to 10 ms), and threads
// that wake to too few processors queue for them: more waiters than processors would cost
// more than the poller saves. However many connections a peer opens, the threads stay few.
var blockingWaiters atomic.Int64

// SocketCloser is a connection that can close its descriptor apart from the rest of it (an
// agent's gated connection keeps its slot among the token holders' until Close).
type SocketCloser interface{ CloseSocket() error }

// detach moves c's socket out of Go's network poller: a duplicate of its descriptor in
// blocking mode, each read and write bounded by timeout, and c's own descriptor closed (left
// in the poller, every datagram or segment would wake the poller's thread for nothing) — with
// CloseSocket when c has it, Close otherwise. Nothing is changed when it fails.
func detach(c net.Conn, timeout time.Duration) (*blockingSocket, error) {
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil, errNoSocket
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoSocket, err)
	}
	if blockingWaiters.Add(1) > int64(runtime.GOMAXPROCS(0)) {
		blockingWaiters.Add(-1)
		return nil, errWaitersAtLimit
	}
	fd, err := dupBlocking(raw, timeout)
	if err != nil {
		blockingWaiters.Add(-1)
		return nil, err
	}
	if s, ok := c.(SocketCloser); ok {
		_ = s.CloseSocket()
	} else {
		_ = c.Close()
	}
	_, udp := c.(*net.UDPConn)
	return &blockingSocket{fd: fd, datagrams: udp, readTimeout: timeout}, nil
}

// dupBlocking is a duplicate of raw's descriptor in blocking mode (the mode is the socket's:
// raw's descriptor is not to be read or written after), each read and write bounded by timeout.
func dupBlocking(raw syscall.RawConn, timeout time.Duration) (int, error) {
	fd, derr := -1, error(nil)
	if err := raw.Control(func(f uintptr) { fd, derr = unix.FcntlInt(f, unix.F_DUPFD_CLOEXEC, 0) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	tv := unix.NsecToTimeval(timeout.Nanoseconds())
	if err := errors.Join(unix.SetNonblock(fd, false),
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv),
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_SNDTIMEO, &tv)); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// readBy bounds the next reads' wait to deadline (a datagram socket's: a stale answer came
// first); a millisecond either way is left as it is, so a loop of equal deadlines costs nothing.
func (s *blockingSocket) readBy(deadline time.Time) error {
	d := time.Until(deadline)
	if d <= 0 {
		return os.ErrDeadlineExceeded
	}
	if (d - s.readTimeout).Abs() < time.Millisecond {
		return nil
	}
	tv := unix.NsecToTimeval(d.Nanoseconds())
	if err := unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		return err
	}
	s.readTimeout = d
	return nil
}

// Read is one read(2); a timeout is os.ErrDeadlineExceeded, the peer's close io.EOF.
func (s *blockingSocket) Read(b []byte) (int, error) {
	for {
		n, err := unix.Read(s.fd, b)
		switch {
		case s.interrupted.Load():
			return 0, errInterrupted
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return 0, os.ErrDeadlineExceeded
		case err != nil:
			return 0, err
		case n == 0 && len(b) > 0 && !s.datagrams:
			return 0, io.EOF
		case s.late():
			return n, os.ErrDeadlineExceeded
		}
		return n, nil
	}
}

// Write writes all of b, or fails.
func (s *blockingSocket) Write(b []byte) (int, error) {
	done := 0
	for done < len(b) {
		n, err := unix.Write(s.fd, b[done:])
		switch {
		case s.interrupted.Load():
			return done, errInterrupted
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return done, os.ErrDeadlineExceeded
		case err != nil:
			return done, err
		}
		done += n
		if s.late() {
			return done, os.ErrDeadlineExceeded
		}
	}
	return done, nil
}

func (s *blockingSocket) late() bool { return !s.deadline.IsZero() && time.Now().After(s.deadline) }

// interrupt wakes a read or write waiting on the socket, and fails every later one.
func (s *blockingSocket) interrupt() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.interrupted.Store(true)
	if s.fd >= 0 {
		_ = unix.Shutdown(s.fd, unix.SHUT_RDWR)
	}
}

// close closes the descriptor; nothing is to be waiting on it.
func (s *blockingSocket) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd >= 0 {
		unix.Close(s.fd)
		s.fd = -1
		blockingWaiters.Add(-1)
	}
}
