package reftools

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
)

// runNewConn is an HTTP client independent of fortio's: Go's net/http with keep-alive off, each
// worker sending one request every Connections/QPS seconds, each timed from the start of its dial
// to the first byte of the answer; percentiles exact (nearest rank).
func runNewConn(h HTTPRun) (refResult, error) {
	if h.QPS <= 0 || h.Connections <= 0 {
		return refResult{}, errors.New("the new-connection client needs a rate and connections")
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}
	var samples []time.Duration
	var mu sync.Mutex
	var errs []error
	every := time.Duration(float64(h.Connections) / h.QPS * float64(time.Second))
	end := time.Now().Add(time.Duration(h.Seconds * float64(time.Second)))
	var wg sync.WaitGroup
	for w := 0; w < h.Connections; w++ {
		wg.Add(1)
		go func(offset time.Duration) {
			defer wg.Done()
			for next := time.Now().Add(offset); next.Before(end); next = next.Add(every) {
				time.Sleep(time.Until(next))
				d, err := ttfb(client, h)
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					samples = append(samples, d)
				}
				mu.Unlock()
			}
		}(time.Duration(w) * every / time.Duration(h.Connections))
	}
	wg.Wait()
	if len(errs) > 0 {
		return refResult{}, fmt.Errorf("%d of %d requests failed: %w", len(errs), len(samples)+len(errs), errs[0])
	}
	return refResult{Latency: probes.LatencyFromSamples(samples), QPS: float64(len(samples)) / h.Seconds}, nil
}

// ttfb is one request's time from the dial's start to the answer's first byte.
func ttfb(client *http.Client, h HTTPRun) (time.Duration, error) {
	var start, first time.Time
	trace := &httptrace.ClientTrace{
		ConnectStart:         func(string, string) { start = time.Now() },
		GotFirstResponseByte: func() { first = time.Now() },
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, h.URL, nil)
	if err != nil {
		return 0, err
	}
	if h.Token != "" {
		req.Header.Set(agent.TokenHeader, h.Token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("status %s", resp.Status)
	}
	return first.Sub(start), nil
}
