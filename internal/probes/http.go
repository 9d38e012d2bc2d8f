package probes

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	"fortio.org/fortio/fhttp"
	"fortio.org/fortio/periodic"
	"fortio.org/log"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// HTTP load modes, as reported in HTTPResult.Mode.
const (
	HTTPKeepAlive  = v1alpha1.HTTPKeepAlive  // fixed qps over N persistent connections
	HTTPNewConn    = v1alpha1.HTTPNewConn    // fixed qps, a new TCP connection for every request
	HTTPClosedLoop = v1alpha1.HTTPClosedLoop // as many requests as N connections can do
)

// HTTPSpec configures an HTTP/1.1 latency probe run by fortio's load engine.
type HTTPSpec struct {
	URL         string
	Mode        string
	QPS         float64 // ignored for closed-loop
	Connections int
	Duration    time.Duration
	// Headers are added to every request (the agent's token goes here).
	Headers http.Header
	Timeout time.Duration
}

func (s *HTTPSpec) defaults() error {
	if s.URL == "" {
		return fmt.Errorf("http probe: no URL")
	}
	switch s.Mode {
	case "":
		s.Mode = HTTPKeepAlive
	case HTTPKeepAlive, HTTPNewConn, HTTPClosedLoop:
	default:
		return fmt.Errorf("http probe: unknown mode %q (want %s, %s or %s)", s.Mode, HTTPKeepAlive, HTTPNewConn, HTTPClosedLoop)
	}
	if s.Connections <= 0 {
		s.Connections = 4
	}
	if s.Duration <= 0 {
		s.Duration = 5 * time.Second
	}
	if s.QPS <= 0 && s.Mode != HTTPClosedLoop {
		s.QPS = 100
	}
	if s.Timeout <= 0 {
		s.Timeout = 3 * time.Second
	}
	return nil
}

// HTTPResult is v1alpha1.HTTPResult, a type of the reports' schema.
type HTTPResult = v1alpha1.HTTPResult

var fortioLogOnce sync.Once

func quietFortio() {
	fortioLogOnce.Do(func() {
		log.SetLogLevelQuiet(log.Error)
		log.SetOutput(io.Discard)
	})
}

// HTTPLatency runs fortio's HTTP engine against spec.URL and reports the latency of every
// request (exact percentiles; see RecordLatencies).
func HTTPLatency(ctx context.Context, spec HTTPSpec) (*HTTPResult, error) {
	if err := spec.defaults(); err != nil {
		return nil, err
	}
	quietFortio()
	target := spec.URL
	if fault.On(fault.HTTPExtraRoundTrip) && spec.Mode == HTTPNewConn {
		via, stop, err := extraRoundTrip(ctx, spec.URL)
		if err != nil {
			return nil, err
		}
		defer stop()
		target = via
	}
	o := fhttp.HTTPRunnerOptions{}
	latency, stop, err := spec.runnerOptions(&o, target)
	if err != nil {
		return nil, err
	}
	defer abortOnCancel(ctx, stop)()
	res, err := fhttp.RunHTTPTest(&o)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("http %s load on %s: %w", spec.Mode, spec.URL, err)
	}
	return spec.result(res, latency())
}

// runnerOptions sets o up to load target as s says, every request's latency recorded by
// latency; stop aborts the run.
func (s *HTTPSpec) runnerOptions(o *fhttp.HTTPRunnerOptions, target string) (latency func() Latency, stop *periodic.Aborter, err error) {
	o.HTTPReqTimeOut = s.Timeout
	o.Init(target)
	o.InitHeaders()
	o.NumThreads = s.Connections
	o.Duration = s.Duration
	o.QPS = s.QPS
	// At a fixed rate, the connections take turns (fortio's -uniform): unstaggered, they fire
	// together and each request waits for the others in both agents, which doubled the new-
	// connection p50 at 100 qps over 4 connections on the lab's pod paths.
	o.Uniform = true
	if s.Mode == HTTPClosedLoop {
		o.QPS = -1 // fortio: no rate limit
	}
	latency = RecordLatencies(&o.RunnerOptions)
	o.Out = io.Discard
	o.DisableKeepAlive = s.Mode == HTTPNewConn
	o.AllowInitialErrors = true
	// fortio's runner takes the aborter out of o (o.Stop = nil) when it starts: keep our own
	// reference, or a cancel after the start dereferences nil.
	stop = periodic.NewAborter()
	o.Stop = stop
	for k, vs := range s.Headers {
		for _, v := range vs {
			if err := o.AddAndValidateExtraHeader(k + ":" + v); err != nil {
				return nil, nil, fmt.Errorf("http probe header %s: %w", k, err)
			}
		}
	}
	return latency, stop, nil
}

// result is the report of the run res whose requests took latency.
func (s *HTTPSpec) result(res *fhttp.HTTPRunnerResults, latency Latency) (*HTTPResult, error) {
	r := &HTTPResult{
		Mode:            s.Mode,
		URL:             s.URL,
		Connections:     s.Connections,
		AchievedQPS:     round3(res.ActualQPS),
		DurationSeconds: round3(res.ActualDuration.Seconds()),
		Latency:         latency,
		SocketsOpened:   res.SocketCount,
	}
	if s.Mode != HTTPClosedLoop {
		r.RequestedQPS = s.QPS
	}
	r.Requests = res.DurationHistogram.Count
	if err := sameCount(r.Latency, r.Requests); err != nil {
		return nil, fmt.Errorf("http %s load on %s: %w", s.Mode, s.URL, err)
	}
	for code, n := range res.RetCodes {
		if code == http.StatusOK {
			continue
		}
		if r.ErrorsByKind == nil {
			r.ErrorsByKind = map[string]int64{}
		}
		kind := strconv.Itoa(code)
		if code < 0 {
			kind = "socket"
		}
		r.ErrorsByKind[kind] += n
		r.Errors += n
	}
	if r.Latency.AvgMicros > 0 {
		r.LittleLawQPS = round3(float64(s.Connections) / (r.Latency.AvgMicros / 1e6))
	}
	if r.Requests > 0 && r.Errors == r.Requests {
		return r, fmt.Errorf("http %s load on %s: all %d requests failed (%v)", s.Mode, s.URL, r.Requests, r.ErrorsByKind)
	}
	return r, nil
}
