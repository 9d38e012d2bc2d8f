package probes

import (
	"context"
	"net"
	"slices"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// Straight handshakes: each target gets at least minStraight of them however few connections
// go through the Service; each waits straightTimeout at most, and a target that failed
// maxStraightFailures times in a row is not dialled again.
const (
	minStraight         = 10
	straightTimeout     = time.Second
	maxStraightFailures = 3
)

// handshakes collects the spread probe's TCP handshake times: through the Service by the
// endpoint that answered, and straight to each endpoint agent (and DST's) in turn.
type handshakes struct {
	dialer   *net.Dialer
	next     int               // the next straight target, round-robin
	inARow   map[string]int    // straight failures in a row, by target
	targets  []string          // pods in order, then "" for DST
	addrs    map[string]string // by target
	who      map[string]spreadAnswer
	svc      map[string][]time.Duration
	straight map[string][]time.Duration
	failed   map[string]int
}

func newHandshakes(spec SpreadSpec) *handshakes {
	h := &handshakes{dialer: &net.Dialer{Timeout: straightTimeout}, inARow: map[string]int{}, addrs: map[string]string{}, who: map[string]spreadAnswer{}, svc: map[string][]time.Duration{},
		straight: map[string][]time.Duration{}, failed: map[string]int{}}
	for pod, addr := range spec.Direct {
		h.targets, h.addrs[pod] = append(h.targets, pod), addr
	}
	slices.Sort(h.targets)
	if spec.DST != "" {
		h.targets, h.addrs[""] = append(h.targets, ""), spec.DST
	}
	return h
}

// service records a handshake through the Service that a endpoint answered.
func (h *handshakes) service(a spreadAnswer, d time.Duration) {
	if len(h.targets) == 0 {
		return
	}
	h.who[a.Pod] = a
	h.svc[a.Pod] = append(h.svc[a.Pod], d)
}

// direct makes the straight handshakes that follow the i-th of n connections through the
// Service: one, or as many as it takes for every target to get minStraight by the end.
func (h *handshakes) direct(ctx context.Context, i, n int) {
	if len(h.targets) == 0 {
		return
	}
	per := max(1, (len(h.targets)*minStraight+n-1)/n)
	for range per {
		t := h.targets[h.next%len(h.targets)]
		h.next++
		if h.inARow[t] < maxStraightFailures && ctx.Err() == nil {
			h.dial(ctx, t)
		}
	}
}

// dial makes one straight handshake to target t, closed at once.
func (h *handshakes) dial(ctx context.Context, t string) {
	start := time.Now()
	c, err := h.dialer.DialContext(ctx, "tcp", h.addrs[t])
	took := time.Since(start)
	if err != nil {
		h.failed[t]++
		h.inARow[t]++
		return
	}
	_ = c.Close()
	h.inARow[t] = 0
	h.straight[t] = append(h.straight[t], took)
}

// fill writes the handshakes into the result: every endpoint given or answering, and DST.
func (h *handshakes) fill(res *SpreadResult) {
	if len(h.targets) == 0 {
		return
	}
	pods := slices.Clone(h.targets)
	for pod := range h.svc {
		if _, given := h.addrs[pod]; !given {
			pods = append(pods, pod)
		}
	}
	slices.Sort(pods)
	for _, pod := range pods {
		if pod == "" {
			continue
		}
		a, straight := h.who[pod], h.straight[pod]
		if fault.On(fault.DataplaneVsDST) {
			straight = h.straight[""]
		}
		res.Endpoints = append(res.Endpoints, v1alpha1.SpreadEndpoint{Pod: pod, Node: a.Node, Zone: a.Zone,
			Service: summarize(h.svc[pod], 0), Direct: summarize(straight, h.failed[pod])})
	}
	if _, ok := h.addrs[""]; ok {
		dst := summarize(h.straight[""], h.failed[""])
		res.DST = &dst
	}
}

func summarize(ds []time.Duration, failed int) v1alpha1.Handshakes {
	out := v1alpha1.Handshakes{Count: len(ds), Failed: failed}
	if len(ds) > 0 {
		s := slices.Clone(ds)
		slices.Sort(s)
		out.P50Micros = micros(nearestRank(s, 50).Seconds())
	}
	return out
}
