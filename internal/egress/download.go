package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/internal/text"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// Bounds of a download (Spec.Download).
const (
	MaxDownload      = 60 * time.Second
	MaxDownloadBytes = 1 << 30
	// minDownloadBytes is the least body whose rate is the path's rather than its first round
	// trips': under it no rate is given.
	minDownloadBytes = 1 << 20
	// downloadWindow is the HTTP/2 flow-control window a download grants the server (Go's 4 MiB
	// per stream would cap a 50 ms path at about 670 Mbit/s).
	downloadWindow = 64 << 20
)

// How a download ended (EgressDownload.Ended).
const (
	EndedBody     = "end"      // the body's end
	EndedLimit    = "limit"    // MaxDownloadBytes read
	EndedDuration = "duration" // Spec.Download ran out
)

// download makes one more request, on a new connection, waits up to Spec.Timeout for its
// answer's first byte, and reads a 2xx answer's body until its end, MaxDownloadBytes or
// Spec.Download after the first byte, whichever comes first. A download that fails is said in
// the result; the figures before it stand.
func (m *meter) download(ctx context.Context) error {
	dctx, stop := context.WithCancel(ctx)
	defer stop()
	var cut atomic.Bool // the time allowed ran out, and stopped the request
	headers := time.AfterFunc(m.spec.Timeout, stop)
	start := time.Now()
	resp, ph, err := m.downloadRequest(dctx)
	if !headers.Stop() && err != nil && ctx.Err() == nil {
		return m.downloadFailed(start, fmt.Errorf("%w: %s: no answer within %s", ErrUnreachable, shown("", m.t.url), m.spec.Timeout))
	}
	if err != nil {
		return m.downloadFailed(start, classify(ctx, m.t, m.spec.Timeout, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return m.downloadFailed(start, fmt.Errorf("%w: %s answered %s: a download needs a 2xx answer's body", ErrHTTPStatus, shown("", m.t.url), shortStatus(resp)))
	}
	first := ph.firstByte
	if first.IsZero() {
		first = time.Now()
	}
	until := first.Add(m.spec.Download)
	body := time.AfterFunc(time.Until(until), func() { cut.Store(true); stop() })
	defer body.Stop()
	n, last, ended, err := readFor(resp.Body, &cut)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		return m.downloadFailed(start, fmt.Errorf("%w: reading the body of %s after %d bytes: %w", ErrUnreachable, shown("", m.t.url), n, err))
	}
	if ended == EndedDuration {
		last = until // a stall before the end counts: the rate is over the whole time allowed
	}
	m.dl = downloadResult(n, first, last, start, ended, m.spec.Download)
	m.dl.Protocol = resp.Proto
	return nil
}

// downloadRequest sends the download's request on a connection of its own.
func (m *meter) downloadRequest(ctx context.Context) (*http.Response, *phases, error) {
	tr := m.transport(true)
	tr.HTTP2 = &http.HTTP2Config{MaxReceiveBufferPerStream: downloadWindow, MaxReceiveBufferPerConnection: downloadWindow}
	var ph phases
	req, err := m.get(ctx, &ph)
	if err != nil {
		return nil, nil, err
	}
	resp, err := tr.RoundTrip(req)
	if err != nil {
		tr.CloseIdleConnections()
		return nil, nil, err
	}
	return resp, &ph, nil
}

// downloadFailed keeps why the download failed, in one line, beside the other figures.
func (m *meter) downloadFailed(start time.Time, err error) error {
	m.dl = &v1alpha1.EgressDownload{Error: text.Sanitize(err.Error()), TotalSeconds: time.Since(start).Seconds()}
	return nil
}

// readFor reads body until its end, MaxDownloadBytes, or cut (set when the time allowed ran out
// and the request was stopped), and returns how much it read and when its last byte came.
func readFor(body io.Reader, cut *atomic.Bool) (n int64, last time.Time, ended string, err error) {
	buf := make([]byte, 64<<10)
	for {
		k, rerr := body.Read(buf)
		if k > 0 {
			n, last = n+int64(k), time.Now()
		}
		switch {
		case cut.Load():
			return n, last, EndedDuration, nil
		case errors.Is(rerr, io.EOF):
			return n, last, EndedBody, nil
		case n >= MaxDownloadBytes:
			return n, last, EndedLimit, nil
		case rerr != nil:
			return n, last, "", rerr
		}
	}
}

// downloadResult is a download's figures: the rate from the first byte to the last (or to the
// end of the time allowed), given from minDownloadBytes.
func downloadResult(n int64, first, last, start time.Time, ended string, limit time.Duration) *v1alpha1.EgressDownload {
	d := &v1alpha1.EgressDownload{Bytes: n, Ended: ended}
	if n > 0 && last.After(first) {
		d.Seconds = last.Sub(first).Seconds()
		d.TotalSeconds = last.Sub(start).Seconds()
		d.BitsPerSecond = float64(n) * 8 / d.Seconds
		if fault.On(fault.EgressDownloadOverLimit) {
			d.BitsPerSecond = float64(n) * 8 / limit.Seconds()
		}
	}
	if n < minDownloadBytes {
		d.BitsPerSecond = 0
		d.Note = fmt.Sprintf("no rate: a body of %d bytes times the first round trips of a transfer, not the path's rate (give a URL of at least %d MiB)", n, minDownloadBytes>>20)
	}
	return d
}
