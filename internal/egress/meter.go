package egress

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/text"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// meter collects one Measure's samples.
type meter struct {
	spec Spec
	t    target

	addrs                 []string
	remote                string
	dns, connect, tlsHS   []time.Duration
	firstNew, firstReused []time.Duration
	state                 *tls.ConnectionState
	status                int
	newConns              int
	notReused             string // why the reused samples ended early
	proto                 string
	seen                  string // the source address the far side echoed
	grpcStatus            string // the health check's answer
	dl                    *v1alpha1.EgressDownload
	echo                  *v1alpha1.RTTResult // icmp
}

// tcp makes Count new connections (each with its own lookup, the address families racing as
// Go's dialer races them) and closes each at once.
func (m *meter) tcp(ctx context.Context) error {
	d := net.Dialer{Timeout: m.spec.Timeout, Resolver: m.spec.Resolver}
	for i := range m.spec.Count {
		if err := pause(ctx, i, m.spec.Interval); err != nil {
			return err
		}
		var ph phases
		c, err := d.DialContext(httptrace.WithClientTrace(ctx, ph.trace()), "tcp", net.JoinHostPort(m.t.host, m.t.port))
		if err != nil {
			return classify(ctx, m.t, m.spec.Timeout, err)
		}
		ph.remote = c.RemoteAddr().String()
		c.Close()
		m.recordConnection(&ph)
	}
	return nil
}

// http makes Count requests on new connections, then one request to open a kept-alive
// connection and Count more on it.
func (m *meter) http(ctx context.Context) error {
	fresh := m.transport(true)
	defer fresh.CloseIdleConnections()
	for i := range m.spec.Count {
		if err := pause(ctx, i, m.spec.Interval); err != nil {
			return err
		}
		if err := m.request(ctx, fresh, sampleNew); err != nil {
			return err
		}
	}
	kept := m.transport(false)
	defer kept.CloseIdleConnections()
	for i := range m.spec.Count + 1 {
		if err := pause(ctx, i, m.spec.Interval); err != nil {
			return err
		}
		kind := sampleReused
		if i == 0 {
			kind = opensReused // opens the connection the others reuse
		}
		if err := m.request(ctx, kept, kind); err != nil {
			if errors.Is(err, errNotReused) {
				return nil // the new connections' figures stand; the reason is reported
			}
			return err
		}
	}
	return nil
}

func (m *meter) transport(newEach bool) *http.Transport {
	return &http.Transport{
		DialContext:         (&net.Dialer{Timeout: m.spec.Timeout, Resolver: m.spec.Resolver}).DialContext,
		TLSClientConfig:     &tls.Config{RootCAs: m.spec.RootCAs, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout: m.spec.Timeout,
		DisableKeepAlives:   newEach,
		MaxIdleConnsPerHost: 1,
		// No proxy (HTTPS_PROXY is not read): the path measured is the pod's own.
		MaxResponseHeaderBytes: 64 << 10,
		ForceAttemptHTTP2:      true,
		DisableCompression:     true,
	}
}

// errNotReused ends the reused samples: the server closes its connections.
var errNotReused = errors.New("connection not reused")

// What a request is a sample of.
type sample int

const (
	sampleNew    sample = iota // every phase of a new connection
	opensReused                // none: it opens the kept-alive connection
	sampleReused               // the first byte on the kept-alive connection
)

// request makes one GET and records what kind samples. A reused sample on a connection that was
// not reused (the server closed it) is an error: it would time a handshake as a reuse.
func (m *meter) request(ctx context.Context, rt http.RoundTripper, kind sample) error {
	sctx, cancel := context.WithTimeout(ctx, m.spec.Timeout)
	defer cancel()
	var ph phases
	req, err := m.get(sctx, &ph)
	if err != nil {
		return err
	}
	start := time.Now()
	resp, err := rt.RoundTrip(req)
	if err != nil {
		return classify(ctx, m.t, m.spec.Timeout, err)
	}
	var head prefix
	_, copyErr := io.Copy(&head, io.LimitReader(resp.Body, maxBody))
	resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("%w: %s answered %s", ErrHTTPStatus, shown("", m.t.url), shortStatus(resp))
	}
	if copyErr != nil {
		return classify(ctx, m.t, m.spec.Timeout, copyErr)
	}
	m.status, m.proto = resp.StatusCode, resp.Proto
	switch {
	case kind == sampleReused && !ph.reused:
		m.notReused = fmt.Sprintf("the server did not keep the connection open (its answer %s; bodies over %d bytes are not read to their end)", shortStatus(resp), maxBody)
		return errNotReused
	case kind == sampleReused:
		m.firstReused = append(m.firstReused, ph.firstByte.Sub(start))
	case kind == sampleNew:
		m.record(&ph, start, resp)
		m.seen = seenAddress(head.whole())
	}
	return nil
}

// get is a GET of the destination whose moments ph records.
func (m *meter) get(ctx context.Context, ph *phases) (*http.Request, error) {
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, ph.trace()), http.MethodGet, m.t.url.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTarget, err)
	}
	req.Header.Set("User-Agent", "kubectl-netbench")
	return req, nil
}

// record keeps a new connection's phases.
func (m *meter) record(ph *phases, start time.Time, resp *http.Response) {
	m.recordConnection(ph)
	if resp.TLS != nil {
		m.tlsHS = append(m.tlsHS, ph.tlsDone.Sub(ph.tlsStart))
		m.state = resp.TLS
	}
	m.firstNew = append(m.firstNew, ph.firstByte.Sub(start))
}

// recordConnection keeps a new connection's lookup and handshake: from the first connection
// attempt to the one that succeeded (as curl's time_connect counts, less its lookup), so an
// address family that had to be given up on shows.
func (m *meter) recordConnection(ph *phases) {
	ph.mu.Lock()
	defer ph.mu.Unlock()
	if !ph.dnsStart.IsZero() && !ph.dnsDone.IsZero() {
		m.dns = append(m.dns, ph.dnsDone.Sub(ph.dnsStart))
		if m.addrs == nil {
			m.addrs = ph.addrs
		}
	}
	from := ph.connectStart
	if fault.On(fault.EgressConnectWithLookup) && !ph.dnsStart.IsZero() {
		from = ph.dnsStart
	}
	m.connect = append(m.connect, ph.connectDone.Sub(from))
	m.remote = ph.remote
	m.newConns++
}

// shortStatus is an answer's status line, bounded (a hostile server chooses it).
func shortStatus(resp *http.Response) string {
	if len(resp.Status) > 80 {
		return resp.Status[:80] + "…"
	}
	return resp.Status
}

// result summarizes the samples.
func (m *meter) result() *v1alpha1.EgressResult {
	r := &v1alpha1.EgressResult{Target: shown(m.spec.Target, m.t.url), Protocol: m.proto, Scheme: m.t.scheme, Host: m.t.host, Port: m.t.port,
		Addresses: m.addrs, RemoteAddress: m.remote, NewConnections: m.newConns,
		Connect: probes.LatencyFromSamples(m.connect), Status: m.status, NotReused: m.notReused, SeenSource: m.seen, GRPCStatus: m.grpcStatus, Download: m.dl, ICMP: m.echo}
	r.DNS = latencyOf(m.dns)
	r.FirstByteNew, r.FirstByteReused = latencyOf(m.firstNew), latencyOf(m.firstReused)
	if m.state != nil {
		r.TLS = &v1alpha1.TLSHandshake{Latency: probes.LatencyFromSamples(m.tlsHS), Version: tls.VersionName(m.state.Version),
			Cipher: tls.CipherSuiteName(m.state.CipherSuite), ServerName: m.state.ServerName, Verified: len(m.state.VerifiedChains) > 0}
		chain := m.state.PeerCertificates // verified: the chain that verified, not whatever else the server sent
		if len(m.state.VerifiedChains) > 0 {
			chain = m.state.VerifiedChains[0]
		}
		for _, c := range chain {
			r.TLS.Chain = append(r.TLS.Chain, text.Sanitize(c.Subject.String()))
		}
	}
	return r
}

func latencyOf(ds []time.Duration) *v1alpha1.Latency {
	if len(ds) == 0 {
		return nil
	}
	l := probes.LatencyFromSamples(ds)
	return &l
}
