package egress

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// pacedServer answers with chunks of size bytes, one every gap, count of them (forever when
// count is 0).
func pacedServer(t *testing.T, size, count int, gap time.Duration) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, size)
		for i := 0; count == 0 || i < count; i++ {
			if i > 0 {
				select {
				case <-time.After(gap):
				case <-r.Context().Done():
					return
				}
			}
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// A body of 8 chunks 20 ms apart, read to its end: its bytes over the 140 ms from its first byte
// to its last, not over the time the download was allowed.
func TestDownloadReadsTheBodyToItsEnd(t *testing.T) {
	s := pacedServer(t, 128<<10, 8, 20*time.Millisecond)
	r, err := Measure(context.Background(), Spec{Target: s.URL, Count: 1, Download: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	d := r.Download
	if d == nil || d.Bytes != 8*128<<10 || d.Ended != EndedBody || d.Note != "" {
		t.Fatalf("download %+v: want 1 MiB to the body's end", d)
	}
	if d.Seconds < 0.13 || d.Seconds > 0.6 || d.TotalSeconds < d.Seconds {
		t.Errorf("%.3f s from the first byte (%.3f s in all): want about the 140 ms the server took", d.Seconds, d.TotalSeconds)
	}
	if want := float64(d.Bytes) * 8 / d.Seconds; math.Abs(d.BitsPerSecond-want) > 1 {
		t.Errorf("%.0f bit/s, want the bytes over the time they took: %.0f bit/s", d.BitsPerSecond, want)
	}
}

// A body that never ends is read for the time allowed after its first byte.
func TestDownloadEndsWhenItsTimeIsUp(t *testing.T) {
	s := pacedServer(t, 64<<10, 0, 10*time.Millisecond)
	start := time.Now()
	r, err := Measure(context.Background(), Spec{Target: s.URL, Count: 1, Download: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	d := r.Download
	if d == nil || d.Ended != EndedDuration || d.Seconds < 0.25 || d.Seconds > 0.5 || d.Bytes < 10*64<<10 {
		t.Errorf("download %+v: want about 300 ms of a body that never ends", d)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("took %s", time.Since(start))
	}
}

// A short body says its rate is not the path's; the wrong destinations and durations are refused
// before anything is sent; a server error is one.
func TestDownloadRefusals(t *testing.T) {
	short := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) }))
	defer short.Close()
	r, err := Measure(context.Background(), Spec{Target: short.URL, Count: 1, Download: time.Second})
	if err != nil || r.Download == nil || r.Download.Bytes != 3 || !strings.Contains(r.Download.Note, "not the path's rate") {
		t.Errorf("short body: %+v, %v: want a note that the rate is not the path's", r, err)
	}
	var served atomic.Int64
	broken := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		if served.Add(1) > 2 {
			w.WriteHeader(http.StatusBadGateway)
		}
	}))
	defer broken.Close()
	if _, err := Measure(context.Background(), Spec{Target: broken.URL, Count: 1, Download: time.Second}); !errors.Is(err, ErrHTTPStatus) || !strings.Contains(err.Error(), "502") {
		t.Errorf("a download answered 502: %v, want a server error", err)
	}
	for _, tc := range []struct {
		target string
		d      time.Duration
		says   string
	}{
		{"tcp://127.0.0.1:1", time.Second, "for an http:// or https:// destination"},
		{"grpc://127.0.0.1:1", time.Second, "for an http:// or https:// destination"},
		{short.URL, 61 * time.Second, "want from 1 ms to 1m0s"},
		{short.URL, -time.Second, "want from 1 ms to 1m0s"},
	} {
		if _, err := Measure(context.Background(), Spec{Target: tc.target, Download: tc.d}); !errors.Is(err, ErrTarget) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s for %s: %v, want one saying %q", tc.target, tc.d, err, tc.says)
		}
	}
}

// An interrupt ends a download at once, as the context's error.
func TestDownloadEndsWithItsContext(t *testing.T) {
	s := pacedServer(t, 64<<10, 0, 10*time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(300*time.Millisecond, cancel)
	start := time.Now()
	_, err := Measure(ctx, Spec{Target: s.URL, Count: 1, Download: 10 * time.Second})
	if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
		t.Errorf("%v after %s, want context.Canceled at once", err, time.Since(start))
	}
}
