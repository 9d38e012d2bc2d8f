// Command outside is the lab's host beyond the cluster: hack/lab/lib/outside.sh runs it in the
// network namespace nblab-out (198.51.100.10 and 2001:db8:5100::10), which pods reach through
// the lab's router, SNATed to their node's address, as a destination outside the cluster.
// Standard library only.
//
//	outside -cert outside.crt -key outside.key [-https :443] [-http :80] [-echo :7]
//
// HTTPS (HTTP/1.1 and HTTP/2, the certificate given: the lab's is for outside.lab) and plain
// HTTP/1.1 serve the same paths:
//
//	GET /           200 "ok\n"
//	GET /ip         200 text/plain: the client's address as this server saw it, no port, "\n"
//	GET /status/N   status N (100 < N < 600; a 1xx goes out as net/http sends one: an interim
//	                response, then 200; 101, which would leave the client waiting, is 400)
//	GET /delay/MS   200 "ok\n" after MS milliseconds (at most 10000)
//	GET /bytes/N    N zero bytes (at most 100 MiB)
//
// and a TCP echo: what a connection sends comes back, at most 64 connections at once (more
// are closed at once), each closed after 60 s without a byte. Every server is bounded in
// connections, header size and time. An empty address turns that server off.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

const (
	maxHTTPConns  = 512              // per listener, HTTP and HTTPS each
	maxH2Streams  = 100              // per HTTP/2 connection
	maxEchoConns  = 64               // echo connections at once
	echoIdle      = 60 * time.Second // an echo connection's longest silence
	shutdownGrace = 2 * time.Second
)

func main() {
	httpsAddr := flag.String("https", ":443", "HTTPS address (HTTP/1.1 and HTTP/2)")
	httpAddr := flag.String("http", ":80", "plain HTTP address")
	echoAddr := flag.String("echo", ":7", "TCP echo address")
	certFile := flag.String("cert", "", "the HTTPS certificate (PEM)")
	keyFile := flag.String("key", "", "its key (PEM)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := run(ctx, *httpsAddr, *httpAddr, *echoAddr, *certFile, *keyFile); err != nil {
		fmt.Fprintln(os.Stderr, "outside:", err)
		os.Exit(1)
	}
}

// run listens on every address given, serves until ctx ends or a server fails, then shuts
// the servers down.
func run(ctx context.Context, httpsAddr, httpAddr, echoAddr, certFile, keyFile string) error {
	var servers []*http.Server
	errs := make(chan error, 3)
	if httpsAddr != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return fmt.Errorf("https: %w", err)
		}
		ln, err := net.Listen("tcp", httpsAddr)
		if err != nil {
			return err
		}
		s := newHTTPSServer(cert)
		servers = append(servers, s)
		go func() { errs <- serveHTTP(s, limitListener(ln, maxHTTPConns), true) }()
		fmt.Printf("outside: HTTPS on %s\n", ln.Addr())
	}
	if httpAddr != "" {
		ln, err := net.Listen("tcp", httpAddr)
		if err != nil {
			return err
		}
		s := newHTTPServer()
		servers = append(servers, s)
		go func() { errs <- serveHTTP(s, limitListener(ln, maxHTTPConns), false) }()
		fmt.Printf("outside: HTTP on %s\n", ln.Addr())
	}
	if echoAddr != "" {
		ln, err := net.Listen("tcp", echoAddr)
		if err != nil {
			return err
		}
		defer ln.Close()
		go func() { errs <- serveEcho(ln, maxEchoConns, echoIdle) }()
		fmt.Printf("outside: TCP echo on %s\n", ln.Addr())
	}
	var err error
	select {
	case <-ctx.Done():
	case err = <-errs:
	}
	sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
	defer cancel()
	for _, s := range servers {
		_ = s.Shutdown(sctx)
	}
	return err
}

// serveHTTP serves s on ln (over TLS with s's certificate when tlsOn) until s shuts down.
func serveHTTP(s *http.Server, ln net.Listener, tlsOn bool) error {
	var err error
	if tlsOn {
		err = s.ServeTLS(ln, "", "")
	} else {
		err = s.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// newHTTPServer is the plain HTTP/1.1 server, with every timeout and limit set.
func newHTTPServer() *http.Server {
	s := &http.Server{
		Handler:           newMux(),
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		// 100 MiB from /bytes must fit, even through a slow bottleneck (50 Mbit/s: ~17 s).
		WriteTimeout:   2 * time.Minute,
		IdleTimeout:    60 * time.Second,
		MaxHeaderBytes: 16 << 10,
		HTTP2:          &http.HTTP2Config{MaxConcurrentStreams: maxH2Streams},
	}
	s.Protocols = new(http.Protocols)
	s.Protocols.SetHTTP1(true)
	return s
}

// newHTTPSServer is newHTTPServer over TLS with cert, offering HTTP/2 and HTTP/1.1 (ALPN).
func newHTTPSServer(cert tls.Certificate) *http.Server {
	s := newHTTPServer()
	s.Protocols.SetHTTP2(true)
	s.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	return s
}
