// Command outside is the lab's host beyond the cluster: hack/lab/lib/outside.sh runs it in the
// network namespace nblab-out (198.51.100.10 and 2001:db8:5100::10), which pods reach through
// the lab's router, SNATed to their node's address, as a destination outside the cluster.
//
//	outside -cert outside.crt -key outside.key [-https :443] [-http :80] [-echo :7] [-grpc :50051] [-grpcs :50443]
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
// a TCP echo: what a connection sends comes back, at most 64 connections at once (more are
// closed at once), each closed after 60 s without a byte; and gRPC, plain and over TLS (the same
// certificate), serving the standard health service alone (grpc.health.v1.Health: SERVING).
// Every server is bounded in connections, header size and time. An empty address turns that
// server off.
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

	"google.golang.org/grpc"
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
	grpcAddr := flag.String("grpc", ":50051", "plain gRPC address (health service)")
	grpcsAddr := flag.String("grpcs", ":50443", "gRPC over TLS address (health service)")
	certFile := flag.String("cert", "", "the HTTPS certificate (PEM)")
	keyFile := flag.String("key", "", "its key (PEM)")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	addrs := addrs{https: *httpsAddr, http: *httpAddr, echo: *echoAddr, grpc: *grpcAddr, grpcs: *grpcsAddr}
	if err := run(ctx, addrs, *certFile, *keyFile); err != nil {
		fmt.Fprintln(os.Stderr, "outside:", err)
		os.Exit(1)
	}
}

// addrs are the servers' addresses ("" turns one off).
type addrs struct{ https, http, echo, grpc, grpcs string }

// run listens on every address given, serves until ctx ends or a server fails, then shuts
// the servers down.
func run(ctx context.Context, a addrs, certFile, keyFile string) error {
	var cert *tls.Certificate
	if a.https != "" || a.grpcs != "" {
		c, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return fmt.Errorf("https, grpcs: %w", err)
		}
		cert = &c
	}
	errs := make(chan error, 5)
	var stops []func(context.Context)
	defer func() {
		sctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		for _, stop := range stops {
			stop(sctx)
		}
	}()
	for _, srv := range []struct {
		name, addr string
		serve      func(net.Listener) (stop func(context.Context))
	}{
		{"HTTPS", a.https, func(ln net.Listener) func(context.Context) { return startHTTP(newHTTPSServer(*cert), ln, true, errs) }},
		{"HTTP", a.http, func(ln net.Listener) func(context.Context) { return startHTTP(newHTTPServer(), ln, false, errs) }},
		{"TCP echo", a.echo, func(ln net.Listener) func(context.Context) {
			go func() { errs <- serveEcho(ln, maxEchoConns, echoIdle) }()
			return func(context.Context) { ln.Close() }
		}},
		{"gRPC", a.grpc, func(ln net.Listener) func(context.Context) { return startGRPC(newGRPCServer(nil), ln, errs) }},
		{"gRPC over TLS", a.grpcs, func(ln net.Listener) func(context.Context) { return startGRPC(newGRPCServer(cert), ln, errs) }},
	} {
		if srv.addr == "" {
			continue
		}
		ln, err := net.Listen("tcp", srv.addr)
		if err != nil {
			return err
		}
		stops = append(stops, srv.serve(ln))
		fmt.Printf("outside: %s on %s\n", srv.name, ln.Addr())
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-errs:
		return err
	}
}

// startHTTP serves s on ln (bounded in connections) until it is shut down.
func startHTTP(s *http.Server, ln net.Listener, tlsOn bool, errs chan<- error) func(context.Context) {
	go func() { errs <- serveHTTP(s, limitListener(ln, maxHTTPConns), tlsOn) }()
	return func(ctx context.Context) { _ = s.Shutdown(ctx) }
}

// startGRPC serves s on ln until it is stopped: gracefully within the grace, then at once.
func startGRPC(s *grpc.Server, ln net.Listener, errs chan<- error) func(context.Context) {
	go func() { errs <- serveGRPC(s, ln) }()
	return func(ctx context.Context) {
		done := make(chan struct{})
		go func() { s.GracefulStop(); close(done) }()
		select {
		case <-done:
		case <-ctx.Done():
			s.Stop()
		}
	}
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
