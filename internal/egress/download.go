package egress

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"os"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// Bounds of a download (Spec.Download).
const (
	MaxDownload      = 60 * time.Second
	MaxDownloadBytes = 1 << 30
	// minDownloadBytes is the least body whose rate is the path's rather than its first round
	// trips': under it the result says so.
	minDownloadBytes = 1 << 20
)

// How a download ended (EgressDownload.Ended).
const (
	EndedBody     = "end"      // the body's end
	EndedLimit    = "limit"    // MaxDownloadBytes read
	EndedDuration = "duration" // Spec.Download ran out
)

// download makes one more request, on a new connection, and reads its answer's body until its
// end, MaxDownloadBytes or Spec.Download after the first byte, whichever comes first.
func (m *meter) download(ctx context.Context) error {
	tr := m.transport(true)
	defer tr.CloseIdleConnections()
	dctx, cancel := context.WithTimeout(ctx, m.spec.Timeout+m.spec.Download)
	defer cancel()
	var ph phases
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(dctx, ph.trace()), http.MethodGet, m.t.url.String(), nil)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrTarget, err)
	}
	req.Header.Set("User-Agent", "kubectl-netbench")
	start := time.Now()
	resp, err := tr.RoundTrip(req)
	if err != nil {
		return classify(ctx, m.t, m.spec.Timeout, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 500 {
		return fmt.Errorf("%w: %s answered %s", ErrHTTPStatus, shown("", m.t.url), shortStatus(resp))
	}
	first := ph.firstByte
	if first.IsZero() {
		first = time.Now()
	}
	n, last, ended, err := readFor(resp.Body, first.Add(m.spec.Download))
	if err != nil && ctx.Err() == nil && ended == "" {
		return classify(ctx, m.t, m.spec.Timeout, fmt.Errorf("reading the body after %d bytes: %w", n, err))
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	m.dl = downloadResult(n, first, last, start, ended, m.spec.Download)
	return nil
}

// readFor reads body until its end, MaxDownloadBytes, or until (a read ending after it, or
// failing with os.ErrDeadlineExceeded after it), and returns how much it read and when the last
// byte came.
func readFor(body io.Reader, until time.Time) (n int64, last time.Time, ended string, err error) {
	buf := make([]byte, 64<<10)
	for {
		k, rerr := body.Read(buf)
		if k > 0 {
			n, last = n+int64(k), time.Now()
		}
		switch {
		case errors.Is(rerr, io.EOF):
			return n, last, EndedBody, nil
		case n >= MaxDownloadBytes:
			return n, last, EndedLimit, nil
		case !time.Now().Before(until) && (rerr == nil || errors.Is(rerr, context.DeadlineExceeded) || errors.Is(rerr, os.ErrDeadlineExceeded)):
			return n, last, EndedDuration, nil
		case rerr != nil:
			return n, last, "", rerr
		}
	}
}

// downloadResult is a download's figures: the rate from the first byte to the last.
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
		d.Note = fmt.Sprintf("a body of %d bytes times the first round trips of a transfer, not the path's rate: give a URL of at least %d MiB", n, minDownloadBytes>>20)
	}
	return d
}
