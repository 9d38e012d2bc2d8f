package probes

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"
)

// Request percentiles are latencies requests really had, wherever they fall. The server here
// takes 10.5 ms for 7 requests in 10 and 18 ms for the other 3, and records how long each of
// its answers took: the probe's p50 must be the fast answers' time plus the loopback's cost,
// its p90 a slow one's. Percentiles interpolated in fortio's histogram (fault
// latency-from-buckets, hack/mutations.sh), whose bucket from 10 to 20 ms holds every request,
// put the p50 near 14 ms.
func TestRequestPercentilesAreObserved(t *testing.T) {
	var mu sync.Mutex
	var served []time.Duration
	n := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		start := time.Now()
		mu.Lock()
		n++
		d := 10500 * time.Microsecond
		if n%10 >= 7 {
			d = 18 * time.Millisecond
		}
		mu.Unlock()
		time.Sleep(d)
		_, _ = io.WriteString(w, "ok")
		mu.Lock()
		served = append(served, time.Since(start))
		mu.Unlock()
	}))
	defer srv.Close()
	for _, mode := range []string{HTTPKeepAlive, HTTPNewConn} {
		r, err := HTTPLatency(context.Background(), HTTPSpec{URL: srv.URL + "/", Mode: mode, QPS: 40, Connections: 1, Duration: 2 * time.Second})
		if err != nil || r.Errors != 0 {
			t.Fatalf("%s: %v %v", mode, err, r)
		}
		mu.Lock()
		slices.Sort(served)
		fast := served[len(served)/2] // the median server time: a fast answer's (7 in 10)
		slow := served[0]
		for _, d := range served {
			if d >= 18*time.Millisecond {
				slow = d
				break
			}
		}
		served, n = nil, 0
		mu.Unlock()
		l := r.Latency
		t.Logf("%s: %d requests, p50 %.0f µs, p90 %.0f µs; the server's median %v, its fastest slow answer %v", mode, l.Count, l.P50Micros, l.P90Micros, fast, slow)
		if l.Count < 60 || l.ResolutionMicros != 0 {
			t.Fatalf("%s: want exact percentiles over at least 60 requests: %+v", mode, l)
		}
		if over := time.Duration(l.P50Micros*1e3) - fast; over < 0 || over > 2500*time.Microsecond {
			t.Errorf("%s: p50 %.0f µs is %v from the server's median answer time %v: want 0 to 2.5 ms above it (the loopback's cost)", mode, l.P50Micros, over, fast)
		}
		if time.Duration(l.P90Micros*1e3) < slow {
			t.Errorf("%s: p90 %.0f µs is below every slow answer's server time (%v)", mode, l.P90Micros, slow)
		}
	}
}

// Past MaxExactSamples requests the recorder keeps a uniform sample for the percentiles and says
// so, while count, min, max and mean still cover every request.
func TestSampleRecorderBeyondItsBound(t *testing.T) {
	r := newSampleRecorder(1000)
	for i := 1; i <= 10000; i++ {
		r.add(time.Duration(i) * time.Microsecond)
	}
	l := r.latency()
	if l.Count != 10000 || l.PercentilesFrom != 1000 || l.MinMicros != 1 || l.MaxMicros != 10000 || l.AvgMicros != 5000.5 {
		t.Fatalf("got %+v", l)
	}
	// A uniform sample of 1000 from 1..10000: the p50 has a standard deviation of about
	// 10000·√(0.25/1000) ≈ 158; 5 of them either side.
	if l.P50Micros < 5000-790 || l.P50Micros > 5000+790 {
		t.Errorf("p50 %v from the sample, want about 5000", l.P50Micros)
	}
	small := newSampleRecorder(1000)
	for i := 1; i <= 999; i++ {
		small.add(time.Duration(i) * time.Microsecond)
	}
	if l := small.latency(); l.PercentilesFrom != 0 || l.Count != 999 || l.P50Micros != 500 {
		t.Errorf("below the bound, want exact: %+v", l)
	}
}
