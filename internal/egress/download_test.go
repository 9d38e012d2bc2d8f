package egress

import (
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// downloadServer answers the samples before the download (Count 1: a new connection, then two
// on a kept one) with "ok", and the fourth request, the download, with serve.
func downloadServer(t *testing.T, serve http.HandlerFunc) *httptest.Server {
	t.Helper()
	var n atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) <= 3 {
			_, _ = w.Write([]byte("ok\n"))
			return
		}
		serve(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// paced writes count chunks of size bytes, gap apart (forever when count is 0), after wait.
func paced(size, count int, gap, wait time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, size)
		for i := 0; count == 0 || i < count; i++ {
			d := gap
			if i == 0 {
				d = wait
			}
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
			if _, err := w.Write(chunk); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	}
}

func download(t *testing.T, s *httptest.Server, spec Spec) *v1alpha1.EgressResult {
	t.Helper()
	spec.Target, spec.Count, spec.Interval = s.URL, 1, time.Millisecond
	r, err := Measure(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	if r.Download == nil {
		t.Fatalf("result %+v: no download", r)
	}
	return r
}

// A body of 16 chunks 20 ms apart, read to its end: its bytes over the 300 ms from its first
// byte to its last, not over the time the download was allowed.
func TestDownloadReadsTheBodyToItsEnd(t *testing.T) {
	d := download(t, downloadServer(t, paced(128<<10, 16, 20*time.Millisecond, 0)), Spec{Download: 5 * time.Second}).Download
	if d.Bytes != 16*128<<10 || d.Ended != EndedBody || d.Note != "" || d.Error != "" || d.Protocol != "HTTP/1.1" {
		t.Fatalf("download %+v: want 2 MiB to the body's end", d)
	}
	if d.Seconds < 0.29 || d.Seconds > 0.8 || d.TotalSeconds < d.Seconds {
		t.Errorf("%.3f s from the first byte (%.3f s in all): want about the 300 ms the server took", d.Seconds, d.TotalSeconds)
	}
	if want := float64(d.Bytes) * 8 / d.Seconds; math.Abs(d.BitsPerSecond-want) > 1 {
		t.Errorf("%.0f bit/s, want the bytes over the time they took: %.0f bit/s", d.BitsPerSecond, want)
	}
}

// The answer's first byte may take up to the timeout (here 150 of 200 ms), and the time allowed
// runs from it, the timeout's timer stopped; a body that never ends is read for that time.
func TestDownloadEndsWhenItsTimeIsUp(t *testing.T) {
	s := downloadServer(t, func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(150 * time.Millisecond)
		paced(64<<10, 0, 10*time.Millisecond, 0)(w, r)
	})
	start := time.Now()
	d := download(t, s, Spec{Download: 400 * time.Millisecond, Timeout: 200 * time.Millisecond}).Download
	if d.Error != "" || d.Ended != EndedDuration || d.Seconds != 0.4 || d.Bytes < 20*64<<10 {
		t.Errorf("download %+v: want 400 ms of a body that never ends", d)
	}
	if time.Since(start) > 3*time.Second {
		t.Errorf("took %s", time.Since(start))
	}
}

// A body that stalls after 2 MiB: the stall counts, its rate is over the whole time allowed.
func TestDownloadCountsAStall(t *testing.T) {
	s := downloadServer(t, func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write(make([]byte, 2<<20))
		w.(http.Flusher).Flush()
		<-r.Context().Done()
	})
	d := download(t, s, Spec{Download: 500 * time.Millisecond}).Download
	if d.Error != "" || d.Ended != EndedDuration || d.Bytes != 2<<20 || d.Seconds != 0.5 || math.Abs(d.BitsPerSecond-2<<20*8/0.5) > 1 {
		t.Errorf("download %+v: want 2 MiB over the 500 ms allowed", d)
	}
}

// What keeps a download from measuring the path is said beside the other figures, which stand:
// a short body has no rate; a non-2xx answer, a body cut short, no answer in time fail it.
func TestDownloadThatDoesNotMeasure(t *testing.T) {
	for _, tc := range []struct {
		name  string
		serve http.HandlerFunc
		says  string
	}{
		{"short", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) }, "no rate: a body of 3 bytes"},
		{"404", func(w http.ResponseWriter, _ *http.Request) { http.NotFound(w, nil) }, "answered 404 Not Found: a download needs a 2xx answer's body"},
		{"502", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusBadGateway) }, "answered 502 Bad Gateway"},
		{"cut short", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Length", strconv.Itoa(4<<20))
			_, _ = w.Write(make([]byte, 1<<20))
		}, "reading the body of"},
		{"no answer", func(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }, "no answer within 300ms"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := download(t, downloadServer(t, tc.serve), Spec{Download: time.Second, Timeout: 300 * time.Millisecond})
			d := r.Download
			if got := d.Note + d.Error; !strings.Contains(got, tc.says) || d.BitsPerSecond != 0 || strings.Contains(got, "\n") {
				t.Errorf("download %+v: want no rate, saying %q on one line", d, tc.says)
			}
			if r.FirstByteNew == nil || r.FirstByteNew.Count != 1 {
				t.Errorf("the figures before the download are gone: %+v", r)
			}
		})
	}
}

// The wrong destinations and durations are refused before anything is sent.
func TestDownloadRefusals(t *testing.T) {
	for _, tc := range []struct {
		target string
		d      time.Duration
		says   string
	}{
		{"tcp://127.0.0.1:1", time.Second, "for an http:// or https:// destination"},
		{"grpc://127.0.0.1:1", time.Second, "for an http:// or https:// destination"},
		{"icmp://198.51.100.10", time.Second, "for an http:// or https:// destination"},
		{"http://127.0.0.1:1/", 61 * time.Second, "want from 1ms to 1m0s"},
		{"http://127.0.0.1:1/", -time.Second, "want from 1ms to 1m0s"},
	} {
		if _, err := Measure(context.Background(), Spec{Target: tc.target, Download: tc.d}); !errors.Is(err, ErrTarget) || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("%s for %s: %v, want one saying %q", tc.target, tc.d, err, tc.says)
		}
	}
}

// An interrupt during a download ends it at once, as the context's error.
func TestDownloadEndsWithItsContext(t *testing.T) {
	began := make(chan struct{})
	s := downloadServer(t, func(w http.ResponseWriter, r *http.Request) {
		close(began)
		paced(64<<10, 0, 10*time.Millisecond, 0)(w, r)
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-began; time.Sleep(100 * time.Millisecond); cancel() }()
	start := time.Now()
	_, err := Measure(ctx, Spec{Target: s.URL, Count: 1, Interval: time.Millisecond, Download: 10 * time.Second})
	if !errors.Is(err, context.Canceled) || time.Since(start) > 2*time.Second {
		t.Errorf("%v after %s, want context.Canceled at once", err, time.Since(start))
	}
}
