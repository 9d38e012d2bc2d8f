package reftools

import (
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// DNSPerf is one dnsperf run at a fixed rate for a step of Seconds.
type DNSPerf struct {
	Rate, Seconds, P99Micros float64 // asked, the step's length, the answers' p99 (+Inf: none)
	Sent, Completed, Lost    int
	// Failures are the answers with a server failure (SERVFAIL, REFUSED): the ramp ends at them.
	Failures int
}

// Degraded says why the run fails the capacity ramp's criteria — at most MaxLossRatio of the
// queries lost, the p99 within its budget, answers keeping pace with MinPaceRatio of the rate
// (answers completed over the step's length: dnsperf's own "queries per second" divides by
// the time to its last answer, which one late answer stretches) — or "" when it sustained
// the rate.
func (d DNSPerf) Degraded(l *v1alpha1.DNSLoad) string {
	switch {
	case float64(d.Lost) > l.MaxLossRatio*float64(d.Sent):
		return "loss"
	case d.P99Micros > l.P99BudgetMicros:
		return "p99"
	case float64(d.Completed) < l.MinPaceRatio*d.Rate*d.Seconds:
		return "pace"
	}
	return ""
}

// Fault says why the run cannot be judged at all: dnsperf, not the server, fell short of the
// rate (it sent less than minShare of it), or the server answered with failures.
func (d DNSPerf) Fault(minShare float64) error {
	switch {
	case float64(d.Sent) < minShare*d.Rate*d.Seconds:
		return fmt.Errorf("dnsperf sent %d queries in %g s at %.0f q/s: the generator, not the server, was the limit", d.Sent, d.Seconds, d.Rate)
	case d.Failures > 0:
		return fmt.Errorf("dnsperf at %.0f q/s: %d answers were SERVFAIL or REFUSED", d.Rate, d.Failures)
	}
	return nil
}

func (d DNSPerf) String() string {
	return fmt.Sprintf("%.0f q/s: %d of %d answered in %g s, %d lost, p99 %.0f µs", d.Rate, d.Completed, d.Sent, d.Seconds, d.Lost, d.P99Micros)
}

// WriteDNSMix writes a capacity ramp's query mix as dnsperf's data file: "NAME TYPE" per line.
func WriteDNSMix(path string, mix []v1alpha1.DNSLoadQuery) error {
	var b strings.Builder
	for _, q := range mix {
		fmt.Fprintf(&b, "%s %s\n", q.Name, q.Type)
	}
	return os.WriteFile(path, []byte(b.String()), 0o644)
}

// DNSPerfSockets is how many sockets dnsperf sends from (-c): as many as the capacity ramp's.
const DNSPerfSockets = probes.LoadSockets

// DNSPerfStep runs dnsperf at rate against server for one of the ramp's steps (its length and
// its timeout; DNSPerfSockets sockets; outstanding queries unbounded in effect, so that it sends at the
// rate, open loop, as the ramp does), every query's latency printed (-v) for the p99.
func DNSPerfStep(run Runner, server, mixFile string, rate float64, l *v1alpha1.DNSLoad) (DNSPerf, error) {
	out, err := run("dnsperf", "-s", server, "-d", mixFile, "-l", strconv.FormatFloat(l.StepSeconds, 'f', -1, 64),
		"-t", strconv.FormatFloat(l.TimeoutMillis/1000, 'f', -1, 64), "-c", strconv.Itoa(DNSPerfSockets), "-q", "20000", "-Q", strconv.Itoa(int(rate)), "-v").CombinedOutput()
	if err != nil {
		return DNSPerf{}, fmt.Errorf("dnsperf %s: %w: %s", server, err, tailOf(out))
	}
	return parseDNSPerf(out, float64(int(rate)), l.StepSeconds)
}

var (
	dnsperfCompleted = regexp.MustCompile(`Queries completed:\s+([0-9]+)`)
	dnsperfLost      = regexp.MustCompile(`Queries lost:\s+([0-9]+)`)
	dnsperfSent      = regexp.MustCompile(`Queries sent:\s+([0-9]+)`)
	dnsperfLatency   = regexp.MustCompile(`(?m)^> \S+ \S+ \S+ ([0-9.]+)$`)
	dnsperfFailures  = regexp.MustCompile(`\b(?:SERVFAIL|REFUSED) ([0-9]+) \(`)
)

func parseDNSPerf(out []byte, rate, seconds float64) (DNSPerf, error) {
	d := DNSPerf{Rate: rate, Seconds: seconds, P99Micros: math.Inf(1)}
	var nums [3]int
	for i, re := range []*regexp.Regexp{dnsperfCompleted, dnsperfLost, dnsperfSent} {
		m := re.FindSubmatch(out)
		if m == nil {
			return d, fmt.Errorf("dnsperf: no %s in: %s", re, tailOf(out))
		}
		nums[i], _ = strconv.Atoi(string(m[1]))
	}
	d.Completed, d.Lost, d.Sent = nums[0], nums[1], nums[2]
	for _, m := range dnsperfFailures.FindAllSubmatch(out, -1) {
		n, _ := strconv.Atoi(string(m[1]))
		d.Failures += n
	}
	var lat []float64
	for _, m := range dnsperfLatency.FindAllSubmatch(out, -1) {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		lat = append(lat, v*1e6)
	}
	slices.Sort(lat)
	if len(lat) > 0 {
		d.P99Micros = lat[min(len(lat)-1, int(math.Ceil(0.99*float64(len(lat))))-1)]
	}
	return d, nil
}

// tailOf is the end of a long output.
func tailOf(b []byte) string {
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// DNSPerfVersion is dnsperf's version as its usage prints it ("dnsperf 2.10.0").
func DNSPerfVersion() string {
	out, _ := exec.Command("dnsperf", "-h").CombinedOutput()
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(l), "Version "); ok {
			return "dnsperf " + v
		}
	}
	return "dnsperf: version unknown"
}

// DNSPerfKnee ramps dnsperf against server by the plugin's own search (probes.NextLoadRate,
// from probes.LoadStartQPS up to l's ceiling) at l's step length and timeout, and judges each
// step by the report's criteria on dnsperf's own figures: the rate sent at the highest step
// that passed.
func DNSPerfKnee(in Runner, server, mixFile string, l *v1alpha1.DNSLoad) (float64, error) {
	good, bad, sent := 0.0, 0.0, 0.0
	rate := min(float64(probes.LoadStartQPS), l.CeilingQPS)
	for range 40 {
		d, err := DNSPerfStep(in, server, mixFile, rate, l)
		if err == nil {
			err = d.Fault(probes.LoadGeneratorShare)
		}
		if err != nil {
			return 0, err
		}
		if d.Degraded(l) == "" {
			good, sent = rate, min(rate, float64(d.Sent)/l.StepSeconds)
		} else {
			bad = rate
			time.Sleep(time.Second) // as the ramp settles after a degraded step
		}
		next, limit := probes.NextLoadRate(good, bad, l.CeilingQPS)
		switch limit {
		case "":
			rate = next
		case v1alpha1.LoadLimitDegraded:
			return sent, nil
		default:
			return 0, fmt.Errorf("dnsperf's ramp ended by %q at %.0f q/s", limit, rate)
		}
	}
	return 0, errors.New("dnsperf's ramp found no knee in 40 steps")
}
