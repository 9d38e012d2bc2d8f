package ladder

import (
	"context"
	"fmt"
	"net/netip"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/path"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/placement"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/internal/version"
)

// LadderOptions holds everything `kubectl netbench ladder` needs: what path measures, plus
// where the clients may go (rounds: PathOptions.Rounds, --repeat).
type LadderOptions struct {
	path.PathOptions
	NodeSelector string
	Zones        []string
	// Service (svc/NAME) is measured from every rung; DST svc/NAME implies it.
	Service            string
	MaxEndpoints       int
	ConnectionsPerRung int
	// HostBaseline adds a node-to-node rung in the nodes' own network.
	HostBaseline bool
	// Via is how the clients reach DST: "pod" (client pods on the rungs' nodes), ViaNodePort
	// (this machine, through each node's NodePort) or ViaLoadBalancer (this machine, through
	// the Service's load balancer).
	Via string
	// viaIgnored is the first flag set that --via nodeport does not use (noteViaFlags).
	viaIgnored string
	// Egress is a destination outside the cluster each rung's client also measures (--egress),
	// with EgressCAFile's roots (egressRoots) for its TLS.
	Egress, EgressCAFile string
	egressRoots          []byte

	filter placement.Filter
}

// NewLadderOptions returns options with the defaults.
func NewLadderOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *LadderOptions {
	o := &LadderOptions{PathOptions: *path.NewPathOptions(flags, streams), MaxEndpoints: 10, ConnectionsPerRung: 200, Via: "pod"}
	o.HTML = true
	return o
}

func NewLadderCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewLadderOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "ladder DST",
		Short: "Measure one workload from the same node, the same zone and every other zone, side by side",
		Long: `Measure what each step away costs: a server agent next to DST (as in path), and a client agent in a
temporary pod on DST's node, on another node of its zone, on a node of each other zone and of
each other region, one rung at a time, with the same probes. Rungs that cannot exist (no other
node in the zone, nodes cordoned, tainted against DST's tolerations (clients never tolerate a
control-plane taint, off DST's node), or left out by --nodes and --zones) are listed with the
reason. --repeat runs the whole ladder several times, round-robin, and reports medians with
their range.

With DST svc/NAME (or --service), every rung also measures through the Service's ClusterIP next
to the pod IP, and where its new connections land by zone (agents in its endpoint pods behind a
temporary copy of the Service). --host-baseline adds a node-to-node rung in the nodes' own
network. -o html writes one self-contained page with the table and charts.

--via nodeport and --via loadbalancer measure the way in from this machine instead: agents in
DST svc/NAME's endpoints behind temporary copies of it with externalTrafficPolicy Cluster and
Local, entered through every node's NodePort, or through each copy's load balancer (its class,
source ranges and load-balancer annotations copied; the copies reach only the agents, which
answer the run's token alone). Each says which node answered, the source address the pod saw
(SNAT or kept) and the extra hop's cost.`,
		Example: `  kubectl netbench ladder deploy/backend
  kubectl netbench ladder shop/svc/api --probes rtt,http --repeat 3
  kubectl netbench ladder deploy/db --nodes pool=general --zones eu-west-1a,eu-west-1b -o json
  kubectl netbench ladder deploy/api --service svc/api --host-baseline -o html > ladder.html
  kubectl netbench ladder svc/web --via loadbalancer --start-timeout 5m`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.DstArg = args[0]
			if o.entering() {
				o.noteViaFlags(cmd.LocalFlags())
			}
			if err := o.CompleteFlags(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			cmd.SilenceUsage = true
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.DstContainer, "dst-container", "", "container of DST (default: the pod's default container)")
	f.StringVar(&o.NodeSelector, "nodes", "", "label selector the clients' nodes must match, e.g. pool=general")
	f.StringSliceVar(&o.Zones, "zones", nil, "other zones to measure (default: every zone)")
	f.StringVar(&o.Service, "service", "", "also measure this Service (svc/NAME) from every rung: ClusterIP against pod IP, and which zones its connections reach (default: DST when it is svc/NAME)")
	f.IntVar(&o.MaxEndpoints, "max-endpoints", o.MaxEndpoints, "endpoint pods of the Service that get an agent to say where connections land (1-100)")
	f.BoolVar(&o.HostBaseline, "host-baseline", false, "also measure node to node in the nodes' own network (hostNetwork agents on DST's node and the cross-zone rung's), to show what the pod network adds; needs a namespace whose Pod Security allows hostNetwork")
	f.StringVar(&o.Via, "via", o.Via, "how the clients reach DST: pod (client pods on the rungs' nodes), nodeport (this machine, through every node's NodePort, with externalTrafficPolicy Cluster and Local, on temporary NodePort copies of DST svc/NAME), or loadbalancer (this machine, through the load balancer of temporary LoadBalancer copies of DST svc/NAME, one per policy: a cloud provisions, and may bill, two load balancers for the run)")
	f.StringVar(&o.Egress, "egress", "", "also measure, from every rung's client, a destination outside the cluster as `path SRC URL` does (tcp://HOST:PORT, http(s)://…, grpc(s)://HOST:PORT, icmp://HOST or an address): the way out from each node and zone")
	f.StringVar(&o.EgressCAFile, "egress-ca-file", "", "PEM roots the --egress destination's TLS certificate must chain to (default: the agent's built-in public roots)")
	f.IntVar(&o.ConnectionsPerRung, "connections-per-rung", o.ConnectionsPerRung, "new connections each rung opens to the Service to see where they land (10-10000)")
	o.AddMeasureFlags(cmd)
	o.AddTolerationFlag(cmd, "the clients (beside DST's own tolerations, control-plane taints left out)")
	o.AddFlags(cmd)
	o.Gates.AddFlags(cmd, "'cross-zone.http.p50 > 1.5 * same-zone.http.p50'")
	return cmd
}

// Validate checks the flags; every message names the flag.
func (o *LadderOptions) Validate() error {
	if err := o.PathOptions.Validate(); err != nil {
		return err
	}
	switch {
	case o.MaxEndpoints < 1 || o.MaxEndpoints > 100:
		return fmt.Errorf("--max-endpoints %d: want 1-100", o.MaxEndpoints)
	case o.ConnectionsPerRung < 10 || o.ConnectionsPerRung > 10000:
		return fmt.Errorf("--connections-per-rung %d: want 10-10000", o.ConnectionsPerRung)
	}
	if err := o.validateVia(); err != nil {
		return err
	}
	if err := o.validateEgress(); err != nil {
		return err
	}
	if o.Service != "" {
		if _, name := o.serviceName(); name == "" {
			return fmt.Errorf("--service %q: want svc/NAME or NAMESPACE/svc/NAME", o.Service)
		}
	}
	sel, err := labels.Parse(o.NodeSelector)
	if err != nil {
		return fmt.Errorf("--nodes %q: %w", o.NodeSelector, err)
	}
	o.filter = placement.Filter{Nodes: sel, Zones: o.Zones}
	return nil
}

// Run plans the rungs, starts the server agent(s), measures each rung in turn with a client
// pod it deletes before the next, and prints the report.
func (o *LadderOptions) Run(ctx context.Context) error {
	start := time.Now()
	if o.entering() {
		return o.runEntry(ctx, start)
	}
	r := &ladderRun{o: o, rep: &report.LadderReport{APIVersion: report.APIVersion, Kind: "LadderReport", ToolVersion: version.Version,
		StartTime: start.UTC(), Profile: o.Profile, Rounds: o.Rounds}}
	r.timer = cmdutil.NewPhaseTimer(&r.rep.Timing, start)
	return o.Execute(ctx, start, r)
}

// planRungs reads the nodes and places the rungs around DST's node, with the clients' tolerations.
func (o *LadderOptions) planRungs(ctx context.Context, dst *session.Target) ([]report.LadderRung, []corev1.Toleration, error) {
	list, err := o.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, nil, fmt.Errorf("listing nodes to place the rungs (the ladder needs list on nodes, cluster-wide): %w", access.ForbiddenOr(err))
	}
	var nodes []placement.Node
	var dstNode *placement.Node
	for i := range list.Items {
		n := placement.NodeFrom(&list.Items[i])
		nodes = append(nodes, n)
		if n.Name == dst.Pod.Spec.NodeName {
			dstNode = &n
		}
	}
	if dstNode == nil {
		return nil, nil, fmt.Errorf("DST %s/%s runs on node %q, which is not in the node list", dst.Namespace, dst.Pod.Name, dst.Pod.Spec.NodeName)
	}
	tol := append(clientTolerations(dst.Pod.Spec.Tolerations, nodes), o.Tolerations...)
	var rungs []report.LadderRung
	for _, r := range placement.Ladder(*dstNode, nodes, tol, o.filter) {
		rungs = append(rungs, report.LadderRung{Name: r.Name, Class: r.Class, Node: r.Node, Zone: r.Zone, Region: r.Region, Skipped: r.Skipped})
	}
	if len(measurable(rungs)) == 0 {
		return nil, nil, fmt.Errorf("no rung can be measured for %s/%s: %s", dst.Namespace, dst.Pod.Name, skippedList(rungs))
	}
	return rungs, tol, nil
}

func measurable(rungs []report.LadderRung) []int {
	var idx []int
	for i, r := range rungs {
		if r.Skipped == "" {
			idx = append(idx, i)
		}
	}
	return idx
}

func skippedList(rungs []report.LadderRung) string {
	s := ""
	for _, r := range rungs {
		if s != "" {
			s += "; "
		}
		s += r.Name + ": " + r.Skipped
	}
	return s
}

// runRung measures one rung once: a client pod on the rung's node runs the job (its first
// nProbes probes agent to agent, the rest against the app's port) and is deleted before the
// next rung starts.
func (o *LadderOptions) runRung(ctx context.Context, sess *session.Session, srv *session.Agent, spec session.AgentSpec, nProbes int) (report.LadderRound, time.Duration, error) {
	dst, job := spec.Target, *spec.Job
	cli, err := sess.StartReady(ctx, spec, "the client agent")
	if err != nil {
		return report.LadderRound{}, 0, err
	}
	began := time.Now()
	from := &session.Target{Namespace: dst.Namespace, Pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: cli.Pod}}}
	res, err := o.Collect(ctx, cli, srv, from, dst)
	if err == nil {
		err = res.Missing(job.Probes[:nProbes], cli)
	}
	if err != nil {
		return report.LadderRound{}, 0, err
	}
	took := time.Since(began)
	out := report.LadderRound{ClientPod: cli.Pod, Failed: res.Failed()}
	at := report.Agents{} // the client is a temporary pod: its own quota is in its accounting
	if srv != nil && !srv.Temporary {
		at.Server, at.ServerInApp = dst.CPULimitCores(), !dst.HostNetwork()
	}
	for i, p := range job.Probes {
		r := res.Results[p.Label()]
		if r == nil {
			continue
		}
		report.Judge(r, at)
		if a := job.TargetAddr(p); a.IsValid() {
			r.IPFamily = path.FamilyName(a) // a Service's probes: the family of its ClusterIP
		}
		if i < nProbes {
			out.Probes = append(out.Probes, r)
		} else {
			out.AppPort = append(out.AppPort, r)
		}
	}
	if err := sess.Release(ctx, cli); err != nil {
		return report.LadderRound{}, 0, err
	}
	return out, took, nil
}

// addCosts prices the bytes each cross-zone or cross-region rung's throughput probes moved.
func (o *LadderOptions) addCosts(rep *report.LadderReport) {
	for i := range rep.Rungs {
		r := &rep.Rungs[i]
		if r.Class != report.CrossZone && r.Class != report.CrossRegion {
			continue
		}
		var bytes int64
		for _, round := range r.Results {
			for _, p := range round.Probes {
				if p.Throughput != nil {
					bytes += p.Throughput.BytesReceived
				}
			}
		}
		r.Cost = report.NewCost(bytes, o.PricePerGB)
	}
}

// addSpread sums, per rung, where the Service's connections landed through each ClusterIP of
// its copy and what the share that left the rung's zone costs.
func (o *LadderOptions) addSpread(rep *report.LadderReport, sr *serviceRun) {
	if sr.temp == nil {
		return
	}
	for i := range rep.Rungs {
		r := &rep.Rungs[i]
		for k, c := range clusterIPs(sr.temp, o.IPFamily) {
			sp := o.rungSpread(r, sr, report.SpreadProbe+c.suffix)
			if sp == nil {
				continue
			}
			sp.ClusterIP, sp.IPFamily = c.ip, path.FamilyName(netip.MustParseAddr(c.ip))
			if k == 0 {
				r.Spread = sp
			} else {
				r.SpreadSecondary = sp
			}
		}
	}
}

// rungSpread sums the rounds of the rung's spread probe named probe (nil: none answered).
func (o *LadderOptions) rungSpread(r *report.LadderRung, sr *serviceRun, probe string) *report.RungSpread {
	sp := &report.RungSpread{ZonePercent: map[string]float64{}}
	byZone := map[string]int{}
	for _, round := range r.Results {
		for _, p := range round.AppPort {
			if p.Spread == nil || p.Name != probe {
				continue
			}
			sp.Connections += p.Spread.Connections
			sp.Answered += p.Spread.Answered
			sp.Unanswered += p.Spread.Unanswered
			for k, n := range p.Spread.ErrorsByKind {
				if sp.UnansweredByKind == nil {
					sp.UnansweredByKind = map[string]int{}
				}
				sp.UnansweredByKind[k] += n
			}
			for z, n := range p.Spread.ByZone {
				byZone[z] += n
			}
		}
	}
	if sp.Answered == 0 {
		return nil
	}
	for z, n := range byZone {
		sp.ZonePercent[z] = report.Round1(100 * float64(n) / float64(sp.Answered))
	}
	sp.SameZonePercent = sp.ZonePercent[r.Zone]
	sp.MonthlyUSDPerGbps = report.Round1(report.NewCost(0, o.PricePerGB).MonthlyUSDPerGbps * (100 - sp.SameZonePercent) / 100)
	if len(sr.measured) < len(sr.ready) {
		sp.Estimate = fmt.Sprintf("%d of %d ready endpoints ran an agent (%v per zone of %v): connections to the others were refused and left out, so the shares are of the measured endpoints",
			len(sr.measured), len(sr.ready), countZones(sr.measured), countZones(sr.ready))
	}
	return sp
}
