package probes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"

	"github.com/miekg/dns"

	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// RaceMode is v1alpha1.RaceMode, a type of the reports' schema.
type RaceMode = v1alpha1.RaceMode

// The ways resolvers send A and AAAA (see v1alpha1.RaceTogether and the others).
const (
	RaceTogether   = v1alpha1.RaceTogether
	RaceSequential = v1alpha1.RaceSequential
	RaceReopen     = v1alpha1.RaceReopen
	RaceSeparate   = v1alpha1.RaceSeparate
	RaceTCP        = v1alpha1.RaceTCP
)

// MaxRaceLookups bounds --race; RaceBudget bounds how long one run of it may take.
const (
	MaxRaceLookups  = 10000
	RaceBudget      = 2 * time.Minute
	raceConcurrency = 8
)

// RaceModeOf is how resolver k with configuration c sends A and AAAA ("" over TCP: use-vc).
func RaceModeOf(k resolver.Kind, c resolver.Config) RaceMode {
	switch {
	case k == resolver.Go:
		return RaceSeparate
	case k == resolver.Musl:
		return RaceTogether // musl has no options to change it
	case c.UseVC:
		return ""
	case c.SingleRequestReopen:
		return RaceReopen
	case c.SingleRequest:
		return RaceSequential
	}
	return RaceTogether
}

// DNSRaceRun is v1alpha1.DNSRaceRun, a type of the reports' schema.
type DNSRaceRun = v1alpha1.DNSRaceRun

// DNSRace is v1alpha1.DNSRace, a type of the reports' schema.
type DNSRace = v1alpha1.DNSRace

// raceTimeouts is how long resolver k waits for an attempt's answers, and how many attempts it
// makes: glibc and Go wait the whole timeout per attempt; musl resends what is unanswered every
// timeout ÷ attempts until the timeout.
func raceTimeouts(k resolver.Kind, c resolver.Config) (time.Duration, int) {
	timeout, attempts := time.Duration(max(c.TimeoutSeconds, 1))*time.Second, max(c.Attempts, 1)
	if k == resolver.Musl {
		return timeout / time.Duration(attempts), attempts
	}
	return timeout, attempts
}

// runRace is the race check of the DNS probe: n lookups of name as resolver k sends them and,
// for glibc sending both at once, the same with single-request-reopen.
func runRace(ctx context.Context, k resolver.Kind, c resolver.Config, server, name string, n int) *DNSRace {
	timeout, attempts := raceTimeouts(k, c)
	r := &DNSRace{Name: name, TimeoutSeconds: max(c.TimeoutSeconds, 1), Attempts: attempts, Concurrency: raceConcurrency}
	m := RaceModeOf(k, c)
	if m == "" {
		r.Measured = DNSRaceRun{Mode: RaceTCP}
		return r
	}
	r.Measured = raceCheck(ctx, server, name, m, n, timeout, attempts)
	if k == resolver.Glibc && m == RaceTogether && ctx.Err() == nil {
		fix := raceCheck(ctx, server, name, RaceReopen, n, timeout, attempts)
		r.Fix = &fix
	}
	return r
}

// raceLookup is one lookup's outcome.
type raceLookup struct {
	took         time.Duration
	lost         int
	slow, failed bool
}

// raceCheck looks name up n times in mode m against server, raceConcurrency at a time, each
// lookup with its own sockets (as a new thread's resolver state: glibc keeps single-request for
// a thread's life once a lookup of it has stalled). It stops early at RaceBudget.
func raceCheck(ctx context.Context, server, name string, m RaceMode, n int, timeout time.Duration, attempts int) DNSRaceRun {
	ctx, cancel := context.WithTimeout(ctx, RaceBudget)
	defer cancel()
	jobs := make(chan struct{})
	results := make(chan raceLookup)
	var wg sync.WaitGroup
	for range raceConcurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range jobs {
				results <- raceOnce(ctx, server, name, m, timeout, attempts)
			}
		}()
	}
	go func() {
		defer close(jobs)
		for i := 0; i < n && ctx.Err() == nil; i++ {
			select {
			case jobs <- struct{}{}:
			case <-ctx.Done():
			}
		}
	}()
	go func() { wg.Wait(); close(results) }()
	run := DNSRaceRun{Mode: m}
	var took []time.Duration
	for r := range results {
		if ctx.Err() != nil && r.failed && r.took < timeout {
			continue // cut short by the budget, not by the network
		}
		run.Lookups++
		run.Lost += r.lost
		took = append(took, r.took)
		if r.slow {
			run.Slow++
		}
		if r.failed {
			run.Failed++
		}
	}
	run.Latency = LatencyFromSamples(took)
	return run
}

// raceOnce does one lookup (A and AAAA of name) the way mode m sends them.
func raceOnce(ctx context.Context, server, name string, m RaceMode, timeout time.Duration, attempts int) raceLookup {
	start := time.Now()
	var out raceLookup
	want := []uint16{dns.TypeA, dns.TypeAAAA}
	for attempt := 0; attempt < max(attempts, 1) && len(want) > 0 && ctx.Err() == nil; attempt++ {
		mode := m
		if attempt > 0 && m == RaceTogether {
			mode = RaceSequential // glibc retries one at a time after a stall; musl's resends are as good
		}
		if fault.On(fault.RaceSeparate) && mode == RaceTogether {
			mode = RaceSeparate
		}
		got, err := raceAttempt(ctx, server, name, want, mode, timeout)
		if err != nil && !errors.Is(err, errRaceTimeout) {
			out.failed = true
			break
		}
		out.lost += len(want) - len(got)
		want = missing(want, got)
		if len(want) > 0 {
			out.slow = true
		}
	}
	out.failed = out.failed || len(want) > 0
	out.took = time.Since(start)
	return out
}

var errRaceTimeout = errors.New("no answer within the timeout")

// raceAttempt sends the queries for types once in mode m and returns the types answered.
func raceAttempt(ctx context.Context, server, name string, types []uint16, m RaceMode, timeout time.Duration) ([]uint16, error) {
	dial := func() (*dns.Conn, error) {
		d := net.Dialer{Timeout: timeout}
		c, err := d.DialContext(ctx, "udp", server)
		if err != nil {
			return nil, fmt.Errorf("dialing %s: %w", server, err)
		}
		return &dns.Conn{Conn: c}, nil
	}
	switch m {
	case RaceSeparate:
		var mu sync.Mutex
		var got []uint16
		var wg sync.WaitGroup
		for _, t := range types {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if c, err := dial(); err == nil {
					defer c.Close()
					if a, _ := exchangeAll(c, name, []uint16{t}, timeout); len(a) == 1 {
						mu.Lock()
						got = append(got, t)
						mu.Unlock()
					}
				}
			}()
		}
		wg.Wait()
		return got, nil
	case RaceTogether:
		c, err := dial()
		if err != nil {
			return nil, err
		}
		defer c.Close()
		return exchangeAll(c, name, types, timeout)
	}
	var got []uint16 // one at a time: on one socket, or a new one for each (reopen)
	c, err := dial()
	if err != nil {
		return nil, err
	}
	defer func() { c.Close() }()
	for i, t := range types {
		if i > 0 && m == RaceReopen {
			c.Close()
			if c, err = dial(); err != nil {
				return got, err
			}
		}
		a, err := exchangeAll(c, name, []uint16{t}, timeout)
		got = append(got, a...)
		if err != nil {
			return got, err
		}
	}
	return got, nil
}

// exchangeAll writes a query per type on c, back to back, and reads answers until each has one
// or timeout passes; it returns the types answered.
func exchangeAll(c *dns.Conn, name string, types []uint16, timeout time.Duration) ([]uint16, error) {
	ids := map[uint16]uint16{}
	for _, t := range types {
		m := new(dns.Msg)
		m.SetQuestion(name, t)
		m.RecursionDesired = true
		if err := c.WriteMsg(m); err != nil {
			return nil, fmt.Errorf("sending: %w", err)
		}
		ids[m.Id] = t
	}
	_ = c.SetReadDeadline(time.Now().Add(timeout))
	var got []uint16
	for len(got) < len(types) {
		r, err := c.ReadMsg()
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				return got, errRaceTimeout
			}
			if errors.Is(err, syscall.ECONNREFUSED) {
				return got, fmt.Errorf("reading: %w", err)
			}
			continue // a malformed datagram: keep waiting for the real answers
		}
		if t, ok := ids[r.Id]; ok && r.Response {
			delete(ids, r.Id)
			got = append(got, t)
		}
	}
	return got, nil
}

func missing(want, got []uint16) []uint16 {
	var out []uint16
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || g == w
		}
		if !found {
			out = append(out, w)
		}
	}
	return out
}
