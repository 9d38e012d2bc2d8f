package probes

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// A server that answers after a known delay is ground truth for the latency pipeline: every
// request must take at least the delay, and the percentiles must land just above it, in µs.
func TestHTTPLatencyKnownDelay(t *testing.T) {
	const delay = 2 * time.Millisecond
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test") != "yes" {
			http.Error(w, "no header", http.StatusUnauthorized)
			return
		}
		time.Sleep(delay)
		_, _ = io.WriteString(w, "ok")
	}))
	defer srv.Close()

	for _, mode := range []string{HTTPKeepAlive, HTTPNewConn, HTTPClosedLoop} {
		t.Run(mode, func(t *testing.T) {
			r, err := HTTPLatency(context.Background(), HTTPSpec{
				URL: srv.URL + "/", Mode: mode, QPS: 200, Connections: 2, Duration: 500 * time.Millisecond,
				Headers: http.Header{"X-Test": {"yes"}},
			})
			if err != nil {
				t.Fatal(err)
			}
			if r.Errors != 0 {
				t.Fatalf("errors: %v", r.ErrorsByKind)
			}
			if r.Latency.ResolutionMicros != 0 || r.Latency.PercentilesFrom != 0 || r.Latency.Count != r.Requests {
				t.Errorf("want exact percentiles over all %d requests: %+v", r.Requests, r.Latency)
			}
			if r.Latency.MinMicros < 2000 {
				t.Errorf("min %v µs is below the server's 2000 µs delay", r.Latency.MinMicros)
			}
			if r.Latency.P50Micros < 2000 || r.Latency.P50Micros > 6000 {
				t.Errorf("p50 %v µs, want just above 2000 µs", r.Latency.P50Micros)
			}
			if !(r.Latency.MinMicros <= r.Latency.P50Micros && r.Latency.P50Micros <= r.Latency.P90Micros &&
				r.Latency.P90Micros <= r.Latency.P99Micros && r.Latency.P99Micros <= r.Latency.MaxMicros) {
				t.Errorf("percentiles out of order: %+v", r.Latency)
			}
			// 2 connections, each request ≥ 2 ms: at most 1000 requests/s in any mode.
			if r.AchievedQPS > 1000 {
				t.Errorf("achieved %v qps, impossible with 2 connections and a 2 ms server", r.AchievedQPS)
			}
			if mode == HTTPClosedLoop {
				if r.RequestedQPS != 0 || r.LittleLawQPS == 0 {
					t.Errorf("closed loop: requested %v, little %v", r.RequestedQPS, r.LittleLawQPS)
				}
				if ratio := r.AchievedQPS / r.LittleLawQPS; ratio < 0.8 || ratio > 1.2 {
					t.Errorf("achieved %v qps vs Little's law %v: ratio %.2f", r.AchievedQPS, r.LittleLawQPS, ratio)
				}
			}
			if mode == HTTPNewConn && r.SocketsOpened < r.Requests/2 {
				t.Errorf("new-conn mode opened %d sockets for %d requests", r.SocketsOpened, r.Requests)
			}
			if mode == HTTPKeepAlive && r.SocketsOpened > 2 {
				t.Errorf("keep-alive mode opened %d sockets for 2 connections", r.SocketsOpened)
			}
		})
	}
}

func TestHTTPLatencyCountsErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "nope", http.StatusUnauthorized)
	}))
	defer srv.Close()
	r, err := HTTPLatency(context.Background(), HTTPSpec{URL: srv.URL, QPS: 50, Connections: 1, Duration: 200 * time.Millisecond})
	if err == nil {
		t.Fatal("want an error when every request fails")
	}
	if r == nil || r.ErrorsByKind["401"] == 0 || r.Errors != r.Requests {
		t.Fatalf("want every request counted as 401, got %+v", r)
	}
}

// sink accepts throughput streams on loopback the way the agent server does.
func sink(t *testing.T, token string) string {
	return magicServer(t, ThroughputMagic, token, ServeThroughput)
}

// magicServer serves, on loopback, the connections that open with magic as the agent server
// does: serve with an admission that wants token.
func magicServer(t *testing.T, magic, token string, serve func(net.Conn, *bufio.Reader, func(string) error) error) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				br := bufio.NewReaderSize(c, 4096)
				head := make([]byte, len(magic))
				if _, err := io.ReadFull(br, head); err != nil || string(head) != magic {
					c.Close()
					return
				}
				_ = serve(c, br, func(tok string) error {
					if tok != token {
						return errors.New("wrong token")
					}
					return nil
				})
			}()
		}
	}()
	return ln.Addr().String()
}

func TestThroughputLoopback(t *testing.T) {
	addr := sink(t, "s3cret")
	r, err := Throughput(context.Background(), ThroughputSpec{Address: addr, Token: "s3cret", Streams: 3, Duration: 1200 * time.Millisecond, Interval: 400 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.BytesSent == 0 || r.BytesReceived != r.BytesSent {
		t.Errorf("sent %d bytes, the sink counted %d: every byte sent must be counted", r.BytesSent, r.BytesReceived)
	}
	if len(r.PerStream) != 3 {
		t.Fatalf("%d stream results, want 3", len(r.PerStream))
	}
	var sum int64
	for i, s := range r.PerStream {
		sum += s.BytesSent
		if s.BytesReceived != s.BytesSent || s.MSSBytes == 0 || s.MaxCwndBytes == 0 || s.TCPInfoSamples == 0 || s.MeanRTTMicros <= 0 {
			t.Errorf("stream %d lacks TCP_INFO facts: %+v", i, s)
		}
	}
	if sum != r.BytesSent {
		t.Errorf("per-stream bytes add up to %d, total says %d", sum, r.BytesSent)
	}
	if len(r.Intervals) < 2 || len(r.Intervals) > 3 {
		t.Errorf("%d intervals of 400 ms in 1.2 s, want 2 or 3", len(r.Intervals))
	}
	if r.ClientCPUPercent <= 0 || r.ClientCPUPercent > 400 {
		t.Errorf("client CPU %v %% of a core", r.ClientCPUPercent)
	}
}

func TestThroughputWrongToken(t *testing.T) {
	addr := sink(t, "right")
	_, err := Throughput(context.Background(), ThroughputSpec{Address: addr, Token: "wrong", Duration: 200 * time.Millisecond})
	if err == nil {
		t.Fatal("a stream with the wrong token was accepted")
	}
}

func TestTCPConnectRTT(t *testing.T) {
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
	r, err := TCPConnectRTT(context.Background(), RTTSpec{Target: ln.Addr().String(), Count: 10, Interval: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if r.Method != MethodTCPConnect || r.Sent != 10 || r.Received != 10 || r.LossPercent != 0 || r.RTT.Count != 10 {
		t.Errorf("unexpected result %+v", r)
	}
	if r.RTT.MinMicros <= 0 || r.RTT.MaxMicros > 1e6 {
		t.Errorf("implausible loopback RTT %+v", r.RTT)
	}
}

func TestTCPConnectRTTRefused(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	addr := ln.Addr().String()
	ln.Close()
	_, err := TCPConnectRTT(context.Background(), RTTSpec{Target: addr, Count: 2, Interval: time.Millisecond})
	if err == nil {
		t.Fatal("want an error from a closed port")
	}
}

// A cancel that arrives after fortio's runner has started must stop the run, not dereference
// the aborter fortio takes out of its options when it starts.
func TestHTTPLatencyCancelledWhileRunning(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	for _, after := range []time.Duration{50 * time.Millisecond, 300 * time.Millisecond} {
		ctx, cancel := context.WithTimeout(context.Background(), after)
		start := time.Now()
		_, err := HTTPLatency(ctx, HTTPSpec{URL: srv.URL, Mode: HTTPClosedLoop, Connections: 64, Duration: 10 * time.Second})
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("cancel after %v: err %v, want the context's", after, err)
		}
		if d := time.Since(start); d > after+3*time.Second {
			t.Errorf("cancel after %v: the run took %v", after, d)
		}
	}
}
