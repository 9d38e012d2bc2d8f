package plugin

import (
	"cmp"
	"context"
	"fmt"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// collected is what the client agent reported.
type collected struct {
	results map[string]*agent.ProbeResult
	failed  []string // app-port probes that failed, with the reason
	exit    string   // the client's exit message
	// footprints are what the agents cost, by role, as the client reported before its end.
	footprints map[string]agent.Footprint
	appErr     error // the first app-port failure, returned after the report is printed
}

// collect follows the client agent until it exits. An agent-to-agent probe that fails ends the
// run; an app-port probe that fails is reported next to the measured results.
func (o *PathOptions) collect(ctx context.Context, cli, srv *Agent, src, dst *Target) (*collected, error) {
	c := &collected{results: map[string]*agent.ProbeResult{}}
	err := cli.Follow(ctx, func(ev agent.Event) (bool, error) {
		switch ev.Type {
		case agent.EventProgress:
			o.Progress("measuring: %s %s", ev.Probe, sanitize(ev.Message))
		case agent.EventResult:
			if ev.Result != nil {
				c.results[ev.Probe] = ev.Result
			}
		case agent.EventError:
			return false, o.probeError(ev, c, srv, src, dst)
		case agent.EventFootprint:
			c.footprints = ev.Footprints
		case agent.EventExit:
			c.exit = sanitize(ev.Message)
			return true, nil
		}
		return false, nil
	})
	return c, err
}

// missing says which agent-to-agent probes have no result after the client exited.
func (c *collected) missing(probes []agent.ProbeSpec, cli *Agent) error {
	var none []string
	for _, p := range probes {
		if c.results[p.Label()] == nil {
			none = append(none, p.Label())
		}
	}
	if len(none) == 0 {
		return nil
	}
	return fmt.Errorf("the %s exited (%s) without results for %s: %w", cli, cmp.Or(c.exit, "no reason given"), strings.Join(none, ", "), ErrEndedWithoutResult)
}

// probeError explains a failed probe, or records an app-port failure and goes on.
func (o *PathOptions) probeError(ev agent.Event, c *collected, srv *Agent, src, dst *Target) error {
	msg := sanitize(ev.Message)
	dstApp := fmt.Sprintf("%s:%d", dst.Pod.Status.PodIP, o.Port)
	switch {
	case ev.Probe == "":
		return fmt.Errorf("client agent: %s", msg)
	case strings.HasPrefix(ev.Probe, "svc-"):
		err := fmt.Errorf("probe %s through the Service failed: %s", ev.Probe, msg)
		c.failed = append(c.failed, err.Error())
		c.appErr = cmp.Or(c.appErr, err)
		return nil
	case isAppProbe(ev.Probe) && ev.Reason == agent.ReasonRefused:
		err := fmt.Errorf("nothing accepts connections on %s/%s port %d (%s): the agent-to-agent results above were measured",
			dst.Namespace, dst.Pod.Name, o.Port, dstApp)
		c.failed = append(c.failed, ev.Probe+": "+err.Error())
		c.appErr = cmp.Or(c.appErr, err)
		return nil
	case isAppProbe(ev.Probe):
		err := fmt.Errorf("probe %s to %s failed: %s", ev.Probe, dstApp, msg)
		c.failed = append(c.failed, err.Error())
		c.appErr = cmp.Or(c.appErr, err)
		return nil
	case srv == nil:
		return fmt.Errorf("probe %s: %s", ev.Probe, msg)
	}
	hint := ""
	if ev.Reason == agent.ReasonRefused || ev.Reason == agent.ReasonTimeout {
		hint = " (a NetworkPolicy may block the agent's port)"
	}
	if note := srv.ServerNote(); note != "" {
		hint += "; the server agent said: " + note
	}
	return fmt.Errorf("probe %s from %s/%s to the server agent at %s:%d failed: %s%s", ev.Probe, src.Namespace, src.Pod.Name, srv.IP, srv.Port, msg, hint)
}

// isAppProbe says whether a probe measures the application (its port, or its Service) rather
// than the agent server: its failure is reported next to the results, not fatal.
func isAppProbe(name string) bool {
	return strings.HasPrefix(name, "app-") || strings.HasPrefix(name, "svc-")
}

// fillResults puts the results in the report in the order the probes were planned.
func (o *PathOptions) fillResults(rep *report.PathReport, probes, appPort []agent.ProbeSpec, c *collected) {
	rep.AgentFootprint = c.footprints
	var crossBytes int64
	for _, p := range probes {
		r := c.results[p.Label()]
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
		if r := c.results[p.Label()]; r != nil {
			rep.AppPort = append(rep.AppPort, r)
		}
	}
	rep.Skipped = append(rep.Skipped, c.failed...)
	rep.Warnings = append(rep.Warnings, mtuWarnings(rep.Probes)...)
	if rep.Path.Class == report.CrossZone || rep.Path.Class == report.CrossRegion {
		rep.Cost = report.NewCost(crossBytes, o.PricePerGB)
	}
}
