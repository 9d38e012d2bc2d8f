package egress

import (
	"context"
	"crypto/x509"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// tlsServer is an HTTPS server on loopback (HTTP/2 offered) whose answers take delay; it
// counts the connections it accepted.
func tlsServer(t *testing.T, delay time.Duration, status int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var conns atomic.Int64
	s := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		time.Sleep(delay)
		w.WriteHeader(status)
		_, _ = w.Write([]byte("ok"))
	}))
	s.EnableHTTP2 = true
	s.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	s.StartTLS()
	t.Cleanup(s.Close)
	return s, &conns
}

func roots(s *httptest.Server) *x509.CertPool {
	p := x509.NewCertPool()
	p.AddCert(s.Certificate())
	return p
}

// resolverFor is a resolver that asks only a DNS server on loopback, which answers A queries
// for name with 127.0.0.1 and NXDOMAIN for any other name; it counts the queries.
func resolverFor(t *testing.T, name string) (*net.Resolver, *atomic.Int64) {
	t.Helper()
	var queries atomic.Int64
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dns.Server{PacketConn: pc, Handler: dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		queries.Add(1)
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = true // an empty AAAA answer is then "no such record", not a lame referral
		q := r.Question[0]
		switch {
		case !strings.EqualFold(q.Name, dns.Fqdn(name)):
			m.Rcode = dns.RcodeNameError
		case q.Qtype == dns.TypeA:
			rr, _ := dns.NewRR(q.Name + " 5 IN A 127.0.0.1")
			m.Answer = append(m.Answer, rr)
		}
		_ = w.WriteMsg(m)
	})}
	go func() { _ = s.ActivateAndServe() }()
	t.Cleanup(func() { _ = s.Shutdown() })
	addr := pc.LocalAddr().String()
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "udp", addr)
	}}, &queries
}

// HTTPS to an address: every phase of each new connection, then the first byte on one reused
// connection; the server saw one connection per new sample and one for all the reused ones,
// and a request's first byte waits for the server's 20 ms.
func TestMeasureHTTPS(t *testing.T) {
	s, conns := tlsServer(t, 20*time.Millisecond, http.StatusOK)
	r, err := Measure(context.Background(), Spec{Target: s.URL + "/x", Count: 5, Interval: time.Millisecond, RootCAs: roots(s)})
	if err != nil {
		t.Fatal(err)
	}
	if n := conns.Load(); n != 6 {
		t.Errorf("the server accepted %d connections, want 5 new and 1 reused", n)
	}
	if r.Scheme != "https" || r.NewConnections != 5 || r.Connect.Count != 5 || r.DNS != nil || r.Status != 200 || r.RemoteAddress != s.Listener.Addr().String() {
		t.Errorf("result %+v", r)
	}
	if r.TLS == nil || r.TLS.Latency.Count != 5 || !r.TLS.Verified || r.TLS.Version != "TLS 1.3" || len(r.TLS.Chain) == 0 {
		t.Fatalf("TLS %+v", r.TLS)
	}
	if r.FirstByteNew == nil || r.FirstByteNew.Count != 5 || r.FirstByteReused == nil || r.FirstByteReused.Count != 5 {
		t.Fatalf("first bytes: new %+v, reused %+v", r.FirstByteNew, r.FirstByteReused)
	}
	if r.FirstByteReused.MinMicros < 20000 || r.FirstByteNew.MinMicros < 20000+r.TLS.Latency.MinMicros {
		t.Errorf("first byte before the server's 20 ms: new %+v, reused %+v", r.FirstByteNew, r.FirstByteReused)
	}
	if r.Protocol != "HTTP/2.0" {
		t.Errorf("protocol %q, want HTTP/2.0 (offered by the server, asked for by the client)", r.Protocol)
	}
}

// A name is looked up before every new connection through the given resolver (A and AAAA),
// and its answer kept.
func TestMeasureTCPLooksUpEachTime(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	res, queries := resolverFor(t, "db.outside.test")
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	// The name ends in a dot: no search domain of this machine's resolv.conf is tried.
	r, err := Measure(context.Background(), Spec{Target: "tcp://db.outside.test.:" + port, Count: 4, Interval: time.Millisecond, Resolver: res})
	if err != nil {
		t.Fatal(err)
	}
	if r.DNS == nil || r.DNS.Count != 4 || r.Connect.Count != 4 || len(r.Addresses) != 1 || r.Addresses[0] != "127.0.0.1" || r.FirstByteNew != nil || r.TLS != nil {
		t.Errorf("result %+v (dns %+v)", r, r.DNS)
	}
	if n := queries.Load(); n != 8 {
		t.Errorf("%d queries, want an A and an AAAA per connection (8)", n)
	}
}

// Each way a destination fails is named, wrapped for errors.Is.
func TestMeasureFailures(t *testing.T) {
	ok, _ := tlsServer(t, 0, http.StatusOK)
	broken, _ := tlsServer(t, 0, http.StatusServiceUnavailable)
	res, _ := resolverFor(t, "outside.test")
	_, okPort, _ := net.SplitHostPort(ok.Listener.Addr().String())
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0") // accepts (the kernel does), never answers
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	for _, tc := range []struct {
		name, target string
		roots        bool
		want         error
		says         string
	}{
		{"unknown authority", ok.URL, false, ErrTLS, "authority the client does not trust"},
		{"wrong name", "https://outside.test.:" + okPort + "/", true, ErrTLS, "not for that name"},
		{"server error", broken.URL, true, ErrHTTPStatus, "503 Service Unavailable"},
		{"NXDOMAIN", "https://missing.test.:" + okPort + "/", true, ErrNotFound, "missing.test. does not resolve"},
		{"connection refused", "tcp://" + closedAddr, false, ErrUnreachable, "connection refused"},
		{"bad scheme", "ftp://outside.test/", false, ErrTarget, `scheme "ftp"`},
		{"tcp without port", "tcp://outside.test", false, ErrTarget, "tcp://HOST:PORT"},
		{"credentials", "https://u:secret@outside.test/", false, ErrTarget, "credentials"},
		{"no answer", "https://" + silent.Addr().String() + "/", true, ErrUnreachable, "no answer within 300ms"},
		{"no host", "https:///x", false, ErrTarget, "want tcp://"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := Spec{Target: tc.target, Count: 2, Interval: time.Millisecond, Timeout: 300 * time.Millisecond, Resolver: res}
			if tc.roots {
				spec.RootCAs = roots(ok)
			} else {
				spec.RootCAs = x509.NewCertPool()
			}
			_, err := Measure(context.Background(), spec)
			if !errors.Is(err, tc.want) || err == nil || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("%s: %v, want %v saying %q", tc.target, err, tc.want, tc.says)
			}
			if err != nil && (strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "secret")) {
				t.Errorf("more than one line, or the password shown: %q", err)
			}
		})
	}
}

// An interrupt ends the samples at once, as the context's error.
func TestMeasureEndsWithItsContext(t *testing.T) {
	s, _ := tlsServer(t, 0, http.StatusOK)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := Measure(ctx, Spec{Target: s.URL, Count: 100, Interval: 100 * time.Millisecond, RootCAs: roots(s)})
	if !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Errorf("%v after %s, want context.Canceled at once", err, time.Since(start))
	}
}

// Plain HTTP to a server that closes every connection: the new connections are measured, the
// reused figure is absent and the report says why.
func TestMeasureHTTPServerThatClosesEachConnection(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Connection", "close")
		_, _ = w.Write([]byte("bye"))
	}))
	defer s.Close()
	r, err := Measure(context.Background(), Spec{Target: s.URL, Count: 3, Interval: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Scheme != "http" || r.Port == "" || r.NewConnections != 3 || r.TLS != nil || r.FirstByteNew == nil || r.FirstByteNew.Count != 3 || r.FirstByteReused != nil ||
		!strings.Contains(r.NotReused, "did not keep the connection open") {
		t.Errorf("result %+v", r)
	}
}

// The report shows the destination without its query or fragment, which may carry a secret.
func TestMeasureLeavesTheQueryOut(t *testing.T) {
	s := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	defer s.Close()
	r, err := Measure(context.Background(), Spec{Target: s.URL + "/api?token=secret#x", Count: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Target != s.URL+"/api" {
		t.Errorf("target %q, want %q", r.Target, s.URL+"/api")
	}
}
