package matrix

import (
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/path"
	"github.com/kubectl-netbench/kubectl-netbench/internal/placement"
)

// Bounds of the matrix's flags.
const (
	DefaultMatrixPort = 24930
	maxConcurrency    = 500
)

// MatrixOptions holds `kubectl netbench matrix`.
type MatrixOptions struct {
	cmdutil.CommonOptions
	Scope             string
	PairsPerCell      int
	Sample            int
	MaxPairs          int
	Concurrency       int
	Seed              uint64
	NodeSelector      string
	Zones             []string
	TolerateAllTaints bool
	TolerationsFrom   string
	Count             int
	Interval          time.Duration
	Throughput        time.Duration
	// Rates is --rates: each rate probe's duration per pair (0: none).
	Rates         time.Duration
	OutlierFactor float64
	NodeFactor    float64
	Port          int
	AllowPolicy   bool
	// IPFamily is --ip-family: the agents measure each other's address of that family (4 or 6;
	// "" the pods' primary), or each of both, side by side (both).
	IPFamily string

	// portGiven says --agent-port was set (the policy check leaves it as it is).
	portGiven bool

	filter placement.Filter
	// Colour forces colour on or off (nil: on a terminal unless NO_COLOR is set).
	Colour *bool
}

// NewMatrixOptions returns options with the defaults.
func NewMatrixOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *MatrixOptions {
	o := &MatrixOptions{CommonOptions: cmdutil.NewCommonOptions(flags, streams), Scope: placement.ScopeZones, PairsPerCell: 3, MaxPairs: 1000,
		Concurrency: 10, Count: 50, Interval: 10 * time.Millisecond, OutlierFactor: 1.5, NodeFactor: 1.2, Port: DefaultMatrixPort, Seed: 1}
	o.HTML = true
	return o
}

func NewMatrixCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewMatrixOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "matrix",
		Short: "Measure the whole cluster at once: every zone pair (or node pair), outliers named",
		Long: `Place one agent on each node the plan needs with a temporary DaemonSet in the namespace (Kubernetes
schedules them; only pods the DaemonSet controls are trusted), then have agents measure each
other, pair by pair, through the API server (the plugin never needs the pod network). The plan
prints its size and duration before it starts:

  --scope zones   every ordered zone pair, each zone to itself too, --pairs-per-cell node pairs each,
                  spread so that every node is measured where the cells have room (default)
  --scope nodes   every ordered pair of distinct nodes (refused above --max-pairs)
  --sample N      N pairs drawn at random (--seed)

Pairs run in rounds in which no node sends or serves twice (--concurrency pairs at most). The
report is a zone × zone matrix (and node × node for --scope nodes) of RTT p50/p99, each node
compared with the same cells' other pairs, and the outliers by name. The DaemonSet is deleted
on every exit path; after a plugin killed outright, each agent closes its port within 45 s (its
lease is no longer renewed) and idles until 'kubectl netbench cleanup', or the next matrix
once the run's not-after time has passed, deletes the DaemonSet.`,
		Example: `  kubectl netbench matrix -n netbench
  kubectl netbench matrix -n netbench --scope nodes --nodes pool=general -o html > matrix.html
  kubectl netbench matrix -n netbench --sample 200 --concurrency 20 --dry-run
  kubectl netbench matrix -n netbench --fail-if 'cross-zone.rtt.p99 > 5ms' --fail-if 'outliers.count > 0'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := o.Validate(cmd); err != nil {
				return err
			}
			if err := o.CompleteFlags(); err != nil {
				return err
			}
			cmd.SilenceUsage = true
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Scope, "scope", o.Scope, "zones, nodes or sample: which node pairs to measure")
	f.IntVar(&o.PairsPerCell, "pairs-per-cell", o.PairsPerCell, "with --scope zones: node pairs per zone pair (1-100)")
	f.IntVar(&o.Sample, "sample", 0, "measure this many node pairs drawn at random (implies --scope sample)")
	f.Uint64Var(&o.Seed, "seed", o.Seed, "with --sample: the same seed draws the same pairs")
	f.IntVar(&o.MaxPairs, "max-pairs", o.MaxPairs, "refuse a plan of more pairs than this")
	f.IntVar(&o.Concurrency, "concurrency", o.Concurrency, fmt.Sprintf("pairs measured at once, on disjoint nodes only (1-%d)", maxConcurrency))
	f.StringVar(&o.NodeSelector, "nodes", "", "label selector the nodes must match, e.g. pool=general")
	f.StringSliceVar(&o.Zones, "zones", nil, "only nodes in these zones")
	f.BoolVar(&o.TolerateAllTaints, "tolerate-all-taints", false, "place agents on tainted nodes too")
	f.StringVar(&o.TolerationsFrom, "tolerations-from", "", "give the agents the tolerations of this workload's pod (TYPE/NAME in -n), to reach its nodes")
	o.AddTolerationFlag(cmd, "the agents")
	o.AddPullSecretFlag(cmd)
	f.IntVar(&o.Count, "count", o.Count, "round trips per pair, ICMP and TCP each (5-1000)")
	f.DurationVar(&o.Interval, "interval", o.Interval, "between round trips (1ms-1s)")
	f.DurationVar(&o.Throughput, "throughput", 0, "also measure TCP throughput for this long per pair (e.g. 2s; pairs stay on disjoint nodes)")
	f.DurationVar(&o.Rates, "rates", 0, "also run tcp-rr (1 connection), udp-rr (1 client) and tcp-crr (4 clients) for this long each per pair (e.g. 2s): transactions and connections per second")
	f.Float64Var(&o.OutlierFactor, "outlier-factor", o.OutlierFactor, "a pair is an outlier when its p50 or p99 is this many times the same cell's other pairs' (1.05-100)")
	f.Float64Var(&o.NodeFactor, "node-outlier-factor", o.NodeFactor, "a node is an outlier when its pairs are, by the median, this many times the same cells' other pairs (1.05-100)")
	f.IntVar(&o.Port, "agent-port", o.Port, "the port every agent listens on in its pod (1024-65535)")
	f.StringVar(&o.IPFamily, "ip-family", "", "address family the agents measure each other over on a dual-stack cluster: 4, 6, or both (each in the same jobs, side by side; IPv6's figures named v6.*); default: the pods' primary")
	_ = cmd.RegisterFlagCompletionFunc("ip-family", cmdutil.FixedCompletion("4", "6", path.FamilyBoth))
	f.BoolVar(&o.AllowPolicy, "allow-policy", false, "where NetworkPolicies block the agents, create a temporary one that lets exactly this run's agents reach each other and the API server reach their port (deleted at the end)")
	o.AddFlags(cmd)
	cmd.ValidArgsFunction = nil
	o.Gates.AddFlags(cmd, "'cross-zone.rtt.p99 > 5ms'")
	_ = cmd.RegisterFlagCompletionFunc("scope", cmdutil.FixedCompletion(placement.ScopeZones, placement.ScopeNodes, placement.ScopeSample))
	return cmd
}

// Validate checks the flags before anything is read from the cluster; each message names its flag.
func (o *MatrixOptions) Validate(cmd *cobra.Command) error {
	o.portGiven = cmd != nil && cmd.Flags().Changed("agent-port")
	if o.Sample != 0 {
		if cmd != nil && cmd.Flags().Changed("scope") && o.Scope != placement.ScopeSample {
			return fmt.Errorf("--sample %d with --scope %s: --sample is its own scope", o.Sample, o.Scope)
		}
		o.Scope = placement.ScopeSample
	}
	if err := o.validateNumbers(); err != nil {
		return err
	}
	switch o.IPFamily {
	case "", "4", "6", path.FamilyBoth:
	default:
		return fmt.Errorf("--ip-family %q: want 4, 6 or both (default: the pods' primary family)", o.IPFamily)
	}
	sel, err := labels.Parse(o.NodeSelector)
	if err != nil {
		return fmt.Errorf("--nodes %q: %w", o.NodeSelector, err)
	}
	o.filter = placement.Filter{Nodes: sel, Zones: o.Zones}
	if o.TolerateAllTaints && o.TolerationsFrom != "" {
		return fmt.Errorf("--tolerations-from %s with --tolerate-all-taints: choose one", o.TolerationsFrom)
	}
	return o.ValidateFlags()
}

func (o *MatrixOptions) validateNumbers() error {
	switch {
	case !slices.Contains([]string{placement.ScopeZones, placement.ScopeNodes, placement.ScopeSample}, o.Scope):
		return fmt.Errorf("--scope %q: want zones, nodes or sample", o.Scope)
	case o.Scope == placement.ScopeSample && (o.Sample < 1 || o.Sample > 1e6):
		return fmt.Errorf("--sample %d: want 1-1000000 pairs", o.Sample)
	case o.PairsPerCell < 1 || o.PairsPerCell > 100:
		return fmt.Errorf("--pairs-per-cell %d: want 1-100", o.PairsPerCell)
	case o.MaxPairs < 1:
		return fmt.Errorf("--max-pairs %d: want at least 1", o.MaxPairs)
	case o.Concurrency < 1 || o.Concurrency > maxConcurrency:
		return fmt.Errorf("--concurrency %d: want 1-%d", o.Concurrency, maxConcurrency)
	case o.Count < 5 || o.Count > 1000:
		return fmt.Errorf("--count %d: want 5-1000", o.Count)
	case o.Interval < time.Millisecond || o.Interval > time.Second:
		return fmt.Errorf("--interval %s: want 1ms-1s", o.Interval)
	case o.Throughput != 0 && (o.Throughput < 500*time.Millisecond || o.Throughput > 30*time.Second):
		return fmt.Errorf("--throughput %s: want 500ms-30s", o.Throughput)
	case o.Rates != 0 && (o.Rates < 500*time.Millisecond || o.Rates > agent.MeshRateSeconds*time.Second):
		return fmt.Errorf("--rates %s: want 500ms-%ds (each of the three rate probes runs this long per pair)", o.Rates, agent.MeshRateSeconds)
	case !(o.OutlierFactor >= 1.05 && o.OutlierFactor <= 100):
		return fmt.Errorf("--outlier-factor %g: want 1.05-100", o.OutlierFactor)
	case !(o.NodeFactor >= 1.05 && o.NodeFactor <= 100):
		return fmt.Errorf("--node-outlier-factor %g: want 1.05-100", o.NodeFactor)
	case o.Port < 1024 || o.Port > 65535:
		return fmt.Errorf("--agent-port %d: want 1024-65535", o.Port)
	}
	if d := o.perPair(); d > agent.MaxMeshJob-10*time.Second {
		return fmt.Errorf("--count %d × --interval %s (ICMP and TCP), --throughput %s and --rates %s (three probes) take %s per pair%s: want at most %s", o.Count, o.Interval, o.Throughput, o.Rates, d, o.familiesNote(), agent.MaxMeshJob-10*time.Second)
	}
	return nil
}

// perPair is how long one pair's job measures.
func (o *MatrixOptions) perPair() time.Duration {
	d := 2*time.Duration(o.Count)*o.Interval + o.Throughput + time.Duration(len(rateProbes))*o.Rates
	if o.IPFamily == path.FamilyBoth {
		return 2 * d // every probe again over IPv6, in the same job
	}
	return d
}

func (o *MatrixOptions) familiesNote() string {
	if o.IPFamily == path.FamilyBoth {
		return ", both families together"
	}
	return ""
}

// rateProbes are --rates' probes, path's defaults: one client for tcp-rr and udp-rr (netperf's
// TCP_RR and UDP_RR), four for tcp-crr, capped at agent.MeshCRRCap connections per pair (the
// agents refuse more); 1-byte requests and responses.
var rateProbes = []agent.ProbeSpec{{Kind: agent.ProbeTCPRR, Connections: 1}, {Kind: agent.ProbeUDPRR, Connections: 1},
	{Kind: agent.ProbeTCPCRR, Connections: agent.MeshCRRClients, Count: agent.MeshCRRCap}}

// job is what the agent on a pair's From runs against the agent at ip.
func (o *MatrixOptions) job(ip string) agent.Job {
	ms := float64(o.Interval) / float64(time.Millisecond)
	probes := []agent.ProbeSpec{{Kind: agent.ProbeICMP, Count: o.Count, IntervalMillis: ms}, {Kind: agent.ProbeTCPRTT, Count: o.Count, IntervalMillis: ms}}
	if o.Throughput > 0 {
		probes = append(probes, agent.ProbeSpec{Kind: agent.ProbeTCP, Name: "tcp", Streams: 1, DurationSeconds: o.Throughput.Seconds()})
	}
	for _, p := range rateProbes {
		if o.Rates > 0 {
			p.DurationSeconds = o.Rates.Seconds()
			probes = append(probes, p)
		}
	}
	if o.IPFamily == path.FamilyBoth {
		// After every IPv4 probe (a blackholed IPv6 path can take the rest of the job's time):
		// the fleet aims them at the server agent's IPv6 address.
		probes = append(probes, path.V6Twins(probes)...)
	}
	return agent.Job{APIVersion: agent.APIVersion, Host: ip, Port: o.Port, Probes: probes}
}

// colour says whether the human report is coloured: on a terminal, unless NO_COLOR is set.
func (o *MatrixOptions) colour() bool {
	if o.Colour != nil {
		return *o.Colour
	}
	f, ok := o.Out.(*os.File)
	return ok && term.IsTerminal(int(f.Fd())) && os.Getenv("NO_COLOR") == "" && os.Getenv("TERM") != "dumb"
}

// tolerations are the agents': every taint, or a workload's and --toleration's.
func (o *MatrixOptions) tolerations(ctx context.Context) ([]corev1.Toleration, error) {
	switch {
	case o.TolerateAllTaints:
		return []corev1.Toleration{{Operator: corev1.TolerationOpExists}}, nil
	case o.TolerationsFrom != "":
		t, err := o.Resolve(ctx, o.TolerationsFrom, "", true)
		if err != nil {
			return nil, fmt.Errorf("--tolerations-from: %w", err)
		}
		return append(slices.Clone(t.Pod.Spec.Tolerations), o.Tolerations...), nil
	}
	return slices.Clone(o.Tolerations), nil
}
