package path

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/policyplan"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/internal/text"
)

// collected is what the client agent reported.
type collected struct {
	Results map[string]*agent.ProbeResult
	failed  []string // app-port probes that failed, with the reason
	exit    string   // the client's exit message
	// footprints are what the agents cost, by role, as the client reported before its end.
	footprints map[string]agent.Footprint
	appErr     error // the first app-port failure, returned after the report is printed
}

// Collect follows the client agent until it exits. An agent-to-agent probe that fails ends the
// run; an app-port probe that fails is reported next to the measured results.
func (o *PathOptions) Collect(ctx context.Context, cli, srv *session.Agent, src, dst *session.Target) (*collected, error) {
	return o.collect(ctx, cli.Follow, srv, src, dst)
}

// follower hands each of a client's events to fn until fn returns true, the client ends, or
// ctx does: a client agent's Follow, or runHere's.
type follower func(ctx context.Context, fn func(agent.Event) (bool, error)) error

// collect is Collect from any client's events.
func (o *PathOptions) collect(ctx context.Context, follow follower, srv *session.Agent, src, dst *session.Target) (*collected, error) {
	c := &collected{Results: map[string]*agent.ProbeResult{}}
	err := follow(ctx, func(ev agent.Event) (bool, error) {
		switch ev.Type {
		case agent.EventProgress:
			o.Progress("measuring: %s %s", ev.Probe, text.Sanitize(ev.Message))
		case agent.EventResult:
			if ev.Result != nil {
				c.Results[ev.Probe] = ev.Result
			}
		case agent.EventError:
			return false, o.probeError(ev, c, srv, src, dst)
		case agent.EventFootprint:
			c.footprints = ev.Footprints
		case agent.EventExit:
			c.exit = text.Sanitize(ev.Message)
			return true, nil
		}
		return false, nil
	})
	return c, err
}

// Failed are the probes that failed without ending the run (the app's port, the Service, the way
// out), each with its reason.
func (c *collected) Failed() []string { return c.failed }

// Missing says which agent-to-agent probes have no result after the client exited.
func (c *collected) Missing(probes []agent.ProbeSpec, cli fmt.Stringer) error {
	var none []string
	for _, p := range probes {
		if c.Results[p.Label()] == nil {
			none = append(none, p.Label())
		}
	}
	if len(none) == 0 {
		return nil
	}
	return fmt.Errorf("the %s exited (%s) without results for %s: %w", cli, cmp.Or(c.exit, "no reason given"), strings.Join(none, ", "), session.ErrEndedWithoutResult)
}

// serverWordsWithin is how long a refused or timed-out probe waits for the server agent's own
// account (its lapsed lease, its exit) before the error is written without it.
const serverWordsWithin = 3 * time.Second

// tokenRefused is the agent's word that its server refused the token: agent.ErrTokenRefused.
type tokenRefused string

func (e tokenRefused) Error() string { return string(e) }
func (tokenRefused) Unwrap() error   { return agent.ErrTokenRefused }

// probeError explains a failed probe, or records an app-port failure and goes on.
func (o *PathOptions) probeError(ev agent.Event, c *collected, srv *session.Agent, src, dst *session.Target) error {
	msg := text.Sanitize(ev.Message)
	switch {
	case ev.Probe == "" && ev.Reason == agent.ReasonUnauthorized:
		return fmt.Errorf("client agent: %w", tokenRefused(msg))
	case ev.Probe == "":
		return fmt.Errorf("client agent: %s", msg)
	case srv == nil && dst == nil: // an agent outside the cluster
		return fmt.Errorf("probe %s: %s", ev.Probe, msg)
	case ev.Probe == agent.ProbeEgress: // ladder --egress: the way out failed, not the way to DST
		err := fmt.Errorf("probe %s to the destination outside the cluster failed: %s", ev.Probe, msg)
		c.failed = append(c.failed, err.Error())
		c.appErr = cmp.Or(c.appErr, err)
		return nil
	}
	dstApp := fmt.Sprintf("%s:%d", dst.Pod.Status.PodIP, o.Port)
	switch {
	case strings.HasPrefix(ev.Probe, "svc-"):
		err := fmt.Errorf("probe %s through the Service failed: %s", ev.Probe, msg)
		c.failed = append(c.failed, err.Error())
		c.appErr = cmp.Or(c.appErr, err)
		return nil
	case policyplan.IsAppProbe(ev.Probe) && ev.Reason == agent.ReasonRefused:
		err := fmt.Errorf("nothing accepts connections on %s/%s port %d (%s): the agent-to-agent results above were measured",
			dst.Namespace, dst.Pod.Name, o.Port, dstApp)
		c.failed = append(c.failed, ev.Probe+": "+err.Error())
		c.appErr = cmp.Or(c.appErr, err)
		return nil
	case policyplan.IsAppProbe(ev.Probe):
		err := fmt.Errorf("probe %s to %s failed: %s", ev.Probe, dstApp, msg)
		c.failed = append(c.failed, err.Error())
		c.appErr = cmp.Or(c.appErr, err)
		return nil
	case srv == nil:
		return fmt.Errorf("probe %s: %s", ev.Probe, msg)
	}
	return o.serverProbeError(ev, msg, srv, src)
}

// serverProbeError explains a probe of the server agent that failed. Refused or timed out: when
// the plugin's own lease renewals do not reach the server either, its port is blocked (a lapsed
// lease follows from that); otherwise the server's own word is awaited (a lapsed lease, its exit)
// before a blocked port is suggested.
func (o *PathOptions) serverProbeError(ev agent.Event, msg string, srv *session.Agent, src *session.Target) error {
	hint := ""
	switch unreached := ev.Reason == agent.ReasonRefused || ev.Reason == agent.ReasonTimeout; {
	case unreached && srv.Unrenewable():
		hint = " (a NetworkPolicy may block the agent's port: the plugin's lease renewals through the API server do not reach it either)"
	case unreached && srv.EndedOrSaid(serverWordsWithin) == "":
		hint = " (a NetworkPolicy may block the agent's port)"
	}
	if ended := srv.EndedBy(); ended != "" {
		hint += "; the server agent had ended: " + ended
	} else if note := srv.ServerNote(); note != "" {
		hint += "; the server agent said: " + note
	}
	from := "this machine" // path here DST
	if src != nil {
		from = src.Namespace + "/" + src.Pod.Name
	}
	return fmt.Errorf("probe %s from %s to the server agent at %s:%d failed: %s%s", ev.Probe, from, srv.IP, srv.Port, msg, hint)
}

// RepeatProbes is the probes, round after round: round 1's under their own names, round k's
// under RoundLabel(name, k).
func RepeatProbes(ps []agent.ProbeSpec, rounds int) []agent.ProbeSpec {
	out := append([]agent.ProbeSpec(nil), ps...)
	for k := 2; k <= rounds; k++ {
		for _, p := range ps {
			p.Name = RoundLabel(p.Label(), k)
			out = append(out, p)
		}
	}
	return out
}

// RoundLabel names a probe's result in round k (round 1: the probe's own name).
func RoundLabel(label string, k int) string {
	if k <= 1 {
		return label
	}
	return label + "@" + strconv.Itoa(k)
}

// round returns round k's results of probes, each under its probe's own name, and bytes plus
// what their throughput probes received.
func (c *collected) round(probes []agent.ProbeSpec, k int, bytes int64) ([]*agent.ProbeResult, int64) {
	var out []*agent.ProbeResult
	for _, p := range probes {
		res := c.Results[RoundLabel(p.Label(), k)]
		if res == nil {
			continue
		}
		res.Name = p.Label()
		if res.Throughput != nil {
			bytes += res.Throughput.BytesReceived
		}
		out = append(out, res)
	}
	return out, bytes
}

// fillResults puts the results in the report in the order the probes were planned.
func (o *PathOptions) fillResults(rep *report.PathReport, probes, appPort []agent.ProbeSpec, c *collected) {
	rep.AgentFootprint = c.footprints
	var crossBytes int64
	for _, p := range probes {
		r := c.Results[p.Label()]
		if r == nil {
			continue
		}
		rep.Probes = append(rep.Probes, r)
		switch {
		case r.Skipped != "" && r.Kind == agent.ProbeICMP:
			rep.Skipped = append(rep.Skipped, r.Name+": "+r.Skipped+"; the TCP handshake RTT is measured instead")
		case r.Skipped != "":
			rep.Skipped = append(rep.Skipped, r.Name+": "+r.Skipped)
		}
		if r.Throughput != nil {
			crossBytes += r.Throughput.BytesReceived
		}
	}
	for _, p := range appPort {
		if r := c.Results[p.Label()]; r != nil {
			rep.AppPort = append(rep.AppPort, r)
		}
	}
	rep.Skipped = append(rep.Skipped, c.failed...)
	rep.Warnings = append(rep.Warnings, mtuWarnings(rep.Probes)...)
	if rep.Path.Class == report.CrossZone || rep.Path.Class == report.CrossRegion {
		rep.Cost = report.NewCost(crossBytes, o.PricePerGB)
	}
}
