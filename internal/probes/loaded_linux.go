package probes

import (
	"context"
	"fmt"
	"net"
	"slices"
	"sync"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// LoadedResult is v1alpha1.LoadedResult, a type of the reports' schema.
type LoadedResult = v1alpha1.LoadedResult

// LoadedSpec configures a loaded-rtt probe: UDP's round trips (and ICMP's to the same host)
// at UDP.Interval, first idle, then while Load runs; Load.Duration is the load's length, of
// which the first WarmUp and the last tail are not sampled.
type LoadedSpec struct {
	UDP    UDPSpec
	Load   ThroughputSpec
	WarmUp time.Duration
}

// loadedTail is how long before the load's end the loaded samples stop.
const loadedTail = 500 * time.Millisecond

// loadedTimeout is how long a loaded sample waits for its answer before it counts as lost.
const loadedTimeout = 3 * time.Second

// maxIdle bounds the idle phase: round trips for at most this long.
const maxIdle = 2 * time.Second

// MaxLoadedSeconds bounds a loaded-rtt probe's load: it saturates the application's path on
// purpose, and its application shares the queue it builds.
const MaxLoadedSeconds = 60

// LoadedRTT measures the round trip idle, then under load from this side to the server. The
// loaded samples start WarmUp after the streams started sending and are sent until loadedTail
// before they stop.
func LoadedRTT(ctx context.Context, spec LoadedSpec) (*LoadedResult, error) {
	if spec.WarmUp <= 0 {
		spec.WarmUp = time.Second
	}
	spec.UDP.defaults()
	if spec.Load.Duration < spec.WarmUp+loadedTail+time.Second || spec.Load.Duration > MaxLoadedSeconds*time.Second {
		return nil, fmt.Errorf("loaded-rtt: a load of %s: want %s to %ds", spec.Load.Duration, spec.WarmUp+loadedTail+time.Second, MaxLoadedSeconds)
	}
	n := int((spec.Load.Duration - spec.WarmUp - loadedTail) / spec.UDP.Interval)
	idle := spec.UDP
	idle.Count = max(1, min(n, int(maxIdle/spec.UDP.Interval)))
	idleUDP, idleRTTs, idleICMP, icmpErr, err := sampleBoth(ctx, idle)
	if err != nil {
		return nil, fmt.Errorf("idle: %w", err)
	}
	res := &LoadedResult{Streams: spec.Load.Streams, LoadSeconds: spec.Load.Duration.Seconds(), WarmUpSeconds: spec.WarmUp.Seconds(), Idle: idleUDP}
	loadCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	started := make(chan time.Time, 1)
	spec.Load.Started = func(start, _ time.Time) { started <- start }
	var load *ThroughputResult
	var loadErr error
	done := make(chan struct{})
	go func() { defer close(done); load, loadErr = Throughput(loadCtx, spec.Load) }()
	if err := warmUp(ctx, started, done, spec.WarmUp, &loadErr); err != nil {
		return nil, err
	}
	if fault.On(fault.LoadedAfterLoad) {
		<-done
	}
	loaded := spec.UDP
	// A round trip of a second or more is bufferbloat to report, not a loss.
	loaded.Count, loaded.Timeout = n, loadedTimeout
	from := time.Now()
	var loadedRTTs []time.Duration
	var loadedICMP *RTTResult
	var icmpLoadedErr error
	res.Loaded, loadedRTTs, loadedICMP, icmpLoadedErr, err = sampleBoth(ctx, loaded)
	// The sends' span: the last answers may come later, but no later sample was taken.
	res.SampledFrom, res.SampledUntil = from.UTC(), from.Add(time.Duration(n)*spec.UDP.Interval).UTC()
	if err != nil {
		cancel() // no sense in saturating the path any longer
		<-done
		return nil, fmt.Errorf("under load: %w", err)
	}
	<-done
	if loadErr != nil {
		return nil, fmt.Errorf("the load: %w", loadErr)
	}
	res.Throughput = load
	if icmpErr == nil {
		icmpErr = icmpLoadedErr
	}
	res.IdleICMP, res.LoadedICMP, res.ICMPSkipped = icmpPair(idleICMP, loadedICMP, icmpErr)
	res.AddedP50Micros = round3(res.Loaded.RTT.P50Micros - res.Idle.RTT.P50Micros)
	res.AddedP99Micros = round3(res.Loaded.RTT.P99Micros - res.Idle.RTT.P99Micros)
	res.RPM, res.IdleRPM = rpm(loadedRTTs), rpm(idleRTTs)
	return res, nil
}

// warmUp waits until the load has sent for d; an error when it ended before, or ctx did.
func warmUp(ctx context.Context, started <-chan time.Time, done <-chan struct{}, d time.Duration, loadErr *error) error {
	var start time.Time
	select {
	case start = <-started:
	case <-done:
		return fmt.Errorf("the load did not start: %w", *loadErr)
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-time.After(time.Until(start.Add(d))):
		return nil
	case <-done:
		return fmt.Errorf("the load ended before its warm-up: %w", *loadErr)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// icmpPair keeps the ICMP echoes only when both phases got answers; otherwise it says why not.
func icmpPair(idle, loaded *RTTResult, err error) (*RTTResult, *RTTResult, string) {
	switch {
	case err != nil:
		return nil, nil, err.Error()
	case idle == nil || loaded == nil || idle.Received == 0 || loaded.Received == 0:
		return nil, nil, "no ICMP echo answered in one of the phases (ICMP blocked on the way?)"
	}
	return idle, loaded, ""
}

// sampleBoth runs the UDP echo and, to the same host, the ICMP echo at once; ICMP's failure
// (not permitted, or any other) is returned as icmpErr, never as err.
func sampleBoth(ctx context.Context, spec UDPSpec) (udp *RTTResult, rtts []time.Duration, icmp *RTTResult, icmpErr, err error) {
	host, _, splitErr := net.SplitHostPort(spec.Target)
	if splitErr != nil {
		return nil, nil, nil, nil, splitErr
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r := spec.RTTSpec
		r.Target = host
		icmp, icmpErr = ICMPRTT(ctx, r)
	}()
	udp, rtts, err = udpEcho(ctx, spec)
	wg.Wait()
	return udp, rtts, icmp, icmpErr, err
}

// rpm is round trips per minute: 60 s over the trimmed mean of the round trips (the lowest
// 95 % of them, nearest rank).
func rpm(rtts []time.Duration) float64 {
	if len(rtts) == 0 {
		return 0
	}
	s := slices.Clone(rtts)
	slices.Sort(s)
	keep := max(1, (len(s)*95+99)/100)
	var sum time.Duration
	for _, d := range s[:keep] {
		sum += d
	}
	mean := sum / time.Duration(keep)
	if mean <= 0 {
		return 0
	}
	return round3(float64(time.Minute) / float64(mean))
}
