// Package egress measures what a client can of a destination with no agent on its far side: a
// URL's DNS lookup, TCP connect, TLS handshake and time to the first byte (HTTP) or to the
// answer of a health check (gRPC) on new and reused connections, each phase timed by
// net/http/httptrace as curl's -w timings break a request down. Nothing here knows about
// Kubernetes.
package egress

import (
	"cmp"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// Bounds and defaults of a Spec.
const (
	DefaultCount    = 10
	MaxCount        = 1000
	DefaultInterval = 100 * time.Millisecond
	DefaultTimeout  = 5 * time.Second
	// maxBody is how much of an answer's body is read (and so how much one request may cost
	// the far side's bandwidth); a longer body ends its connection's reuse.
	maxBody = 1 << 20
)

// Why a destination could not be measured: each error wraps one of these.
var (
	ErrTarget      = errors.New("not a destination")
	ErrNotFound    = errors.New("name not found")
	ErrUnreachable = errors.New("unreachable")
	ErrTLS         = errors.New("TLS failed")
	ErrHTTPStatus  = errors.New("server error")
	ErrRoots       = errors.New("bad root certificates")
)

// Spec is one measurement of a destination.
type Spec struct {
	// Target is tcp://HOST:PORT, http://…, https://… (a URL's port defaults to its scheme's),
	// grpc://HOST:PORT, grpcs://HOST:PORT or icmp://HOST (Bare).
	Target string
	// Count is how many new connections are measured, and then how many requests on a reused
	// one (http, https).
	Count int
	// Interval is the pause between two samples; Timeout bounds each.
	Interval, Timeout time.Duration
	// RootCAs are the roots a server's chain must lead to (nil: the system's).
	RootCAs *x509.CertPool
	// Resolver looks names up (nil: Go's default, which reads /etc/resolv.conf).
	Resolver *net.Resolver
	// Download, when positive (http, https), is how long one more request on a new connection
	// may read its answer's body after its first byte, up to MaxDownload (download.go).
	Download time.Duration
}

// icmpTarget is an icmp destination's target: an address host without a zone (the echo would
// go out unscoped), an IPv4-mapped one as the IPv4 address it is.
func icmpTarget(raw string, u *url.URL, t target) (target, error) {
	if err := checkHost(raw, u, t.host); err != nil {
		return target{}, err
	}
	if strings.Contains(t.host, "%") {
		return target{}, fmt.Errorf("%w: %q: an address with a zone: give a routable one", ErrTarget, shown(raw, u))
	}
	if a, err := netip.ParseAddr(t.host); err == nil {
		a = a.Unmap()
		if a.IsLoopback() || a.IsUnspecified() || a.IsMulticast() || a.IsLinkLocalUnicast() {
			return target{}, fmt.Errorf("%w: %q: a loopback, unspecified, multicast or link-local address is no host outside the cluster", ErrTarget, shown(raw, u))
		}
		t.host = a.String()
	}
	return t, nil
}

// checkHost says what is wrong with a destination's host, if anything.
func checkHost(raw string, u *url.URL, host string) error {
	if host == "" || strings.ContainsAny(host, " /") {
		return fmt.Errorf("%w: %q: no host", ErrTarget, shown(raw, u))
	}
	return nil
}

// where is the target's host and port, or its host alone when it has no port (icmp).
func (t target) where() string {
	if t.port == "" {
		return t.host
	}
	return net.JoinHostPort(t.host, t.port)
}

// hostPortOnly are the schemes whose destination is HOST:PORT alone (gRPC has no default port).
var hostPortOnly = map[string]bool{"tcp": true, "grpc": true, "grpcs": true}

// target is a parsed Spec.Target.
type target struct {
	scheme, host, port string
	url                *url.URL // http and https
}

// Check says what is wrong with a destination, if anything (ErrTarget).
func Check(raw string) error {
	_, err := parse(raw)
	return err
}

// parse checks a destination and names what is wrong with it. Its messages and the reports
// show the destination without credentials, query or fragment (they may carry secrets).
func parse(raw string) (target, error) {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return target{}, fmt.Errorf("%w: %q: want tcp://HOST:PORT, http://HOST[:PORT]/PATH, https://HOST[:PORT]/PATH, grpc://HOST:PORT, grpcs://HOST:PORT or icmp://HOST", ErrTarget, shown(raw, u))
	}
	t := target{scheme: u.Scheme, host: u.Hostname(), port: u.Port()}
	switch {
	case u.User != nil:
		return target{}, fmt.Errorf("%w: %q: credentials in a destination would be sent on every request and shown in reports; leave them out", ErrTarget, shown(raw, u))
	case hostPortOnly[u.Scheme] && (t.port == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != ""):
		return target{}, fmt.Errorf("%w: %q: a %s destination is %s://HOST:PORT", ErrTarget, shown(raw, u), u.Scheme, u.Scheme)
	case u.Scheme == "icmp" && (t.port != "" || u.Path != "" || u.RawQuery != "" || u.Fragment != ""):
		return target{}, fmt.Errorf("%w: %q: an icmp destination is icmp://HOST, or an address alone", ErrTarget, shown(raw, u))
	case u.Scheme == "icmp":
		return icmpTarget(raw, u, t)
	case u.Scheme == "http" || u.Scheme == "https":
		if t.port == "" {
			t.port = map[string]string{"http": "80", "https": "443"}[u.Scheme]
		}
		t.url = u
	case !hostPortOnly[u.Scheme]:
		return target{}, fmt.Errorf("%w: %q: scheme %q, want tcp, http, https, grpc, grpcs or icmp", ErrTarget, shown(raw, u), u.Scheme)
	}
	if err := checkHost(raw, u, t.host); err != nil {
		return target{}, err
	}
	if p, err := strconv.Atoi(t.port); err != nil || p < 1 || p > 65535 {
		return target{}, fmt.Errorf("%w: %q: port %q, want 1-65535", ErrTarget, shown(raw, u), t.port)
	}
	return t, nil
}

// SchemeHost are a destination's scheme and host ("" when it does not parse).
func SchemeHost(raw string) (scheme, host string) {
	t, err := parse(raw)
	if err != nil {
		return "", ""
	}
	return t.scheme, t.host
}

// CheckDownload says what is wrong with downloading from a destination for d, if anything.
func CheckDownload(raw string, d time.Duration) error {
	if d == 0 {
		return nil
	}
	if scheme, _ := SchemeHost(raw); scheme != "http" && scheme != "https" {
		return downloadError("for an http:// or https:// destination (it reads an answer's body), not " + Shown(raw))
	}
	if d < time.Millisecond || d > MaxDownload {
		return downloadError(fmt.Sprintf("want from 1ms to %s", MaxDownload))
	}
	return nil
}

// downloadError is a download that cannot be made; it is an ErrTarget.
type downloadError string

func (e downloadError) Error() string      { return string(e) }
func (downloadError) Is(target error) bool { return target == ErrTarget }

// OverTLS says whether a destination is reached over TLS (https, grpcs).
func OverTLS(raw string) bool {
	scheme, _ := SchemeHost(raw)
	return scheme == "https" || scheme == "grpcs"
}

// Shown is a destination as messages and reports show it (see shown).
func Shown(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		u = nil
	}
	return shown(raw, u)
}

// shown is a destination as messages and reports show it: without credentials, query or
// fragment; a destination that does not parse, up to its first '@', '?' or '#'.
func shown(raw string, u *url.URL) string {
	if u == nil {
		// Whatever may be credentials (anything up to the last '@') is left out.
		if i := strings.LastIndex(raw, "@"); i >= 0 {
			scheme, _, _ := strings.Cut(raw, "://")
			return scheme + "://…" + shownTail(raw[i+1:])
		}
		return shownTail(raw)
	}
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	return c.String()
}

// shownTail is raw up to its first '?' or '#'.
func shownTail(raw string) string {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		return raw[:i] + "…"
	}
	return raw
}

func (s *Spec) defaults() error {
	if s.Count == 0 {
		s.Count = DefaultCount
	}
	if s.Count < 1 || s.Count > MaxCount {
		return fmt.Errorf("%d new connections: want 1-%d", s.Count, MaxCount)
	}
	if s.Interval == 0 {
		s.Interval = DefaultInterval
	}
	if s.Timeout == 0 {
		s.Timeout = DefaultTimeout
	}
	if s.Resolver == nil {
		s.Resolver = net.DefaultResolver
	}
	return CheckDownload(s.Target, s.Download)
}

// Measure runs spec: Count new connections (each with its own lookup), then, for http, https,
// grpc and grpcs, Count requests on one kept-alive connection. The first sample that fails ends it
// with the reason (ErrNotFound, ErrUnreachable, ErrTLS, ErrHTTPStatus).
func Measure(ctx context.Context, spec Spec) (*v1alpha1.EgressResult, error) {
	t, err := parse(spec.Target)
	if err != nil {
		return nil, err
	}
	if err := spec.defaults(); err != nil {
		return nil, err
	}
	m := &meter{spec: spec, t: t}
	switch t.scheme {
	case "tcp":
		err = m.tcp(ctx)
	case "grpc", "grpcs":
		err = m.grpc(ctx)
	case "icmp":
		err = m.icmp(ctx)
	default:
		err = m.http(ctx)
		if err == nil && spec.Download > 0 {
			err = m.download(ctx)
		}
	}
	if err != nil {
		return nil, err
	}
	return m.result(), nil
}

// pause waits for the interval before sample i (none before the first).
func pause(ctx context.Context, i int, d time.Duration) error {
	if i == 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// classify names why a sample failed: the lookup, the connection, TLS, its own timeout; or the
// measurement's end (ctx), as ctx's error.
func classify(ctx context.Context, t target, timeout time.Duration, err error) error {
	if err == nil || ctx.Err() != nil {
		return cmp.Or(ctx.Err(), err)
	}
	var dnsErr *net.DNSError
	var unknown x509.UnknownAuthorityError
	var host x509.HostnameError
	var invalid x509.CertificateInvalidError
	var verify *tls.CertificateVerificationError
	var alert tls.AlertError
	var record tls.RecordHeaderError
	var netErr net.Error
	switch {
	case errors.As(err, &dnsErr) && dnsErr.IsNotFound:
		return fmt.Errorf("%w: %s does not resolve (NXDOMAIN or no address): %w", ErrNotFound, t.host, err)
	case errors.As(err, &dnsErr):
		return fmt.Errorf("%w: looking %s up: %w", ErrUnreachable, t.host, err)
	case errors.As(err, &host):
		return fmt.Errorf("%w: the certificate of %s is not for that name: %w", ErrTLS, t.where(), err)
	case errors.As(err, &unknown):
		return fmt.Errorf("%w: the certificate of %s is signed by an authority the client does not trust: %w", ErrTLS, t.where(), err)
	case errors.As(err, &invalid), errors.As(err, &verify), errors.As(err, &alert), errors.As(err, &record):
		return fmt.Errorf("%w: handshake with %s: %w", ErrTLS, t.where(), err)
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &netErr) && netErr.Timeout():
		return fmt.Errorf("%w: %s: no answer within %s", ErrUnreachable, t.where(), timeout)
	}
	return fmt.Errorf("%w: %s: %w", ErrUnreachable, t.where(), err)
}

// MaxDuration bounds the egress probe of count requests (and a download of download): every
// sample ends within its timeout, and the first failure ends the probe.
func MaxDuration(count int, download time.Duration) time.Duration {
	return 2*time.Duration(count+1)*(DefaultTimeout+DefaultInterval) + download + DefaultTimeout
}
