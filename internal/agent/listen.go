package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// listenAll listens on addr, or, given IPs, on each of them at addr's port (a dual-stack pod's
// IPv4 and IPv6 address): one listener that accepts from all. The first IP (the pod's primary)
// must bind; another that cannot (its address not usable yet) is left out and said in the
// note. With port 0 the first picks a free port and the others take the same, picked again
// (a few times) where it is taken on another address.
func listenAll(addr string, ips []string) (ln net.Listener, note string, err error) {
	ips = slices.DeleteFunc(slices.Clone(ips), func(s string) bool { return s == "" })
	if len(ips) == 0 {
		ln, err = net.Listen("tcp", addr)
		return ln, "", err
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, "", fmt.Errorf("--listen %s: %w", addr, err)
	}
	for _, s := range ips {
		if _, err := netip.ParseAddr(s); err != nil {
			return nil, "", fmt.Errorf("--ip %q: not an IP address", s)
		}
	}
	for try := 0; ; try++ {
		m, note, err := listenOnce(port, ips)
		if err != nil && port == "0" && try < 5 && errors.Is(err, syscall.EADDRINUSE) {
			continue
		}
		return m, note, err
	}
}

// listenOnce binds every IP at port (the first's when 0). The others may be bound before the
// pod can use them (freebind: a new pod's IPv6 address is tentative for a moment); the first,
// the pod's primary, must be its own now.
func listenOnce(port string, ips []string) (*multiListener, string, error) {
	m := &multiListener{conns: make(chan acceptResult), closed: make(chan struct{})}
	var skipped []string
	picked := port == "0"
	for i, s := range ips {
		ip := netip.MustParseAddr(s).Unmap()
		lc := net.ListenConfig{}
		if i > 0 {
			lc.Control = freebind
		}
		ln, err := lc.Listen(context.Background(), "tcp", net.JoinHostPort(ip.String(), port))
		if err != nil && (i == 0 || (picked && errors.Is(err, syscall.EADDRINUSE))) { // picked again
			m.Close()
			return nil, "", err
		}
		if err != nil {
			skipped = append(skipped, fmt.Sprintf("not on %s: %v", ip, err))
			continue
		}
		if i == 0 {
			port = strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
		}
		m.lns = append(m.lns, ln)
	}
	for _, ln := range m.lns {
		m.wg.Add(1)
		go m.accept(ln)
	}
	return m, strings.Join(skipped, "; "), nil
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
