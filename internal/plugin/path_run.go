package plugin

import (
	"context"
	"net/netip"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// pathRun is one run of path: the runner's steps (runner.go) and what they share.
type pathRun struct {
	o           *PathOptions
	rep         *report.PathReport
	timer       *phaseTimer
	src, dst    *Target
	sess        *Session
	probes, app []agent.ProbeSpec
	pp          *pathPolicy
	cli, srv    *Agent
	res         *collected
}

func (r *pathRun) figuresBeforePlan() {}

func (r *pathRun) plannedFigures() map[string]string {
	planned, appPlanned := r.o.probeSpecs(netip.IPv4Unspecified().String())
	return report.PlannedFigures(append(planned, appPlanned...))
}

// plan resolves SRC and DST and classifies the path between them.
func (r *pathRun) plan(ctx context.Context) (err error) {
	o, rep := r.o, r.rep
	o.Progress("resolving %s and %s", o.SrcArg, o.DstArg)
	if r.src, r.dst, err = o.resolvePair(ctx); err != nil {
		return err
	}
	rep.Source, rep.Destination = o.endpoint(ctx, r.src), o.endpoint(ctx, r.dst)
	rep.Path = report.Classify(rep.Source.Node, rep.Destination.Node, rep.Source.Zone, rep.Destination.Zone, rep.Source.Region, rep.Destination.Region)
	rep.Path.Dataplane = o.dataplane(ctx)
	rep.Warnings = append(rep.Warnings, targetWarnings(r.src, r.dst)...)
	r.timer.phase("resolve")
	return nil
}

// open picks the agents' mode where the user may create them, and the session.
func (r *pathRun) open(ctx context.Context) (*Session, error) {
	mode, note, err := r.o.chooseMode(ctx, r.o.Mode, r.src.Namespace, r.dst.Namespace)
	if err != nil {
		return nil, err
	}
	if note != "" {
		r.rep.Warnings = append(r.rep.Warnings, note)
	}
	r.sess = r.o.newSession(mode)
	return r.sess, nil
}

// start plans the temporary policies and starts the server agent, then the client with its job.
func (r *pathRun) start(ctx context.Context) (err error) {
	o, rep, src, dst := r.o, r.rep, r.src, r.dst
	rep.Warnings = append(rep.Warnings, o.cleanStale(ctx, r.sess, src.Namespace, dst.Namespace)...)
	probes, appPort := o.probeSpecs(dst.Pod.Status.PodIP)
	lifetime := time.Duration(expectedSeconds(append(append([]agent.ProbeSpec{}, probes...), appPort...))*float64(time.Second)) + 2*o.StartTimeout + 30*time.Second
	r.pp, err = o.planPolicy(ctx, r.sess, o.readPolicies(ctx, src.Namespace, dst.Namespace), src, dst, probes, appPort, lifetime)
	rep.Policy = r.pp.check
	if err != nil {
		return err
	}
	r.probes, r.app = r.pp.runnable(probes), r.pp.runnableApp(appPort)
	job := agent.Job{APIVersion: agent.APIVersion, Done: true, Probes: append(append([]agent.ProbeSpec{}, r.probes...), r.app...)}
	if !r.pp.noServer {
		o.Progress("starting the server agent next to %s/%s (%s)", dst.Namespace, dst.Pod.Name, r.sess.Mode)
		if r.srv, err = o.startServer(ctx, r.sess, dst, r.pp.srvPort, lifetime, &rep.Warnings); err != nil {
			return err
		}
		rep.Destination.AgentIP = r.srv.IP
		setAgentName(&rep.Destination, r.srv)
		job.Host, job.Port = r.srv.IP, r.srv.Port
	}
	rep.Mode = r.sess.Mode
	r.timer.phase("start-server")
	return r.startClient(ctx, &job, lifetime)
}

func (r *pathRun) startClient(ctx context.Context, job *agent.Job, lifetime time.Duration) error {
	src := r.src
	r.o.Progress("starting the client agent next to %s/%s", src.Namespace, src.Pod.Name)
	cli, err := r.sess.StartReady(ctx, AgentSpec{Role: RoleClient, Target: src, Job: job, Lifetime: lifetime, Port: r.pp.cliPort, InlineJob: r.pp.inlineJob}, "the client agent")
	if err != nil {
		return err
	}
	r.cli = cli
	setAgentName(&r.rep.Source, cli)
	r.rep.Source.AgentIP = src.Pod.Status.PodIP
	if cli.Temporary {
		r.rep.Source.AgentIP = cli.IP
	}
	r.timer.phase("start-client")
	return nil
}

// measure reads the client's results as they come.
func (r *pathRun) measure(ctx context.Context) (time.Duration, error) {
	since := time.Now()
	res, err := r.o.collect(ctx, r.cli, r.srv, r.src, r.dst)
	if err != nil {
		return 0, err
	}
	if err := res.missing(r.probes, r.cli); err != nil {
		return 0, err
	}
	r.res = res
	measuring := time.Since(since)
	r.timer.phase("measure")
	return measuring, nil
}

func (r *pathRun) finish(context.Context) {
	r.o.fillResults(r.rep, r.probes, r.app, r.res)
	r.rep.Skipped = append(r.pp.skipped(), r.rep.Skipped...)
}

func (r *pathRun) closed() { r.rep.Policy.Removed = len(r.rep.Policy.Temporary) > 0 }

func (r *pathRun) output() runOutput {
	return runOutput{timing: &r.rep.Timing, timer: r.timer, figures: r.rep.FigureValues, checks: &r.rep.Checks,
		write: func() error { return report.Write(r.o.Out, r.o.Output, r.rep) },
		err:   func() error { return r.res.appErr }}
}
