package probes

import (
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// DNSLoadQuery is v1alpha1.DNSLoadQuery, a type of the reports' schema.
type DNSLoadQuery = v1alpha1.DNSLoadQuery

// DNSLoad is v1alpha1.DNSLoad, a type of the reports' schema.
type DNSLoad = v1alpha1.DNSLoad

// Bounds and defaults of the DNS capacity ramp; the plugin checks its flags against them.
const (
	MaxLoadQPS        = 100000
	MinLoadQPS        = 100
	DefaultLoadQPS    = 20000
	MaxLoadBudget     = 10 * time.Minute
	DefaultLoadBudget = 2 * time.Minute
	// DefaultLoadP99 is two CFS periods (100 ms each): a CPU-limited server's throttling holds
	// some answers up to one period well below its capacity, so by default the knee is where the
	// server stops keeping up (its queue grows past a period), as a tool keeping many queries
	// outstanding (dnsperf) measures its capacity; a lower budget asks for a latency objective.
	DefaultLoadP99 = 200 * time.Millisecond
	MaxLoadMix     = 256
	loadStartQPS   = 250
	loadStepTime   = 2 * time.Second
	loadTimeout    = time.Second
	loadMaxLoss    = 0.01
	// loadMinPace is the share of the rate the answers must keep up with (stepCounts.keptPace).
	loadMinPace = 0.95
	// loadResolution is how close the ramp narrows the knee: the step that failed is at most
	// this factor above the one that passed.
	loadResolution = 1.05
	// loadGeneratorShare is the share of a step's rate the agent must send for the step to be
	// judged: below it the agent, not the server, was the limit.
	loadGeneratorShare = 0.95
)

// DNSLoadSpec configures the capacity ramp.
type DNSLoadSpec struct {
	Mix     []DNSLoadQuery
	Lookups int
	// Servers are the nameserver first, then its replicas, each ramped in turn.
	Servers []DNSReplica
	Ceiling float64
	Budget  time.Duration
	P99     time.Duration
}

// RunDNSLoad ramps every server in turn, each within an equal share of the budget.
func RunDNSLoad(ctx context.Context, spec DNSLoadSpec) (*DNSLoad, error) {
	mix, err := packMix(spec.Mix)
	if err != nil {
		return nil, err
	}
	if len(mix) == 0 || len(spec.Servers) == 0 {
		return nil, fmt.Errorf("dns load: no queries or no servers")
	}
	res := &DNSLoad{Mix: spec.Mix, Lookups: spec.Lookups, P99BudgetMicros: micros(spec.P99.Seconds()), MaxLossRatio: loadMaxLoss, MinPaceRatio: loadMinPace,
		TimeoutMillis: float64(loadTimeout.Milliseconds()), StepSeconds: loadStepTime.Seconds(), CeilingQPS: spec.Ceiling, BudgetSeconds: spec.Budget.Seconds()}
	// Each server an equal share, but at least loadMinShare: the servers past what the budget
	// holds are listed, not ramped.
	ramped := max(1, min(len(spec.Servers), int(spec.Budget/loadMinShare)))
	share := spec.Budget / time.Duration(ramped)
	stop := ""
	for i, s := range spec.Servers {
		sl := v1alpha1.DNSServerLoad{Limit: stop}
		switch {
		case stop != "":
		case i >= ramped:
			sl.Limit = v1alpha1.LoadLimitBudget
		default:
			r := ramp{server: net.JoinHostPort(s.Address, "53"), mix: mix, ceiling: spec.Ceiling, p99: spec.P99, until: time.Now().Add(share)}
			sl = r.run(ctx)
		}
		sl.DNSReplica, sl.Nameserver = s, i == 0
		res.Servers = append(res.Servers, sl)
		if sl.Limit == v1alpha1.LoadLimitErrors || sl.Limit == v1alpha1.LoadLimitCancelled {
			stop = sl.Limit // no server is loaded after errors or an interrupt
		}
	}
	return res, nil
}

// loadMinShare is the least time a server's ramp gets: about the ten steps a knee takes.
const loadMinShare = 30 * time.Second

// ramp finds one server's knee: the rate doubles from loadStartQPS while steps pass, then the
// span between the last step that passed and the first that failed is halved (geometrically)
// until it is within loadResolution.
type ramp struct {
	server  string
	mix     []packedQuery
	ceiling float64
	p99     time.Duration
	until   time.Time
}

func (r ramp) run(ctx context.Context) v1alpha1.DNSServerLoad {
	out := v1alpha1.DNSServerLoad{}
	good, bad, goodSent := 0.0, 0.0, 0.0
	rate := min(float64(loadStartQPS), r.ceiling)
	for {
		if time.Until(r.until) < loadStepTime+loadTimeout+loadSettle {
			out.Limit = v1alpha1.LoadLimitBudget
			break
		}
		st, limit := r.step(ctx, rate)
		out.Steps = append(out.Steps, st)
		if limit != "" {
			out.Limit = limit
			break
		}
		if st.Degraded == "" {
			good, goodSent = rate, min(rate, st.SentQPS)
		} else {
			bad = rate
			settle(ctx) // the next step must not inherit this one's queue and throttling
		}
		next, limit := nextRate(good, bad, r.ceiling)
		if limit != "" {
			out.Limit = limit
			break
		}
		rate = next
	}
	out.SustainedQPS = goodSent // what went out, when the agent fell just short of the rate
	return out
}

// loadSettle is the pause after a degraded step: long enough for an overloaded server to empty
// its socket queue and for a CPU-limited one's throttled periods to pass.
const loadSettle = time.Second

func settle(ctx context.Context) {
	select {
	case <-ctx.Done():
	case <-time.After(loadSettle):
	}
}

// LoadStartQPS is the capacity ramp's first rate; LoadGeneratorShare the share of a step's
// rate a generator must send for the step to be judged.
const (
	LoadStartQPS       = loadStartQPS
	LoadGeneratorShare = loadGeneratorShare
)

// NextLoadRate is the ramp's next rate after the highest rate that passed (good) and the
// lowest that failed (bad), each 0 while there is none; or a limit that ends the ramp:
// LoadLimitDegraded once the two are within the ramp's resolution (the knee is good),
// LoadLimitCeiling when the ceiling passed. A reference generator ramped by hand
// (bench-lab's dnsperf) is searched by it, so that both knees come from the same search.
func NextLoadRate(good, bad, ceiling float64) (float64, string) { return nextRate(good, bad, ceiling) }

// nextRate is the ramp's next rate, or why it ends.
func nextRate(good, bad, ceiling float64) (float64, string) {
	switch {
	case bad == 0 && good >= ceiling:
		return 0, v1alpha1.LoadLimitCeiling
	case bad == 0:
		return min(2*good, ceiling), ""
	case good == 0 && bad <= loadStartQPS/8.0:
		return 0, v1alpha1.LoadLimitDegraded // degraded even at a trickle
	case good == 0:
		return bad / 2, ""
	case bad/good <= loadResolution:
		return 0, v1alpha1.LoadLimitDegraded
	}
	return math.Sqrt(good * bad), ""
}

// step holds one rate and judges it; a limit ends the ramp (errors, the generator, a cancel).
func (r ramp) step(ctx context.Context, rate float64) (v1alpha1.DNSLoadStep, string) {
	ls := loadStep{server: r.server, mix: r.mix, rate: rate, d: loadStepTime, timeout: loadTimeout,
		behind: max(100, int(rate*(r.p99.Seconds()*4+0.05)))}
	if fault.On(fault.LoadRateInflated) {
		ls.rate, ls.d = rate/2, loadStepTime*2 // the same count of queries, half the rate
	}
	c, err := ls.run(ctx)
	if fault.On(fault.LoadRateInflated) {
		c.elapsed /= 2
		for i := range c.arrivals {
			c.arrivals[i] /= 2
		}
	}
	st := v1alpha1.DNSLoadStep{OfferedQPS: rate}
	if err != nil {
		st.Degraded = err.Error()
		return st, v1alpha1.LoadLimitErrors
	}
	slices.Sort(c.latencies)
	lat := latencyOfSorted(c.latencies)
	st.Seconds = c.elapsed.Seconds()
	st.Sent, st.Answered, st.Lost, st.Errors = c.sent, len(c.latencies), c.sent-len(c.latencies), c.errors
	st.SentQPS, st.AnsweredQPS = float64(c.sent)/st.Seconds, float64(len(c.latencies))/st.Seconds
	st.P50Micros, st.P99Micros = lat.P50Micros, lat.P99Micros
	st.KeptPace = c.keptPace(rate)
	st.Degraded = judgeStep(st, r.p99, c.stoppedEarly)
	switch {
	case ctx.Err() != nil:
		return st, v1alpha1.LoadLimitCancelled
	case st.Errors > 0:
		return st, v1alpha1.LoadLimitErrors
	case c.stoppedEarly == "" && st.SentQPS < loadGeneratorShare*rate:
		st.Degraded = fmt.Sprintf("the agent sent %.0f of %.0f queries/s: the generator, not the server, was the limit", st.SentQPS, rate)
		return st, v1alpha1.LoadLimitGenerator
	}
	return st, ""
}

// judgeStep says why a step failed the criteria, "" when it passed.
func judgeStep(st v1alpha1.DNSLoadStep, p99 time.Duration, stoppedEarly string) string {
	switch {
	case stoppedEarly != "":
		return stoppedEarly
	case st.Errors > 0:
		return fmt.Sprintf("%d answers SERVFAIL or REFUSED", st.Errors)
	case float64(st.Lost) > loadMaxLoss*float64(st.Sent):
		return fmt.Sprintf("%d of %d queries unanswered within %s", st.Lost, st.Sent, loadTimeout)
	case st.KeptPace < loadMinPace:
		return fmt.Sprintf("answers kept pace with %.0f %% of the rate in the step's second half: the server fell behind", 100*st.KeptPace)
	case st.P99Micros > micros(p99.Seconds()):
		return fmt.Sprintf("p99 %.0f µs over the budget %.0f µs", st.P99Micros, micros(p99.Seconds()))
	}
	return ""
}
