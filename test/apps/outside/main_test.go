package main

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"io"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestPaths(t *testing.T) {
	srv := httptest.NewServer(newMux())
	defer srv.Close()
	for _, c := range []struct {
		method, path string
		code         int
		body         string
	}{
		{"GET", "/", 200, "ok\n"},
		{"HEAD", "/", 200, ""},
		{"GET", "/ip", 200, "127.0.0.1\n"},
		{"GET", "/status/418", 418, ""},
		{"GET", "/status/204", 204, ""},
		{"GET", "/status/599", 599, ""},
		{"GET", "/status/600", 400, "want /status/N with 100 < N < 600\n"},
		{"GET", "/status/100", 400, "want /status/N with 100 < N < 600\n"},
		{"GET", "/status/101", 400, "101 switches protocols: not served\n"},
		{"GET", "/status/x", 400, "want /status/N with 100 < N < 600\n"},
		{"GET", "/delay/0", 200, "ok\n"},
		{"GET", "/delay/10001", 400, "want /delay/MS with MS at most 10000\n"},
		{"GET", "/delay/-1", 400, "want /delay/MS with MS at most 10000\n"},
		{"GET", "/bytes/0", 200, ""},
		{"GET", "/bytes/5", 200, "\x00\x00\x00\x00\x00"},
		{"GET", "/bytes/104857601", 400, "want /bytes/N with N at most 104857600 (100 MiB)\n"},
		{"POST", "/", 405, "Method Not Allowed\n"},
		{"GET", "/nowhere", 404, "404 page not found\n"},
		{"GET", "/ip/more", 404, "404 page not found\n"},
	} {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", c.method, c.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.code || string(body) != c.body {
			t.Errorf("%s %s: %d %q, want %d %q", c.method, c.path, resp.StatusCode, body, c.code, c.body)
		}
	}
}

func TestIPIsPlainText(t *testing.T) {
	srv := httptest.NewServer(newMux())
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/ip")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Errorf("/ip Content-Type %q, want text/plain", ct)
	}
}

func TestDelayWaits(t *testing.T) {
	srv := httptest.NewServer(newMux())
	defer srv.Close()
	start := time.Now()
	resp, err := http.Get(srv.URL + "/delay/150")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if took := time.Since(start); resp.StatusCode != 200 || took < 150*time.Millisecond || took > 3*time.Second {
		t.Errorf("/delay/150: %d after %v, want 200 after 150 ms", resp.StatusCode, took)
	}
}

func TestBytesCountsZeros(t *testing.T) {
	srv := httptest.NewServer(newMux())
	defer srv.Close()
	const n = 3<<20 + 7 // several chunks and a partial one
	resp, err := http.Get(srv.URL + "/bytes/" + strconv.Itoa(n))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.ContentLength != n || len(body) != n || !bytes.Equal(body, make([]byte, n)) {
		t.Errorf("/bytes/%d: Content-Length %d, %d bytes (zeros: %v)", n, resp.ContentLength, len(body), bytes.Count(body, []byte{0}) == len(body))
	}
}

// TestHTTPSBothProtocols serves newHTTPSServer with a certificate for outside.lab from a CA of
// the test's own: HTTP/2 by ALPN, HTTP/1.1 for a client that offers only it.
func TestHTTPSBothProtocols(t *testing.T) {
	cert, pool := testCert(t, "outside.lab")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := newHTTPSServer(cert)
	go func() { _ = serveHTTP(s, limitListener(ln, maxHTTPConns), true) }()
	defer s.Close()
	for _, h2 := range []bool{true, false} {
		tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, ServerName: "outside.lab"}}
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetHTTP1(true)
		tr.Protocols.SetHTTP2(h2)
		resp, err := (&http.Client{Transport: tr}).Get("https://" + ln.Addr().String() + "/ip")
		if err != nil {
			t.Fatalf("h2 %v: %v", h2, err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := map[bool]int{true: 2, false: 1}[h2]
		if resp.ProtoMajor != want || string(body) != "127.0.0.1\n" {
			t.Errorf("h2 %v: %s %q, want HTTP/%d %q", h2, resp.Proto, body, want, "127.0.0.1\n")
		}
		tr.CloseIdleConnections()
	}
}

func TestEchoBounded(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- serveEcho(ln, 2, 300*time.Millisecond) }()
	dial := func() net.Conn {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	a, b := dial(), dial()
	defer a.Close()
	defer b.Close()
	for _, c := range []net.Conn{a, b} {
		if _, err := c.Write([]byte("hello")); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 5)
		_ = c.SetReadDeadline(time.Now().Add(2 * time.Second))
		if _, err := io.ReadFull(c, got); err != nil || string(got) != "hello" {
			t.Fatalf("echo: %q, %v", got, err)
		}
	}
	// A third connection while two are open is closed at once.
	third := dial()
	_ = third.SetReadDeadline(time.Now().Add(time.Second))
	if n, err := third.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("third connection: read %d, %v; want EOF", n, err)
	}
	third.Close()
	// A silent connection is closed after the idle time.
	start := time.Now()
	_ = a.SetReadDeadline(time.Now().Add(3 * time.Second))
	if _, err := a.Read(make([]byte, 1)); err != io.EOF || time.Since(start) > 2*time.Second {
		t.Errorf("idle connection: %v after %v, want EOF after 300 ms", err, time.Since(start))
	}
	ln.Close()
	if err := <-done; err != nil {
		t.Errorf("serveEcho after its listener closed: %v", err)
	}
}

func TestLimitListenerWaits(t *testing.T) {
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := limitListener(inner, 1)
	defer ln.Close()
	for range 2 {
		c, err := net.Dial("tcp", inner.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
	}
	first, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	select {
	case <-accepted:
		t.Fatal("a second connection accepted while the only slot was taken")
	case <-time.After(100 * time.Millisecond):
	}
	first.Close()
	select {
	case c := <-accepted:
		if c == nil {
			t.Fatal("no second connection")
		}
		c.Close()
	case <-time.After(2 * time.Second):
		t.Fatal("the second connection was not accepted once the first closed")
	}
}

// testCert is a certificate for name from a fresh CA, and a pool with that CA.
func testCert(t *testing.T, name string) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	caKey, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, _ := x509.ParseCertificate(caDER)
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: name},
		DNSNames: []string{name}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}
