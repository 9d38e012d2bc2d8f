//go:build netbench_faults

package probes

import (
	"context"
	"io"
	"net"
	"net/url"
	"sync"
)

// extraRoundTrip is the fault http-extra-rtt (internal/fault): rawURL's host is replaced by a
// forwarder on loopback that, for each connection the probe opens, connects to the real host
// twice, closing the first connection at once, and then relays. Every new connection's request
// then costs one round trip more than it should. stop ends the forwarder.
func extraRoundTrip(ctx context.Context, rawURL string) (string, func(), error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	target := u.Host
	var wg sync.WaitGroup
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				relayTwiceDialed(ctx, c, target)
			}()
		}
	}()
	u.Host = ln.Addr().String()
	return u.String(), func() { ln.Close(); wg.Wait() }, nil
}

func relayTwiceDialed(ctx context.Context, c net.Conn, target string) {
	defer c.Close()
	var d net.Dialer
	first, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return
	}
	first.Close()
	up, err := d.DialContext(ctx, "tcp", target)
	if err != nil {
		return
	}
	defer up.Close()
	go func() { _, _ = io.Copy(up, c); up.(*net.TCPConn).CloseWrite() }()
	_, _ = io.Copy(c, up)
}
