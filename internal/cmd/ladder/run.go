package ladder

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"strconv"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/render"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/path"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"
	"github.com/kubectl-netbench/kubectl-netbench/internal/policyplan"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	corev1 "k8s.io/api/core/v1"
)

// ladderRun is one run of the ladder: what it planned and the agents it started.
type ladderRun struct {
	o     *LadderOptions
	rep   *report.LadderReport
	timer *cmdutil.PhaseTimer
	dst   *session.Target
	rungs []report.LadderRung
	sr    *serviceRun
	sess  *session.Session
	// pp is what the NetworkPolicies let through.
	pp *policyplan.PathPolicy
	// srv serves every rung; hostSrv, on DST's node in its network, the host-network rung (at
	// hostHost, its address of the first family measured).
	srv, hostSrv *session.Agent
	hostHost     string
	// job is what every client runs (nProbes agent-to-agent probes, then app and Service ones).
	job     agent.Job
	nProbes int
	// hostProbes are the host-network rung's: every agent-to-agent probe (no NetworkPolicy
	// applies in the nodes' own network).
	hostProbes []agent.ProbeSpec
	perRung    time.Duration
	// failed is the first probe that failed against the app's port, through the Service or to
	// the way out: the run's error once the report is printed.
	failed   error
	lifetime time.Duration
	// clientTol are the tolerations of clients on nodes other than DST's (clientTolerations).
	clientTol []corev1.Toleration
	// addrs are DST's addresses the probes use, one per family (--ip-family).
	addrs []netip.Addr
}

// Plan resolves DST, places the rungs and reads the Service, before anything is created.
func (r *ladderRun) Plan(ctx context.Context) (err error) {
	o := r.o
	o.Progress("resolving %s", o.DstArg)
	if r.dst, err = o.Resolve(ctx, o.DstArg, o.DstContainer, o.AllowHostNetwork); err != nil {
		return fmt.Errorf("DST: %w", err)
	}
	if r.addrs, err = path.DstAddrs(o.IPFamily, r.dst); err != nil {
		return err
	}
	r.rep.IPFamily = path.FamiliesName(r.addrs)
	r.rep.Destination = o.Endpoint(ctx, r.dst)
	if r.rungs, r.clientTol, err = o.planRungs(ctx, r.dst); err != nil {
		return err
	}
	if o.Egress != "" {
		if err := path.InsideCluster(ctx, o.Client, "--egress", o.Egress); err != nil {
			return err
		}
	}
	if o.HostBaseline {
		r.rungs = append(r.rungs, hostRung(r.rungs))
	}
	r.rep.Warnings = append(r.rep.Warnings, cmdutil.TargetWarnings(r.dst)...)
	if ns, name := o.serviceName(); name != "" {
		if err := access.CheckPermissions(ctx, o.Client, []string{ns}, access.ServicePermissions); err != nil {
			return err
		}
		if r.sr, err = o.readService(ctx, r.dst, ns, name); err != nil {
			return err
		}
		r.rep.Service = r.sr.info
		r.rep.Service.Dataplane = o.Dataplane(ctx)
	}
	r.timer.Phase("plan")
	return nil
}

// PlannedFigures names the figures the planned rungs will report, for --fail-if.
func (r *ladderRun) PlannedFigures() map[string]string {
	probes, appPort, _ := r.o.FamilySpecs(path.PlannedAddrs(r.o.IPFamily), nil)
	all := append(probes, appPort...)
	if r.sr != nil {
		all = append(all, r.o.serviceProbes(r.sr)...)
	}
	planned := report.LadderPlannedFigures(r.rungs, all)
	maps.Copy(planned, r.o.withoutAbsentEgress(report.LadderPlannedFigures(podRungs(r.rungs), r.o.egressSpecs())))
	return planned
}

// Open checks every permission the run needs and opens its session.
func (r *ladderRun) Open(ctx context.Context) (*session.Session, error) {
	o, ns := r.o, r.dst.Namespace
	mode, note, err := o.ChooseMode(ctx, o.Mode, ns)
	if err == nil {
		// Clients are temporary pods whatever the server's mode.
		err = access.CheckPermissions(ctx, o.Client, []string{ns}, access.NeededPermissions(true))
	}
	if err == nil {
		err = o.CheckPullSecrets(ctx, &o.CommonOptions, ns)
	}
	if err != nil {
		return nil, err
	}
	if note != "" {
		r.rep.Warnings = append(r.rep.Warnings, note)
	}
	r.sess = o.NewSession(mode)
	r.rep.Warnings = append(r.rep.Warnings, o.CleanStale(ctx, r.sess, ns)...)
	if r.sr != nil {
		r.rep.Warnings = append(r.rep.Warnings, o.CleanStaleServices(ctx, r.sr.svc.Namespace, o.ServerNow())...)
	}
	return r.sess, nil
}

// Start plans the temporary policies within the run's budget and starts the agents.
func (r *ladderRun) Start(ctx context.Context) error {
	r.budget()
	if err := r.planPolicies(ctx); err != nil {
		return err
	}
	return r.startAgents(ctx)
}

// budget sets how long a rung may take and how long the agents may live.
func (r *ladderRun) budget() {
	probes, appPort, _ := r.o.FamilySpecs(r.addrs, nil)
	all := append(probes, appPort...)
	if r.sr != nil {
		all = append(all, r.o.serviceProbes(r.sr)...) // the spread probe joins once its Service exists
	}
	r.perRung = time.Duration(path.ExpectedSeconds(all)*float64(time.Second)) + r.o.egressBudget() + 2*r.o.StartTimeout + 30*time.Second
	r.lifetime = time.Duration(len(measurable(r.rungs))*r.o.Rounds)*r.perRung + 30*time.Second
}

// startAgents starts the server next to DST (unless the NetworkPolicies block every probe to
// it), the host-network server and the Service's endpoint agents when asked, and builds the
// clients' job from the probes the policies let through.
func (r *ladderRun) startAgents(ctx context.Context) error {
	o := r.o
	probes, appPort, _ := o.FamilySpecs(r.addrs, nil)
	r.rep.Mode = r.sess.Mode
	if !r.pp.NoServer {
		o.Progress("starting the server agent next to %s/%s (%s)", r.dst.Namespace, r.dst.Pod.Name, r.sess.Mode)
		srv, err := o.StartServer(ctx, r.sess, r.dst, r.pp.SrvPort, r.lifetime, &r.rep.Warnings)
		if err != nil {
			return err
		}
		r.srv = srv
		if r.rep.Destination.AgentIP, err = path.ServerHost(srv, r.addrs[0]); err != nil {
			return err
		}
		if probes, _, err = o.FamilySpecs(r.addrs, srv); err != nil { // the IPv6 twins to the server's IPv6 address
			return err
		}
		path.SetAgentName(&r.rep.Destination, srv)
		r.job.Host, r.job.Port = r.rep.Destination.AgentIP, srv.Port
	}
	probes, appPort = r.pp.Runnable(probes), r.pp.RunnableApp(appPort)
	r.nProbes = len(probes)
	r.timer.Phase("start-server")
	if err := r.startHostServer(ctx); err != nil {
		return err
	}
	if r.sr != nil {
		o.Progress("measuring Service %s/%s too: starting agents in its endpoints", r.sr.svc.Namespace, r.sr.svc.Name)
		if err := o.startSpread(ctx, r.sess, r.sr, r.lifetime); err != nil {
			return err
		}
		appPort = append(appPort, r.pp.RunnableApp(r.familyHosts(o.serviceProbes(r.sr)))...)
		r.timer.Phase("start-endpoints")
	}
	r.job.APIVersion, r.job.Probes = agent.APIVersion, append(append(probes, appPort...), o.egressSpecs()...)
	return nil
}

// familyHosts sends each spread probe's straight handshakes to DST to the server agent's
// address of its ClusterIP's family, so that the routing figure compares one family (a server
// without one: said, and the job's address).
func (r *ladderRun) familyHosts(specs []agent.ProbeSpec) []agent.ProbeSpec {
	for i, p := range specs {
		if p.Kind != agent.ProbeSpread || r.srv == nil {
			continue
		}
		host, _, _ := net.SplitHostPort(p.Address)
		a, err := netip.ParseAddr(host)
		if err == nil {
			specs[i].Host, err = path.ServerHost(r.srv, a)
		}
		if err != nil {
			r.rep.Warnings = append(r.rep.Warnings, fmt.Sprintf("%s: its routing figure compares with DST's primary address: %v", p.Name, err))
		}
	}
	return specs
}

// Measure runs every measurable rung once per round, round-robin, and returns the time spent
// measuring (client starts excluded).
func (r *ladderRun) Measure(ctx context.Context) (time.Duration, error) {
	var measuring time.Duration
	for round := 1; round <= r.o.Rounds; round++ {
		for _, i := range measurable(r.rungs) {
			rung := &r.rungs[i]
			r.o.Progress("round %d/%d, rung %s: client on node %s", round, r.o.Rounds, rung.Name, rung.Node)
			srv, spec, n := r.rungClient(rung, round, i)
			res, took, err := r.o.runRung(ctx, r.sess, srv, spec, n)
			if err != nil {
				return 0, fmt.Errorf("rung %s (node %s): %w", rung.Name, rung.Node, err)
			}
			measuring += took
			res.Round = round
			for _, f := range res.Failed {
				r.rep.Warnings = append(r.rep.Warnings, fmt.Sprintf("rung %s, round %d: %s", rung.Name, round, f))
			}
			if len(res.Failed) > 0 && r.failed == nil {
				r.failed = fmt.Errorf("%w: rung %s, round %d: %s (the rest of the report was measured; every failure is in its warnings)", ErrProbeFailed, rung.Name, round, res.Failed[0])
			}
			rung.Results = append(rung.Results, res)
		}
	}
	r.timer.Phase("measure")
	return measuring, nil
}

// rungClient is round's client of rung i, the server it measures and how many of its job's
// probes are the agents' own (the rest reach the app's port).
func (r *ladderRun) rungClient(rung *report.LadderRung, round, i int) (*session.Agent, session.AgentSpec, int) {
	if rung.Class == HostNetworkClass {
		return r.hostSrv, r.hostClientSpec(rung, round, i), len(r.hostProbes)
	}
	return r.srv, r.clientSpec(rung, round, i), r.nProbes
}

// Rehearse sends every round's client of every rung (a dry run: nothing waits for them).
func (r *ladderRun) Rehearse(ctx context.Context) error {
	for round := 1; round <= r.o.Rounds; round++ {
		for _, i := range measurable(r.rungs) {
			rung := &r.rungs[i]
			_, spec, _ := r.rungClient(rung, round, i)
			if _, err := r.sess.Start(ctx, spec); err != nil {
				return fmt.Errorf("rung %s (node %s): the client agent: %w", rung.Name, rung.Node, err)
			}
		}
	}
	return nil
}

func (r *ladderRun) Finish(context.Context) { r.summarize() }

func (r *ladderRun) Closed() { r.rep.Policy.Removed = len(r.rep.Policy.Temporary) > 0 }

func (r *ladderRun) Output() cmdutil.RunOutput {
	return cmdutil.RunOutput{Timing: &r.rep.Timing, Timer: r.timer, Figures: r.rep.FigureValues, Checks: &r.rep.Checks,
		Write: func() error { return render.WriteLadder(r.o.Out, r.o.Output, r.rep) }, Err: func() error { return r.failed }}
}

// ErrProbeFailed is wrapped by the error of a ladder whose app-port, Service or way-out probes
// failed on some rung: its report is printed first, and it exits 1.
var ErrProbeFailed = errors.New("a probe failed")

// summarize fills the report's rungs, costs, spreads and figures.
func (r *ladderRun) summarize() {
	r.rep.Rungs = r.rungs
	r.o.addCosts(r.rep)
	if r.sr != nil {
		r.o.addSpread(r.rep, r.sr)
	}
	r.rep.Summarize()
}

// clientSpec is round's client of rung i: a temporary pod on the rung's node with DST's pod's
// tolerations but those of control-plane taints (tolerationsOn), on the port the policy plan chose.
func (r *ladderRun) clientSpec(rung *report.LadderRung, round, i int) session.AgentSpec {
	job := r.job
	return session.AgentSpec{Role: session.RoleClient, Target: r.dst, Job: &job, Lifetime: r.perRung, Suffix: strconv.Itoa(i+1) + "-" + strconv.Itoa(round),
		Placement: &session.Placement{Node: rung.Node, Tolerations: r.tolerationsOn(rung.Node)}, Port: r.pp.CliPort, InlineJob: r.pp.InlineJob}
}
