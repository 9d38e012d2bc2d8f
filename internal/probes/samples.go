package probes

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"fortio.org/fortio/periodic"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
)

// MaxExactSamples bounds the latencies a request probe keeps (8 MiB of them, and up to as much
// again while the slice grows): below it every
// percentile is a latency some request really had; above it the percentiles come from a uniform
// random sample of this many requests (reservoir sampling), and Latency.PercentilesFrom says so.
// Count, min, max, mean and standard deviation always cover every request.
const MaxExactSamples = 1 << 20

// sampleRecorder receives every request's latency from fortio's runner (as its AccessLogger,
// right after each request, with the latency the runner measured). fortio's own histogram is
// not used for percentiles: its buckets widen with the value (1 ms wide at 9–10 ms, 10 ms wide
// from 10 to 20 ms at a 10 µs resolution), so a percentile interpolated inside one of them can
// be a latency no request had.
type sampleRecorder struct {
	mu      sync.Mutex
	keep    int
	samples []time.Duration
	seen    int64
	min     time.Duration
	max     time.Duration
	sum     float64 // µs
	sumSq   float64 // µs²
	rng     *rand.Rand
}

func newSampleRecorder(keep int) *sampleRecorder {
	return &sampleRecorder{keep: keep, rng: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

var _ periodic.AccessLogger = (*sampleRecorder)(nil)

func (r *sampleRecorder) Start(ctx context.Context, _ periodic.ThreadID, _ int64, _ time.Time) context.Context {
	return ctx
}

func (r *sampleRecorder) Info() string { return "every request's latency, in memory" }

func (r *sampleRecorder) Report(_ context.Context, _ periodic.ThreadID, _ int64, _ time.Time, latency float64, _ bool, _ string) {
	r.add(time.Duration(math.Round(latency * 1e9)))
}

func (r *sampleRecorder) add(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen++
	if r.seen == 1 || d < r.min {
		r.min = d
	}
	if d > r.max {
		r.max = d
	}
	us := float64(d) / 1e3
	r.sum += us
	r.sumSq += us * us
	if len(r.samples) < r.keep {
		r.samples = append(r.samples, d)
		return
	}
	// Algorithm R: the n-th request replaces a kept one with probability keep/n.
	if j := r.rng.Int64N(r.seen); j < int64(r.keep) {
		r.samples[j] = d
	}
}

// latency summarises what was recorded: exact when every request was kept.
func (r *sampleRecorder) latency() Latency {
	r.mu.Lock()
	defer r.mu.Unlock()
	slices.Sort(r.samples) // in place: no second copy of up to 8 MiB
	l := latencyOfSorted(r.samples)
	if fault.On(fault.LatencyFromBuckets) {
		l = bucketPercentiles(r.samples, l)
	}
	if r.seen <= int64(len(r.samples)) {
		return l
	}
	n := float64(r.seen)
	avg := r.sum / n
	l.PercentilesFrom = l.Count
	l.Count = r.seen
	l.MinMicros = round3(float64(r.min) / 1e3)
	l.MaxMicros = round3(float64(r.max) / 1e3)
	l.AvgMicros = round3(avg)
	l.StdDevMicros = round3(math.Sqrt(math.Max(0, r.sumSq/n-avg*avg)))
	return l
}

// RecordLatencies makes fortio's runner hand every request's latency to a recorder, and returns
// the function that summarises them once the run is over (exact percentiles up to
// MaxExactSamples requests).
func RecordLatencies(o *periodic.RunnerOptions) func() Latency {
	r := newSampleRecorder(MaxExactSamples)
	o.AccessLogger = r
	return r.latency
}

// ErrLatencyCount means the recorder did not see the requests fortio counted: the percentiles
// would not describe the run.
var ErrLatencyCount = errors.New("request latencies recorded do not match the requests made")

func sameCount(l Latency, requests int64) error {
	if l.Count != requests {
		return fmt.Errorf("%w: %d recorded, %d made", ErrLatencyCount, l.Count, requests)
	}
	return nil
}

// abortOnCancel aborts a fortio run when ctx ends before it does; call the function it returns
// once the run is over. fortio's runner takes the aborter out of its options when it starts
// (o.Stop = nil), so callers keep their own reference and pass it here.
func abortOnCancel(ctx context.Context, stop *periodic.Aborter) (release func()) {
	done := make(chan struct{})
	go func() {
		select {
		case <-ctx.Done():
			stop.Abort(false)
		case <-done:
		}
	}()
	return func() { close(done) }
}
