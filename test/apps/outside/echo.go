package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"
)

// serveEcho echoes every connection ln accepts, at most limit at once: one more is closed at
// once (its client reads EOF instead of waiting in the backlog). A connection silent for idle
// is closed. It returns nil once ln is closed.
func serveEcho(ln net.Listener, limit int, idle time.Duration) error {
	slots := make(chan struct{}, limit)
	for {
		c, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil { // out of file descriptors, for one: wait, as net/http does
			fmt.Fprintln(os.Stderr, "outside: echo:", err)
			time.Sleep(100 * time.Millisecond)
			continue
		}
		select {
		case slots <- struct{}{}:
			go func() {
				defer func() { <-slots }()
				echo(c, idle)
			}()
		default:
			c.Close()
		}
	}
}

// echo writes back what c sends until c closes, fails or is silent for idle.
func echo(c net.Conn, idle time.Duration) {
	defer c.Close()
	buf := make([]byte, 32<<10)
	for {
		if err := c.SetDeadline(time.Now().Add(idle)); err != nil {
			return
		}
		n, err := c.Read(buf)
		if n > 0 {
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// limitListener accepts at most limit connections at once from ln: Accept waits for one to
// close first (as golang.org/x/net/netutil.LimitListener, which this module does not need).
func limitListener(ln net.Listener, limit int) net.Listener {
	return &limited{Listener: ln, slots: make(chan struct{}, limit), done: make(chan struct{})}
}

type limited struct {
	net.Listener
	slots     chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

func (l *limited) Accept() (net.Conn, error) {
	select {
	case l.slots <- struct{}{}:
	case <-l.done:
		return nil, net.ErrClosed
	}
	c, err := l.Listener.Accept()
	if err != nil {
		<-l.slots
		return nil, err
	}
	return &limitedConn{Conn: c, release: func() { <-l.slots }}, nil
}

func (l *limited) Close() error {
	err := l.Listener.Close()
	l.closeOnce.Do(func() { close(l.done) })
	return err
}

type limitedConn struct {
	net.Conn
	once    sync.Once
	release func()
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(c.release)
	return err
}
