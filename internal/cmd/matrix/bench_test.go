package matrix

import (
	"context"
	"io"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/placement"
)

// heapPeak samples the live heap every millisecond until stop is called and returns the peak
// above what was live when it started.
func heapPeak() (stop func() uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	runtime.GC()
	base := read()
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		for {
			if v := read(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() uint64 {
		close(done)
		if p := peak.Load(); p > base {
			return p - base
		}
		return 0
	}
}

// BenchmarkMatrixOrchestration plans and runs a whole matrix against a fake cluster of N nodes
// (agents answer at once): what the plugin itself costs at each size, apart from the measuring.
// ns/op is one whole run (plan, place, measure with instant agents, report, clean up); reported
// per run besides: API calls (the clientset's and the proxied jobs), pairs, agents, the time
// to plan alone (list the nodes, choose the pairs, schedule the rounds) and the peak heap.
// `make bench-matrix` writes the table to benchmarks/MATRIX.md.
func BenchmarkMatrixOrchestration(b *testing.B) {
	for _, sc := range []struct {
		scope string
		nodes []int
	}{{placement.ScopeZones, []int{10, 100, 1000, 5000}}, {placement.ScopeSample, []int{10, 100, 1000, 5000}}, {placement.ScopeNodes, []int{10, 30, 100}}} {
		for _, n := range sc.nodes {
			b.Run(sc.scope+"/nodes="+strconv.Itoa(n), func(b *testing.B) {
				var calls, pairs, agents, planNs, peak float64
				for b.Loop() {
					b.StopTimer()
					f := fakecluster.NewFleet(n, 3)
					o := matrixOptions(f, io.Discard)
					o.Scope, o.Concurrency, o.MaxPairs = sc.scope, 100, n*n
					if sc.scope == placement.ScopeSample {
						o.Sample = n
					}
					if err := o.Validate(nil); err != nil {
						b.Fatal(err)
					}
					start := time.Now()
					r := &matrixRun{o: o, rep: newMatrixReport(o, start)}
					r.timer = cmdutil.NewPhaseTimer(&r.rep.Timing, start)
					if err := r.Plan(context.Background()); err != nil {
						b.Fatal(err)
					}
					planNs += float64(time.Since(start))
					b.StartTimer()
					stop := heapPeak()
					if err := o.Run(context.Background()); err != nil {
						b.Fatal(err)
					}
					peak += float64(stop())
					calls, pairs, agents = float64(f.APICalls()), float64(len(r.pairs)), float64(len(r.agentNodes()))
				}
				runs := float64(b.N)
				b.ReportMetric(calls, "api-calls/run")
				b.ReportMetric(pairs, "pairs/run")
				b.ReportMetric(agents, "agents/run")
				b.ReportMetric(planNs/runs/1e6, "plan-ms/run")
				b.ReportMetric(peak/runs/(1<<20), "peak-heap-MiB/run")
			})
		}
	}
}
