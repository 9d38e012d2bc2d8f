package matrix

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/render"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/path"
	"github.com/kubectl-netbench/kubectl-netbench/internal/placement"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/internal/version"
)

// matrixRun is one run of the matrix: its plan, its fleet and its report.
type matrixRun struct {
	o      *MatrixOptions
	rep    *report.MatrixReport
	timer  *cmdutil.PhaseTimer
	nodes  []placement.Node // the usable nodes
	pairs  []placement.Pair
	rounds [][]int
	// nodeCount is how many nodes the cluster has; tolerations are the agents' (read once).
	nodeCount   int
	tolerations []corev1.Toleration
	sess        *session.Session
	fleet       *session.Fleet
	// skip holds the probes the NetworkPolicies block (by label).
	skip map[string]bool
}

// Run plans the pairs, places the agents, measures round by round and prints the report.
func (o *MatrixOptions) Run(ctx context.Context) error {
	start := time.Now()
	r := &matrixRun{o: o, rep: newMatrixReport(o, start)}
	r.timer = cmdutil.NewPhaseTimer(&r.rep.Timing, start)
	return o.Execute(ctx, start, r)
}

func newMatrixReport(o *MatrixOptions, start time.Time) *report.MatrixReport {
	r := &report.MatrixReport{APIVersion: report.APIVersion, Kind: "MatrixReport", ToolVersion: version.Version,
		StartTime: start.UTC(), Namespace: o.Namespace, Scope: o.Scope}
	switch o.IPFamily {
	case "":
	case path.FamilyBoth:
		r.IPFamily = "IPv4" // and IPv6 in r.IPv6
	default:
		r.IPFamily = "IPv" + o.IPFamily
	}
	return r
}

// Open refuses, before anything is created, a user without the permissions and a namespace
// that is not there; then it says the plan (on a terminal or not: progress lines are only for
// terminals) and opens the session, whose agents are always temporary pods.
func (r *matrixRun) Open(ctx context.Context) (*session.Session, error) {
	o := r.o
	if err := access.CheckPermissions(ctx, o.Client, []string{o.Namespace}, access.MatrixPermissions); err != nil {
		return nil, err
	}
	if _, err := o.Client.CoreV1().Namespaces().Get(ctx, o.Namespace, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("namespace %q (-n) not found: the matrix's agents run there", o.Namespace)
	}
	if err := o.CheckPullSecrets(ctx, &o.CommonOptions, o.Namespace); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.ErrOut, "plan: %d pairs among %d agents on %d nodes, %d rounds of up to %d at once, ~%.0f s of measuring after the agents start\n",
		len(r.pairs), len(r.agentNodes()), r.nodeCount, len(r.rounds), o.Concurrency, r.rep.Plan.EstimatedSeconds)
	r.timer.Phase("plan")
	r.sess = o.NewSession(session.ModePod)
	return r.sess, nil
}

// Start removes what killed runs left, opens the NetworkPolicies where asked, and starts the
// agents.
func (r *matrixRun) Start(ctx context.Context) error {
	o := r.o
	r.rep.Warnings = append(r.rep.Warnings, o.CleanStaleDaemonSets(ctx, o.Namespace, o.ServerNow())...)
	if err := r.planMeshPolicies(ctx, o.portGiven); err != nil {
		return err
	}
	if err := r.startFleet(ctx); err != nil {
		return err
	}
	r.timer.Phase("start-agents")
	return nil
}

// Plan reads the nodes (in pages), keeps the usable ones and plans the pairs and rounds.
func (r *matrixRun) Plan(ctx context.Context) error {
	o := r.o
	all, err := listNodes(ctx, o)
	if err != nil {
		return err
	}
	if r.tolerations, err = o.tolerations(ctx); err != nil {
		return err
	}
	var excluded []placement.Excluded
	r.nodes, excluded = placement.Usable(all, r.tolerations, o.filter)
	for _, e := range excluded {
		r.rep.Excluded = append(r.rep.Excluded, report.MatrixExcl{Node: e.Node, Reason: e.Reason})
	}
	if err := o.checkFamily(r.nodes); err != nil {
		return err
	}
	mp := placement.MatrixPlan{Scope: o.Scope, PairsPerCell: o.PairsPerCell, Sample: o.Sample, MaxPairs: o.MaxPairs, Seed: o.Seed}
	if r.pairs, err = mp.Plan(r.nodes); err != nil {
		return err
	}
	if len(r.pairs) == 0 {
		return fmt.Errorf("no pair of nodes to measure: %d of %d nodes are usable%s", len(r.nodes), len(all), excludedNote(excluded))
	}
	r.rounds = placement.Schedule(r.pairs, o.Concurrency)
	r.rep.Plan = report.MatrixPlan{Pairs: len(r.pairs), Rounds: len(r.rounds), Concurrency: o.Concurrency, PerPairSeconds: o.perPair().Seconds(),
		EstimatedSeconds: report.Round1(float64(len(r.rounds)) * (o.perPair() + roundOverhead).Seconds())}
	if o.Scope == placement.ScopeZones {
		r.rep.Plan.PairsPerCell = o.PairsPerCell
	}
	if o.Scope == placement.ScopeSample {
		r.rep.Plan.Sample = o.Sample
	}
	r.nodeCount = len(all)
	return r.checkLifetime()
}

// checkFamily refuses --ip-family where a usable node has no address of that family (a
// single-stack cluster, or a node pool without it), before anything is created.
func (o *MatrixOptions) checkFamily(nodes []placement.Node) error {
	for _, n := range nodes {
		for _, fam := range []struct {
			name string
			has  bool
		}{{"4", n.IPv4}, {"6", n.IPv6}} {
			if (o.IPFamily == fam.name || o.IPFamily == path.FamilyBoth) && !fam.has {
				return fmt.Errorf("--ip-family %s: node %s has no IPv%s pod range or InternalIP: the cluster is not dual-stack there (leave it out with --nodes or --zones)", o.IPFamily, n.Name, fam.name)
			}
		}
	}
	return nil
}

// roundOverhead is what a round adds to its pairs' measuring: jobs posted and answered
// through the API server.
const roundOverhead = 300 * time.Millisecond

func excludedNote(ex []placement.Excluded) string {
	if len(ex) == 0 {
		return ""
	}
	var s []string
	for i, e := range ex {
		if i == 5 {
			s = append(s, fmt.Sprintf("and %d more", len(ex)-5))
			break
		}
		s = append(s, e.Node+" "+e.Reason)
	}
	return " (left out: " + strings.Join(s, "; ") + ")"
}

// listNodes reads every node, 500 at a time.
func listNodes(ctx context.Context, o *MatrixOptions) ([]placement.Node, error) {
	var out []placement.Node
	opts := metav1.ListOptions{Limit: 500}
	for {
		list, err := o.Client.CoreV1().Nodes().List(ctx, opts)
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("the matrix places one agent per node and must list nodes: %w", access.Forbidden(err))
		}
		if err != nil {
			return nil, fmt.Errorf("listing nodes: %w", err)
		}
		for i := range list.Items {
			out = append(out, placement.NodeFrom(&list.Items[i]))
		}
		if opts.Continue = list.Continue; opts.Continue == "" {
			return out, nil
		}
	}
}

// agentNodes are the nodes the plan needs an agent on, by name.
func (r *matrixRun) agentNodes() []string {
	seen := map[string]bool{}
	var out []string
	for _, p := range r.pairs {
		for _, n := range []string{p.From, p.To} {
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

func (r *matrixRun) PlannedFigures() map[string]string {
	seen := map[[2]string]bool{}
	var cells [][2]string
	for _, p := range r.pairs {
		if k := [2]string{p.FromZone, p.ToZone}; !seen[k] {
			seen[k] = true
			cells = append(cells, k)
		}
	}
	return report.MatrixPlannedFigures(cells, report.MatrixMeasures{Throughput: r.o.Throughput > 0, Rates: r.o.Rates > 0, BothFamilies: r.o.IPFamily == path.FamilyBoth})
}

// WritePlan prints the plan of a dry run in words: the pairs round by round, then its size.
func (r *matrixRun) WritePlan() error {
	for i, round := range r.rounds {
		for _, pi := range round {
			p := r.pairs[pi]
			fmt.Fprintf(r.o.Out, "round %d: %s (%s) → %s (%s)\n", i+1, p.From, p.FromZone, p.To, p.ToZone)
		}
	}
	_, err := fmt.Fprintf(r.o.Out, "%d pairs, %d rounds, ~%.0f s of measuring; agents on %d nodes\n",
		len(r.pairs), len(r.rounds), r.rep.Plan.EstimatedSeconds, len(r.agentNodes()))
	return err
}

// startFleet places the agents and waits for them.
func (r *matrixRun) startFleet(ctx context.Context) error {
	o := r.o
	nodes := r.agentNodes()
	hostnames := make(map[string]string, len(r.nodes))
	for _, n := range r.nodes {
		hostnames[n.Name] = n.Labels[corev1.LabelHostname]
	}
	lifetime := r.lifetime()
	o.Progress("starting %d agents (DaemonSet %s-%s-%s in %s, each stops serving %s after the plugin stops renewing its lease, and within %s at most)",
		len(nodes), "netbench", r.sess.RunID, session.RoleMesh, o.Namespace, session.FleetLeasePeriod, lifetime.Round(time.Second))
	var err error
	r.fleet, err = r.sess.StartFleet(ctx, session.FleetSpec{Namespace: o.Namespace, Nodes: nodes, Hostnames: hostnames, Tolerations: r.tolerations,
		Port: o.Port, Lifetime: lifetime, Lease: session.FleetLeasePeriod, IPFamily: fleetFamily(o.IPFamily)})
	if err != nil {
		return err
	}
	return r.fleet.WaitReady(ctx, o.StartTimeout, func(ready, total int) {
		if ready == total || ready%max(1, total/10) == 0 {
			o.Progress("agents ready: %d/%d", ready, total)
		}
	})
}

// fleetFamily is the family of the members' addresses jobs aim at: both families' jobs aim at
// IPv4, their IPv6 twins at the member's IPv6 address (session.Fleet.Run).
func fleetFamily(v string) string {
	if v == path.FamilyBoth {
		return path.Family4
	}
	return v
}

// MaxMatrixLifetime caps the agents' lifetime whatever the plan: their not-after time is at
// most this far ahead, and so is the time after which the next run may delete a DaemonSet a
// killed run left. A plan that needs longer is refused before anything is created.
const MaxMatrixLifetime = 4 * time.Hour

// ErrPlanTooLong means the plan would keep the agents beyond MaxMatrixLifetime.
var ErrPlanTooLong = errors.New("the plan would keep the agents longer than the maximum")

// lifetime bounds the agents (and the temporary NetworkPolicy): the start timeout, then twice
// the estimated measuring (rounds run slower than planned when the API server is slow), plus
// 30 s. checkLifetime keeps it within MaxMatrixLifetime.
func (r *matrixRun) lifetime() time.Duration {
	return r.o.StartTimeout + time.Duration(r.rep.Plan.EstimatedSeconds*float64(time.Second))*2 + 30*time.Second
}

// checkLifetime refuses a plan whose agents would need more than MaxMatrixLifetime.
func (r *matrixRun) checkLifetime() error {
	if l := r.lifetime(); l > MaxMatrixLifetime {
		return fmt.Errorf("%w: %d pairs in %d rounds take ~%s, so the agents would need %s (--start-timeout %s, twice the estimate, 30 s), over %s: measure fewer pairs (--sample, --pairs-per-cell, --max-pairs), more at once (--concurrency) or each for less (--count, --interval, --throughput)",
			ErrPlanTooLong, len(r.pairs), len(r.rounds), time.Duration(r.rep.Plan.EstimatedSeconds*float64(time.Second)).Round(time.Second),
			l.Round(time.Second), r.o.StartTimeout, MaxMatrixLifetime)
	}
	return nil
}

// Measure runs the rounds; each pair's job goes to its client agent, at most Concurrency at
// once and never two on one node. It returns the time spent measuring; an interrupted run
// ends after the round in progress, with ctx's error.
func (r *matrixRun) Measure(ctx context.Context) (time.Duration, error) {
	start := time.Now()
	r.rep.Pairs = make([]report.MatrixPair, len(r.pairs))
	done := 0
	for _, round := range r.rounds {
		var wg sync.WaitGroup
		for _, i := range round {
			wg.Add(1)
			go func() { defer wg.Done(); r.rep.Pairs[i] = r.measurePair(ctx, r.pairs[i]) }()
		}
		wg.Wait()
		if ctx.Err() != nil {
			break
		}
		done += len(round)
		eta := time.Duration(float64(time.Since(start)) / float64(done) * float64(len(r.pairs)-done))
		r.o.Progress("measured %d/%d pairs, ETA %s", done, len(r.pairs), eta.Round(time.Second))
	}
	measuring := time.Since(start)
	if ctx.Err() != nil {
		return measuring, ctx.Err()
	}
	r.timer.Phase("measure")
	return measuring, nil
}

func (r *matrixRun) measurePair(ctx context.Context, p placement.Pair) report.MatrixPair {
	out := report.MatrixPair{From: p.From, To: p.To, FromZone: p.FromZone, ToZone: p.ToZone}
	for _, n := range []string{p.From, p.To} {
		if m := r.fleet.Members[n]; !m.Ready {
			out.Error = fmt.Sprintf("the agent on %s is not ready: %s", n, strings.TrimPrefix(m.Problem, "fatal: "))
			if r.o.IPFamily == path.FamilyBoth {
				out.IPv6Error = out.Error
			}
			return out
		}
	}
	// The agent answers once its job is over, at the latest MaxMeshJob after it began.
	ctx, cancel := context.WithTimeout(ctx, max(r.o.perPair()+30*time.Second, agent.MaxMeshJob+5*time.Second))
	defer cancel()
	results, err := r.fleet.Run(ctx, p.From, p.To, r.job(""))
	out.Results = results
	out.RateError, out.IPv6RateError, err = splitRateErrors(err)
	out.Error, out.IPv6Error = familyErrors(err, r.o.IPFamily == path.FamilyBoth)
	return out
}

// Finish has nothing to add before the session closes: the cells are built after (build).
func (r *matrixRun) Finish(context.Context) {}

// build lists the agents' nodes and builds the matrix from the pairs, once cleanup is timed.
func (r *matrixRun) build() {
	zones := make(map[string]string, len(r.nodes))
	for _, n := range r.nodes {
		zones[n.Name] = placement.ZoneOf(n)
	}
	for _, n := range r.agentNodes() {
		m := r.fleet.Members[n]
		r.rep.Nodes = append(r.rep.Nodes, report.MatrixNode{Name: n, Zone: zones[n], Pod: m.Pod, IP: m.IP})
		if a, err := netip.ParseAddr(m.IP); err == nil && r.rep.IPFamily == "" {
			r.rep.IPFamily = path.FamilyName(a) // the pods' primary: said, so every figure has a family
		}
	}
	r.rep.BuildMatrix(r.o.OutlierFactor, r.o.NodeFactor)
}

func (r *matrixRun) Closed() { r.rep.Policy.Removed = len(r.rep.Policy.Temporary) > 0 }

func (r *matrixRun) Output() cmdutil.RunOutput {
	return cmdutil.RunOutput{Timing: &r.rep.Timing, Timer: r.timer, Figures: r.rep.FigureValues, Checks: &r.rep.Checks,
		Complete: r.build,
		Write:    func() error { return render.WriteMatrix(r.o.Out, r.o.Output, r.rep, r.o.colour()) }}
}
