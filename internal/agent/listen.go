package agent

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"sync"
)

// listenAll listens on addr, or, given IPs, on each of them at addr's port (a dual-stack pod's
// IPv4 and IPv6 address): one listener that accepts from all. With port 0 the first picks a
// free port and the others take the same.
func listenAll(addr string, ips []string) (net.Listener, error) {
	ips = slices.DeleteFunc(slices.Clone(ips), func(s string) bool { return s == "" })
	if len(ips) == 0 {
		return net.Listen("tcp", addr)
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("--listen %s: %w", addr, err)
	}
	m := &multiListener{conns: make(chan acceptResult), closed: make(chan struct{})}
	for _, s := range ips {
		ip, err := netip.ParseAddr(s)
		if err != nil {
			m.Close()
			return nil, fmt.Errorf("--ip %q: not an IP address", s)
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(ip.Unmap().String(), port))
		if err != nil {
			m.Close()
			return nil, err
		}
		port = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		m.lns = append(m.lns, ln)
	}
	for _, ln := range m.lns {
		m.wg.Add(1)
		go m.accept(ln)
	}
	return m, nil
}

type acceptResult struct {
	c   net.Conn
	err error
}

// multiListener merges several listeners; Addr is the first one's.
type multiListener struct {
	lns    []net.Listener
	conns  chan acceptResult
	closed chan struct{}
	once   sync.Once
	wg     sync.WaitGroup
}

func (m *multiListener) accept(ln net.Listener) {
	defer m.wg.Done()
	for {
		c, err := ln.Accept()
		var ne net.Error
		if err != nil && errors.As(err, &ne) && ne.Timeout() {
			continue
		}
		select {
		case m.conns <- acceptResult{c, err}:
		case <-m.closed:
			if c != nil {
				c.Close()
			}
			return
		}
		if err != nil {
			return
		}
	}
}

func (m *multiListener) Accept() (net.Conn, error) {
	select {
	case r := <-m.conns:
		return r.c, r.err
	case <-m.closed:
		return nil, net.ErrClosed
	}
}

func (m *multiListener) Close() error {
	m.once.Do(func() {
		close(m.closed)
		for _, ln := range m.lns {
			ln.Close()
		}
	})
	return nil
}

func (m *multiListener) Addr() net.Addr { return m.lns[0].Addr() }
