package path

import (
	"context"
	"net/netip"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/render"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"
	"github.com/kubectl-netbench/kubectl-netbench/internal/policyplan"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// pathRun is one run of path: the runner's steps (runner.go) and what they share.
type pathRun struct {
	o           *PathOptions
	rep         *report.PathReport
	timer       *cmdutil.PhaseTimer
	src, dst    *session.Target
	sess        *session.Session
	probes, app []agent.ProbeSpec
	pp          *policyplan.PathPolicy
	cli, srv    *session.Agent
	res         *collected
	// addrs are DST's addresses the probes use, one per family (--ip-family).
	addrs []netip.Addr
}

func (r *pathRun) FiguresBeforePlan() {}

func (r *pathRun) PlannedFigures() map[string]string {
	planned, appPlanned, _ := r.o.FamilySpecs(PlannedAddrs(r.o.IPFamily), nil)
	return report.PlannedFigures(append(planned, appPlanned...))
}

// Plan resolves SRC and DST and classifies the path between them.
func (r *pathRun) Plan(ctx context.Context) (err error) {
	o, rep := r.o, r.rep
	o.Progress("resolving %s and %s", o.SrcArg, o.DstArg)
	if r.src, r.dst, err = o.resolvePair(ctx); err != nil {
		return err
	}
	if r.addrs, err = checkFamilies(o.IPFamily, r.src, r.dst); err != nil {
		return err
	}
	rep.IPFamily = FamiliesName(r.addrs)
	rep.Source, rep.Destination = o.Endpoint(ctx, r.src), o.Endpoint(ctx, r.dst)
	rep.Path = report.Classify(rep.Source.Node, rep.Destination.Node, rep.Source.Zone, rep.Destination.Zone, rep.Source.Region, rep.Destination.Region)
	rep.Path.Dataplane = o.Dataplane(ctx)
	rep.Warnings = append(rep.Warnings, cmdutil.TargetWarnings(r.src, r.dst)...)
	r.timer.Phase("resolve")
	return nil
}

// Open picks the agents' mode where the user may create them, and the session.
func (r *pathRun) Open(ctx context.Context) (*session.Session, error) {
	mode, note, err := r.o.ChooseMode(ctx, r.o.Mode, r.src.Namespace, r.dst.Namespace)
	if err == nil { // whatever the mode: a server that cannot join DST starts in a pod
		err = r.o.CheckPullSecrets(ctx, &r.o.CommonOptions, r.src.Namespace, r.dst.Namespace)
	}
	if err != nil {
		return nil, err
	}
	if note != "" {
		r.rep.Warnings = append(r.rep.Warnings, note)
	}
	r.sess = r.o.NewSession(mode)
	return r.sess, nil
}

// Start plans the temporary policies and starts the server agent, then the client with its job.
func (r *pathRun) Start(ctx context.Context) (err error) {
	o, rep, src, dst := r.o, r.rep, r.src, r.dst
	rep.Warnings = append(rep.Warnings, o.CleanStale(ctx, r.sess, src.Namespace, dst.Namespace)...)
	probes, appPort, _ := r.o.FamilySpecs(r.addrs, nil)
	perRound := ExpectedSeconds(append(append([]agent.ProbeSpec{}, probes...), appPort...))
	lifetime := time.Duration(perRound*float64(o.Rounds)*float64(time.Second)) + 2*o.StartTimeout + 30*time.Second
	r.pp, err = o.PlanPolicy(ctx, r.sess, o.ReadPolicies(ctx, src.Namespace, dst.Namespace), src, dst, probes, appPort, lifetime)
	rep.Policy = r.pp.Check
	if err != nil {
		return err
	}
	r.probes, r.app = r.pp.Runnable(probes), r.pp.RunnableApp(appPort)
	job := agent.Job{APIVersion: agent.APIVersion, Done: true, Probes: RepeatProbes(append(append([]agent.ProbeSpec{}, r.probes...), r.app...), o.Rounds)}
	if !r.pp.NoServer {
		o.Progress("starting the server agent next to %s/%s (%s)", dst.Namespace, dst.Pod.Name, r.sess.Mode)
		if r.srv, err = o.StartServer(ctx, r.sess, dst, r.pp.SrvPort, lifetime, &rep.Warnings); err != nil {
			return err
		}
		if rep.Destination.AgentIP, err = ServerHost(r.srv, r.addrs[0]); err != nil {
			return err
		}
		SetAgentName(&rep.Destination, r.srv)
		job.Host, job.Port = rep.Destination.AgentIP, r.srv.Port
		if len(r.addrs) > 1 { // the IPv6 twins go to the server's IPv6 address
			if r.probes, _, err = r.o.FamilySpecs(r.addrs, r.srv); err != nil {
				return err
			}
			r.probes = r.pp.Runnable(r.probes)
			job.Probes = RepeatProbes(append(append([]agent.ProbeSpec{}, r.probes...), r.app...), o.Rounds)
		}
		if !r.srv.Temporary && !dst.HostNetwork() {
			job.ServerApp = cmdutil.AppIDs(dst)
		}
	}
	if r.sess.Mode == session.ModeEphemeral && !src.HostNetwork() {
		job.ClientApp = cmdutil.AppIDs(src)
	}
	rep.Mode = r.sess.Mode
	r.timer.Phase("start-server")
	return r.startClient(ctx, &job, lifetime)
}

func (r *pathRun) startClient(ctx context.Context, job *agent.Job, lifetime time.Duration) error {
	src := r.src
	r.o.Progress("starting the client agent next to %s/%s", src.Namespace, src.Pod.Name)
	cli, err := r.sess.StartReady(ctx, session.AgentSpec{Role: session.RoleClient, Target: src, Job: job, Lifetime: lifetime, Port: r.pp.CliPort, InlineJob: r.pp.InlineJob}, "the client agent")
	if err != nil {
		return err
	}
	r.cli = cli
	SetAgentName(&r.rep.Source, cli)
	r.rep.Source.AgentIP = src.Pod.Status.PodIP
	if cli.Temporary {
		r.rep.Source.AgentIP = cli.IP
	}
	r.timer.Phase("start-client")
	return nil
}

// FamilySpecs are the probes for DST's addresses (one per family; the second's probes are IPv6 twins
// named with V6Suffix, sent to srv's IPv6 address once the server agent is known).
func (o *PathOptions) FamilySpecs(addrs []netip.Addr, srv *session.Agent) (probes, appPort []agent.ProbeSpec, err error) {
	probes, appPort = o.ProbeSpecs(addrs[0].String())
	if len(addrs) < 2 {
		return probes, appPort, nil
	}
	host6 := addrs[1].String()
	if srv != nil {
		if host6, err = ServerHost(srv, addrs[1]); err != nil {
			return nil, nil, err
		}
	}
	_, app6 := o.ProbeSpecs(addrs[1].String())
	return twinV6(probes, host6), append(appPort, V6Twins(app6)...), nil
}

// Measure reads the client's results as they come.
func (r *pathRun) Measure(ctx context.Context) (time.Duration, error) {
	since := time.Now()
	res, err := r.o.Collect(ctx, r.cli, r.srv, r.src, r.dst)
	if err != nil {
		return 0, err
	}
	if err := res.Missing(RepeatProbes(r.probes, r.o.Rounds), r.cli); err != nil {
		return 0, err
	}
	r.res = res
	measuring := time.Since(since)
	r.timer.Phase("measure")
	return measuring, nil
}

func (r *pathRun) Finish(context.Context) {
	r.o.fillResults(r.rep, r.probes, r.app, r.res)
	fillRounds(r.o, r.rep, r.res, r.cli, r.probes, r.app)
	at := report.Agents{}
	if r.cli != nil && !r.cli.Temporary {
		at.Client, at.ClientInApp, at.ClientPod = r.src.CPULimitCores(), !r.src.HostNetwork(), cmdutil.AppContainers(r.src)
	}
	if r.srv != nil && !r.srv.Temporary {
		at.ServerInApp, at.ServerPod = !r.dst.HostNetwork(), cmdutil.AppContainers(r.dst)
		if !fault.On(fault.PodLimitIgnored) {
			at.Server = r.dst.CPULimitCores()
		}
	}
	for _, res := range allResults(r.rep) {
		report.Judge(res, at)
		res.IPFamily = r.familyOf(res.Name)
	}
	r.rep.Summarize()
	r.rep.Skipped = append(r.pp.Skipped(), r.rep.Skipped...)
}

// familyOf is the address family of the probe named name.
func (r *pathRun) familyOf(name string) string {
	if len(r.addrs) == 0 {
		return ""
	}
	return FamilyName(session.ProbeAddr(name, r.addrs))
}

// allResults are the report's results: round 1's, and every other round's.
func allResults(rep *report.PathReport) []*agent.ProbeResult {
	all := append(append([]*agent.ProbeResult(nil), rep.Probes...), rep.AppPort...)
	for _, round := range rep.RoundResults[min(1, len(rep.RoundResults)):] {
		all = append(append(all, round.Probes...), round.AppPort...)
	}
	return all
}

// fillRounds puts every round's results in the report when there were rounds (round 1's are
// Probes and AppPort), each under its probe's own name, and the bytes of them all in the cost.
func fillRounds(o *PathOptions, rep *report.PathReport, res *collected, cli *session.Agent, probes, app []agent.ProbeSpec) {
	if o.Rounds < 2 || res == nil {
		return
	}
	rep.Rounds = o.Rounds
	rep.RoundResults = []report.LadderRound{{Round: 1, ClientPod: cli.Pod, Probes: rep.Probes, AppPort: rep.AppPort}}
	var crossBytes int64
	for k := 1; k <= o.Rounds; k++ {
		round := report.LadderRound{Round: k, ClientPod: cli.Pod}
		round.Probes, crossBytes = res.round(probes, k, crossBytes)
		round.AppPort, _ = res.round(app, k, 0)
		if k > 1 {
			rep.RoundResults = append(rep.RoundResults, round)
		}
	}
	if rep.Cost != nil {
		rep.Cost = report.NewCost(crossBytes, o.PricePerGB)
	}
}

func (r *pathRun) Closed() { r.rep.Policy.Removed = len(r.rep.Policy.Temporary) > 0 }

func (r *pathRun) Output() cmdutil.RunOutput {
	return cmdutil.RunOutput{Timing: &r.rep.Timing, Timer: r.timer, Figures: r.rep.FigureValues, Checks: &r.rep.Checks,
		Write: func() error { return render.Write(r.o.Out, r.o.Output, r.rep) },
		Err:   func() error { return r.res.appErr }}
}
