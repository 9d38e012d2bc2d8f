package probes

import (
	"context"
	"errors"
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

// maxIdle bounds the idle phase: round trips for at most this long.
const maxIdle = 2 * time.Second

// LoadedRTT measures the round trip idle, then under load from this side to the server.
func LoadedRTT(ctx context.Context, spec LoadedSpec) (*LoadedResult, error) {
	if spec.WarmUp <= 0 {
		spec.WarmUp = time.Second
	}
	if spec.Load.Duration < spec.WarmUp+loadedTail+time.Second {
		return nil, fmt.Errorf("loaded-rtt: a load of %s leaves no time to sample after a %s warm-up", spec.Load.Duration, spec.WarmUp)
	}
	spec.UDP.defaults()
	n := int((spec.Load.Duration - spec.WarmUp - loadedTail) / spec.UDP.Interval)
	idle := spec.UDP
	idle.Count = max(1, min(n, int(maxIdle/spec.UDP.Interval)))
	idleUDP, idleRTTs, idleICMP, icmpErr, err := sampleBoth(ctx, idle)
	if err != nil {
		return nil, fmt.Errorf("idle: %w", err)
	}
	res := &LoadedResult{Streams: spec.Load.Streams, LoadSeconds: spec.Load.Duration.Seconds(), WarmUpSeconds: spec.WarmUp.Seconds(),
		Idle: idleUDP, IdleICMP: idleICMP}
	if icmpErr != nil {
		res.ICMPSkipped = icmpErr.Error()
	}
	loadCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var load *ThroughputResult
	var loadErr error
	done := make(chan struct{})
	go func() { defer close(done); load, loadErr = Throughput(loadCtx, spec.Load) }()
	select {
	case <-time.After(spec.WarmUp):
	case <-done:
		return nil, fmt.Errorf("the load ended before its warm-up: %w", loadErr)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if fault.On(fault.LoadedAfterLoad) {
		<-done
	}
	loaded := spec.UDP
	loaded.Count = n
	res.SampledFrom = time.Now().UTC()
	var loadedRTTs []time.Duration
	res.Loaded, loadedRTTs, res.LoadedICMP, _, err = sampleBoth(ctx, loaded)
	res.SampledUntil = time.Now().UTC()
	<-done
	if err != nil {
		return nil, fmt.Errorf("under load: %w", err)
	}
	if loadErr != nil {
		return nil, fmt.Errorf("the load: %w", loadErr)
	}
	res.Throughput = load
	res.AddedP50Micros = round3(res.Loaded.RTT.P50Micros - res.Idle.RTT.P50Micros)
	res.AddedP99Micros = round3(res.Loaded.RTT.P99Micros - res.Idle.RTT.P99Micros)
	res.RPM, res.IdleRPM = rpm(loadedRTTs), rpm(idleRTTs)
	return res, nil
}

// sampleBoth runs the UDP echo and, to the same host, the ICMP echo at once; an ICMP that is
// not permitted is returned as icmpErr, not as an error.
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
	if icmpErr != nil && !errors.Is(icmpErr, ErrICMPNotPermitted) && err == nil {
		err = fmt.Errorf("icmp: %w", icmpErr)
	}
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
