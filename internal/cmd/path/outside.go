package path

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"
	"github.com/kubectl-netbench/kubectl-netbench/internal/egress"
	"github.com/kubectl-netbench/kubectl-netbench/internal/render"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// IsOutsideAgent says whether DST is an agent outside the cluster (agent://HOST:PORT).
func IsOutsideAgent(dst string) bool { return strings.HasPrefix(strings.ToLower(dst), "agent://") }

// parseOutsideAgent is agent://HOST:PORT's host and port.
func parseOutsideAgent(dst string) (host string, port int, err error) {
	u, err := url.Parse(dst)
	bad := func(why string) error {
		return fmt.Errorf("DST %q: %s: want agent://HOST:PORT, the address netbench-agent serve --listen listens on outside the cluster", egress.Shown(dst), why)
	}
	switch {
	case err != nil:
		return "", 0, bad("not a URL")
	case u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "":
		return "", 0, bad("a host and a port only")
	case u.Hostname() == "" || strings.ContainsAny(u.Hostname(), " /"):
		return "", 0, bad("no host")
	}
	if port, err = strconv.Atoi(u.Port()); err != nil || port < 1 || port > 65535 {
		return "", 0, bad(fmt.Sprintf("port %q, want 1-65535", u.Port()))
	}
	return u.Hostname(), port, nil
}

// outsideRun is one run of path to an agent outside the cluster: the client agent beside SRC's
// application runs the two-sided probes against it, with the token both were given.
type outsideRun struct {
	egressRun
	host   string
	port   int
	token  string
	probes []agent.ProbeSpec
	col    *collected
}

func (r *outsideRun) PlannedFigures() map[string]string {
	probes, _ := r.o.ProbeSpecs(r.host)
	return report.PlannedFigures(probes)
}

// Plan resolves SRC and names the outside agent; nothing is created.
func (r *outsideRun) Plan(ctx context.Context) error {
	if err := r.egressRun.Plan(ctx); err != nil {
		return err
	}
	r.rep.Destination = report.Endpoint{External: "agent://" + net.JoinHostPort(r.host, strconv.Itoa(r.port))}
	r.rep.Path = report.PathClass{Class: v1alpha1.Egress, Reason: "to an agent outside the cluster; leaves the cluster from node " + r.rep.Source.Node}
	return nil
}

// Open is egressRun's, with the outside agent's token as the run's: the client agent is handed
// it with its job and presents it to the outside agent.
func (r *outsideRun) Open(ctx context.Context) (*session.Session, error) {
	s, err := r.egressRun.Open(ctx)
	if err == nil {
		s.Token = r.token
	}
	return s, err
}

// agentSpec is the client agent beside SRC's application, its job the probes against HOST:PORT.
func (r *outsideRun) agentSpec() session.AgentSpec {
	r.probes, _ = r.o.ProbeSpecs(r.host)
	job := &agent.Job{APIVersion: agent.APIVersion, Done: true, ServerOutside: true, Host: r.host, Port: r.port, Probes: RepeatProbes(r.probes, r.o.Rounds)}
	return r.clientSpec(job, time.Duration(ExpectedSeconds(r.probes)*float64(r.o.Rounds)*float64(time.Second)))
}

func (r *outsideRun) Rehearse(ctx context.Context) error {
	_, err := r.sess.Start(ctx, r.agentSpec())
	return err
}

// Measure starts the client agent and reads its results as they come.
func (r *outsideRun) Measure(ctx context.Context) (time.Duration, error) {
	since := time.Now()
	r.o.Progress("starting the client agent next to %s/%s against %s", r.src.Namespace, r.src.Pod.Name, r.rep.Destination.External)
	cli, err := r.sess.StartReady(ctx, r.agentSpec(), "the client agent")
	if err != nil {
		return 0, err
	}
	r.started(cli)
	r.timer.Phase("start-client")
	col, err := r.o.Collect(ctx, cli, nil, r.src, nil)
	if err == nil {
		err = col.Missing(RepeatProbes(r.probes, r.o.Rounds), cli)
	}
	switch {
	case err != nil && ctx.Err() == nil && !errors.Is(err, agent.ErrTokenRefused):
		return 0, fmt.Errorf("%w (netbench-agent serve must listen at %s, for one run, and the pod's NetworkPolicies let the pod reach it)", err, r.rep.Destination.External)
	case err != nil:
		return 0, err
	}
	r.col = col
	r.timer.Phase("measure")
	return time.Since(since), nil
}

// Finish puts the results in the report, judged against the client's CPU limit.
func (r *outsideRun) Finish(context.Context) {
	if r.col == nil {
		return
	}
	r.o.fillResults(r.rep, r.probes, nil, r.col)
	fillRounds(r.o, r.rep, r.col, r.cli, r.probes, nil)
	at := report.Agents{}
	if !r.cli.Temporary {
		at.Client, at.ClientInApp, at.ClientPod = r.src.CPULimitCores(), !r.src.HostNetwork(), cmdutil.AppContainers(r.src)
	} else {
		r.rep.Warnings = append(r.rep.Warnings, temporaryPodWarning)
	}
	for _, res := range allResults(r.rep) {
		report.Judge(res, at)
	}
	r.rep.Summarize()
}

func (r *outsideRun) Output() cmdutil.RunOutput {
	return cmdutil.RunOutput{Timing: &r.rep.Timing, Timer: r.timer, Figures: r.rep.FigureValues, Checks: &r.rep.Checks,
		Write: func() error { return render.Write(r.o.Out, r.o.Output, r.rep) }}
}

// validateOutsideAgent checks DST agent://HOST:PORT, reads --token-file, and refuses the flags
// of a workload DST or of a URL.
func (o *PathOptions) validateOutsideAgent() error {
	if !IsOutsideAgent(o.DstArg) {
		if o.TokenFile != "" {
			return fmt.Errorf("--token-file is for an agent outside the cluster (DST agent://HOST:PORT), not %s", o.DstArg)
		}
		return nil
	}
	var err error
	if o.outsideHost, o.outsidePort, err = parseOutsideAgent(o.DstArg); err != nil {
		return err
	}
	switch {
	case o.TokenFile == "":
		return fmt.Errorf("--token-file is required with DST %s: the token netbench-agent serve --token-file was given (kubectl netbench token makes one)", o.DstArg)
	case o.DstContainer != "" || o.Port != 0 || o.HTTPPath != "/":
		return fmt.Errorf("--dst-container, --port and --http-path are for a workload DST, not the agent at %s", o.DstArg)
	case o.CAFile != "" || o.Requests != egress.DefaultCount || o.EgressPricePerGB != DefaultEgressPricePerGB || o.Download != 0:
		return fmt.Errorf("--ca-file, --requests, --download and --egress-price-per-gb are for a destination with no agent on its far side (tcp://, http://, https://, grpc://, grpcs://, icmp://), not the agent at %s", o.DstArg)
	case o.AllowPolicy || o.PricePerGB != defaultPricePerGB:
		return fmt.Errorf("--allow-policy and --price-per-gb are for a workload DST: the NetworkPolicies of the path to %s are not read, nor its price known", o.DstArg)
	case o.IPFamily != "":
		return fmt.Errorf("--ip-family: an agent outside the cluster is measured at the address its host name gives (DST %s)", o.DstArg)
	}
	o.outsideToken, err = agent.ReadTokenFile(o.TokenFile)
	if err != nil {
		return fmt.Errorf("--token-file: %w", err)
	}
	return nil
}
