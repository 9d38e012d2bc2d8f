package path

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/egress"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/internal/version"
	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Probe groups selectable with --probes: the default ones, and the rate probes a run asks for.
var (
	probeGroups = []string{"rtt", "udp", "path-mtu", "http", "http-new-conn", "http-max", "grpc", "tcp"}
	rateGroups  = []string{"tcp-rr", "udp-rr", "tcp-crr", "loaded-rtt"}
	knownGroups = slices.Concat(probeGroups, rateGroups)
)

// PathOptions holds everything `kubectl netbench path` needs.
type PathOptions struct {
	cmdutil.CommonOptions

	SrcArg, DstArg             string
	SrcContainer, DstContainer string
	Mode                       string
	Profile                    string
	IPFamily                   string // --ip-family (path, ladder)
	Probes                     []string
	Duration                   time.Duration
	QPS                        float64
	Connections                int
	RequestSize, ResponseSize  int // the rate probes'
	Streams                    int
	Interval                   time.Duration
	Port                       int
	HTTPPath                   string
	PricePerGB                 float64
	AllowHostNetwork           bool
	AllowPolicy                bool
	// Rounds is --repeat: the probes run this many times, round after round (ladder: every rung
	// each round).
	Rounds int
	// CAFile and Requests are for a destination outside the cluster (DST a URL): the roots its
	// chain must lead to (read into rootCAs), and how many requests measure it.
	CAFile   string
	Requests int
	// Download is how long one more request to an http(s) DST reads its answer's body (0: none).
	Download         time.Duration
	EgressPricePerGB float64
	rootCAs          []byte
	// TokenFile is the token of an agent outside the cluster (DST agent://HOST:PORT), read into
	// outsideToken; outsideHost and outsidePort are DST's.
	TokenFile    string
	outsideToken string
	outsideHost  string
	outsidePort  int
	// Via, ExternalTrafficPolicy and EntryNode are SRC here's: the way in from this machine.
	Via, ExternalTrafficPolicy, EntryNode string
}

// defaultPricePerGB is --price-per-gb's default: a cross-zone price per GB charged on each side.
const defaultPricePerGB = 0.01

// DefaultEgressPricePerGB is AWS's NAT gateway data processing price (us-east-1, USD per GB),
// the commonest toll on a path out of a cluster.
const DefaultEgressPricePerGB = 0.045

// MaxRounds bounds --repeat.
const MaxRounds = 20

// NewPathOptions returns options with the defaults.
func NewPathOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *PathOptions {
	return &PathOptions{
		CommonOptions:    cmdutil.NewCommonOptions(flags, streams),
		Mode:             session.ModeEphemeral,
		Profile:          "quick",
		Probes:           probeGroups,
		PricePerGB:       defaultPricePerGB,
		HTTPPath:         "/",
		Rounds:           1,
		Requests:         egress.DefaultCount,
		EgressPricePerGB: DefaultEgressPricePerGB,
		// ExternalTrafficPolicy: SRC here's temporary Service's, Kubernetes's default.
		ExternalTrafficPolicy: string(corev1.ServiceExternalTrafficPolicyCluster),
	}
}

func NewPathCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewPathOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "path SRC DST",
		Short: "Measure the network path between two workloads from inside their pods",
		Long: `Measure the real app-to-app path between two workloads: RTT, HTTP and gRPC latency with and
without connection reuse, closed-loop request rate, and single- and multi-stream TCP throughput.

SRC and DST are a pod name, TYPE/NAME (deploy/, sts/, ds/, rs/, job/, svc/ …) or NAMESPACE/TYPE/NAME.
DST may also be a destination outside the cluster: tcp://HOST:PORT, http://…, https://…,
grpc://HOST:PORT or grpcs://HOST:PORT; one agent beside SRC's application then times, through the
pod's own resolver and network, the DNS lookup, TCP connect, TLS handshake and first byte (gRPC: the
answer to the standard health check) on new and reused connections, and says whose address the far
side saw when it echoes it (the pod's, the node's SNAT, or a gateway's). icmp://HOST, or an address
alone, is looked up and pinged (a pod named like an address is pod/NAME).
DST agent://HOST:PORT is an agent outside the cluster (netbench-agent serve --token-file on a VM or
laptop): every two-sided probe runs against it, authenticated by the token of --token-file.
SRC here (a pod named so: pod/here) is this machine, outside the cluster: --via nodeport or --via
loadbalancer enters the cluster through a temporary Service of that type (--external-traffic-policy
Cluster or Local) whose one endpoint is DST's agent, and every probe but ICMP runs from here through
it; the report says which node was entered and the source address the pod saw (this machine's, or
a node's: SNAT).
A measuring agent is added to each pod as an ephemeral container (--mode ephemeral, the default),
or started in a temporary pod on each pod's node (--mode pod; --mode auto falls back to pods when
ephemeral containers are unavailable).`,
		Example: `  kubectl netbench path deploy/frontend deploy/backend
  kubectl netbench path frontend-7d9c shop/sts/db --probes rtt,tcp --profile seed
  kubectl netbench path deploy/frontend svc/backend --port 8080 --http-path /healthz -o json
  kubectl netbench path deploy/frontend deploy/backend --probes rtt,http --repeat 5 --fail-if 'valid == 0'
  kubectl netbench path deploy/frontend https://api.example.com/healthz --fail-if 'egress.ttfb-new.p50 > 200ms'
  kubectl netbench path deploy/frontend grpcs://orders.example.com:443
  kubectl netbench path deploy/frontend agent://vm.example:7443 --token-file run.token --probes rtt,udp,tcp
  kubectl netbench path here svc/web --via nodeport --external-traffic-policy Local
  kubectl netbench path here svc/web --via loadbalancer --probes rtt,tcp,http`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(cmd, args); err != nil {
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
	f.StringVar(&o.SrcContainer, "src-container", "", "container of SRC whose network the agent joins (default: the pod's default container)")
	f.StringVar(&o.DstContainer, "dst-container", "", "container of DST (default: the pod's default container)")
	f.StringVar(&o.TokenFile, "token-file", "", "DST agent://HOST:PORT: the file (mode 600) with the token netbench-agent serve --token-file was given there (kubectl netbench token makes one)")
	f.StringVar(&o.CAFile, "ca-file", "", "DST a https:// URL: PEM root certificates its chain must lead to, instead of the agent's built-in roots (Mozilla's)")
	f.Float64Var(&o.EgressPricePerGB, "egress-price-per-gb", o.EgressPricePerGB, "DST a URL: the NAT or egress gateway's price in USD per GB processed (default: AWS's NAT gateway data processing)")
	f.DurationVar(&o.Download, "download", 0, fmt.Sprintf("DST an http(s) URL: then read its answer's body once more, on a new connection, for up to this long after its first byte (or 1 GiB; up to %s): the download rate", egress.MaxDownload))
	f.IntVar(&o.Requests, "requests", o.Requests, fmt.Sprintf("DST a URL: new connections measured, then requests on one kept-alive connection (1-%d)", egress.MaxCount))
	o.addWayInFlags(cmd)
	o.AddMeasureFlags(cmd)
	o.AddFlags(cmd)
	o.Gates.AddFlags(cmd, "'rtt.p99 > 2ms' or 'tcp-1.gbps < 5'")
	return cmd
}

// AddMeasureFlags adds the flags that choose what is measured and how (path and ladder).
func (o *PathOptions) AddMeasureFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.Mode, "mode", o.Mode, "how to start the agents: ephemeral, pod, or auto")
	f.StringVar(&o.IPFamily, "ip-family", "", "address family to measure on a dual-stack path: 4, 6, or both (each, side by side; the IPv6 probes named *"+V6Suffix+"); default: DST's primary family")
	_ = cmd.RegisterFlagCompletionFunc("ip-family", cmdutil.FixedCompletion(Family4, Family6, FamilyBoth))
	f.StringVar(&o.Profile, "profile", o.Profile, "quick (whole run ≤ 30 s) or seed (the published methodology, ~8 min)")
	f.StringSliceVar(&o.Probes, "probes", o.Probes, "probes to run: "+strings.Join(probeGroups, ",")+"; and the rate probes, on request: "+strings.Join(rateGroups, ","))
	f.DurationVar(&o.Duration, "duration", 0, "duration of each HTTP, gRPC and TCP probe (default: the profile's)")
	f.Float64Var(&o.QPS, "qps", 0, "request rate of the fixed-rate HTTP and gRPC probes (default: the profile's)")
	f.IntVar(&o.Connections, "connections", 0, "connections of the fixed-rate HTTP and gRPC probes and clients of the rate probes (default: the profile's)")
	f.IntVar(&o.RequestSize, "request-size", 0, "bytes of each request of the rate probes (udp-rr: each datagram, 32 at least; default: 1, netperf's)")
	f.IntVar(&o.ResponseSize, "response-size", 0, "bytes of each response of tcp-rr and tcp-crr (default: 1; udp-rr answers with the request's size)")
	f.IntVar(&o.Streams, "streams", 0, "streams of the multi-stream TCP probe (default: the profile's)")
	f.DurationVar(&o.Interval, "interval", 0, "interval reports within each TCP probe, e.g. 10s")
	f.IntVar(&o.Port, "port", 0, "also measure TCP connect RTT and HTTP latency to DST's own container port")
	f.StringVar(&o.HTTPPath, "http-path", o.HTTPPath, "path requested on --port")
	f.IntVar(&o.Rounds, "repeat", o.Rounds, "run the probes this many times, round after round (ladder: every rung each round), and report each figure's median and range over the rounds (1-20)")
	f.Float64Var(&o.PricePerGB, "price-per-gb", o.PricePerGB, "cross-zone transfer price in USD per GB, charged on each side")
	f.BoolVar(&o.AllowPolicy, "allow-policy", false, "where NetworkPolicies block the agents, create temporary ones that allow exactly this run's agent ports between its agents and pods (deleted at the end)")
	f.BoolVar(&o.AllowHostNetwork, "allow-host-network", false, "measure from a hostNetwork pod (that is the node's network, not a pod path)")
	o.AddPullSecretFlag(cmd)
	_ = cmd.RegisterFlagCompletionFunc("mode", cmdutil.FixedCompletion(session.ModeEphemeral, session.ModePod, session.ModeAuto))
	_ = cmd.RegisterFlagCompletionFunc("profile", cmdutil.FixedCompletion("quick", "seed"))
}

// Complete resolves the namespace and the clients.
func (o *PathOptions) Complete(cmd *cobra.Command, args []string) error {
	o.SrcArg, o.DstArg = args[0], args[1]
	if bare, ok := egress.Bare(o.DstArg); ok {
		o.DstArg = bare // an address alone is a host outside the cluster, pinged
	}
	return o.CompleteFlags()
}

// Validate checks the flags; every message names the flag.
func (o *PathOptions) Validate() error {
	if err := checkFamilyFlag(o.IPFamily); err != nil {
		return err
	}
	switch o.Mode {
	case session.ModeEphemeral, session.ModePod, session.ModeAuto:
	default:
		return fmt.Errorf("--mode %q: want ephemeral, pod or auto", o.Mode)
	}
	if _, ok := Profiles[o.Profile]; !ok {
		return fmt.Errorf("--profile %q: want quick or seed", o.Profile)
	}
	if len(o.Probes) == 0 {
		return fmt.Errorf("--probes is empty: name at least one of %s", strings.Join(knownGroups, ","))
	}
	for _, p := range o.Probes {
		if !slices.Contains(knownGroups, p) {
			return fmt.Errorf("--probes: unknown probe %q (known: %s)", p, strings.Join(knownGroups, ","))
		}
	}
	if err := o.ValidateFlags(); err != nil {
		return err
	}
	if err := o.validateWayIn(); err != nil {
		return err
	}
	if err := o.validateOutsideAgent(); err != nil {
		return err
	}
	if err := o.validateExternal(); err != nil {
		return err
	}
	if o.Port < 0 || o.Port > 65535 {
		return fmt.Errorf("--port %d: want 1-65535", o.Port)
	}
	if o.HTTPPath != "/" && o.Port == 0 {
		return fmt.Errorf("--http-path needs --port: it is the path requested on DST's own port")
	}
	if !strings.HasPrefix(o.HTTPPath, "/") {
		return fmt.Errorf("--http-path %q: must start with /", o.HTTPPath)
	}
	return o.validateNumbers()
}

// validateNumbers checks every numeric flag against its range; each message names the flag.
func (o *PathOptions) validateNumbers() error {
	switch {
	case o.Duration != 0 && (o.Duration < time.Second || o.Duration > time.Hour):
		return fmt.Errorf("--duration %s: want 1s to 1h (0: the profile's)", o.Duration)
	case o.Interval != 0 && o.Interval < time.Second:
		return fmt.Errorf("--interval %s: want at least 1s", o.Interval)
	case o.Interval > 0 && o.Duration > 0 && o.Interval > o.Duration:
		return fmt.Errorf("--interval %s is longer than --duration %s", o.Interval, o.Duration)
	case o.Rounds < 1 || o.Rounds > MaxRounds:
		return fmt.Errorf("--repeat %d: want 1-%d", o.Rounds, MaxRounds)
	case o.Streams < 0 || o.Streams > agent.MaxStreams:
		return fmt.Errorf("--streams %d: want 1-%d", o.Streams, agent.MaxStreams)
	case o.Connections < 0 || o.Connections > agent.MaxConnections:
		return fmt.Errorf("--connections %d: want 1-%d", o.Connections, agent.MaxConnections)
	case o.Duration > 0 && (o.Duration.Seconds() < agent.MinLoadedSeconds || o.Duration.Seconds() > probes.MaxLoadedSeconds) && slices.Contains(o.Probes, "loaded-rtt"):
		return fmt.Errorf("--duration %s: loaded-rtt needs %gs at least (1 s of warm-up, 1 s of samples, 0.5 s before the load ends) and saturates the path for at most %ds", o.Duration, agent.MinLoadedSeconds, probes.MaxLoadedSeconds)
	case o.Connections > probes.MaxRateClients && (slices.Contains(o.Probes, "tcp-crr") || slices.Contains(o.Probes, "udp-rr")):
		return fmt.Errorf("--connections %d: tcp-crr and udp-rr take 1-%d clients", o.Connections, probes.MaxRateClients)
	case o.RequestSize < 0 || o.RequestSize > probes.MaxRateBytes:
		return fmt.Errorf("--request-size %d: want 1-%d bytes", o.RequestSize, probes.MaxRateBytes)
	case o.ResponseSize < 0 || o.ResponseSize > probes.MaxRateBytes:
		return fmt.Errorf("--response-size %d: want 1-%d bytes", o.ResponseSize, probes.MaxRateBytes)
	case o.RequestSize > 0 && o.RequestSize < probes.UDPHeaderLen && slices.Contains(o.Probes, "udp-rr"):
		return fmt.Errorf("--request-size %d: udp-rr's datagrams carry a %d-byte header: want %d-%d bytes", o.RequestSize, probes.UDPHeaderLen, probes.UDPHeaderLen, probes.MaxRateBytes)
	case !(o.QPS >= 0 && o.QPS <= agent.MaxQPS):
		return fmt.Errorf("--qps %g: want 1-%g", o.QPS, float64(agent.MaxQPS))
	case !(o.PricePerGB >= 0 && o.PricePerGB <= 1000):
		return fmt.Errorf("--price-per-gb %g: want a price from 0 to 1000 USD", o.PricePerGB)
	case strings.ContainsFunc(o.HTTPPath, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Errorf("--http-path %q: no spaces or control characters (encode them as %%20 …)", o.HTTPPath)
	case len(o.HTTPPath) > 2048:
		return fmt.Errorf("--http-path: %d characters, want at most 2048", len(o.HTTPPath))
	}
	return nil
}

// Run resolves both workloads, checks permissions, starts the agents, measures, cleans up and
// prints the report.
func (o *PathOptions) Run(ctx context.Context) error {
	start := time.Now()
	rep := &report.PathReport{APIVersion: report.APIVersion, Kind: "PathReport", ToolVersion: version.Version,
		StartTime: start.UTC(), Profile: o.Profile}
	if IsHere(o.SrcArg) {
		return o.Execute(ctx, start, &wayInRun{o: o, rep: rep, timer: cmdutil.NewPhaseTimer(&rep.Timing, start)})
	}
	if IsOutsideAgent(o.DstArg) {
		return o.Execute(ctx, start, &outsideRun{egressRun: egressRun{o: o, rep: rep, timer: cmdutil.NewPhaseTimer(&rep.Timing, start)},
			host: o.outsideHost, port: o.outsidePort, token: o.outsideToken})
	}
	if IsExternal(o.DstArg) {
		return o.Execute(ctx, start, &egressRun{o: o, rep: rep, timer: cmdutil.NewPhaseTimer(&rep.Timing, start)})
	}
	return o.Execute(ctx, start, &pathRun{o: o, rep: rep, timer: cmdutil.NewPhaseTimer(&rep.Timing, start)})
}

// resolvePair resolves SRC and DST and refuses the same pod twice.
func (o *PathOptions) resolvePair(ctx context.Context) (src, dst *session.Target, err error) {
	src, err = o.Resolve(ctx, o.SrcArg, o.SrcContainer, o.AllowHostNetwork)
	if err != nil {
		return nil, nil, fmt.Errorf("SRC: %w", err)
	}
	dst, err = o.Resolve(ctx, o.DstArg, o.DstContainer, o.AllowHostNetwork)
	if err != nil {
		return nil, nil, fmt.Errorf("DST: %w", err)
	}
	if src.Namespace == dst.Namespace && src.Pod.Name == dst.Pod.Name {
		return nil, nil, fmt.Errorf("SRC %s and DST %s are the same pod %s/%s: a path needs two pods (name another replica or workload)",
			o.SrcArg, o.DstArg, src.Namespace, src.Pod.Name)
	}
	return src, dst, nil
}

// StartServer starts the server agent and waits until it is ready; in auto mode a cluster
// without ephemeral containers falls back to temporary pods.
func (o *PathOptions) StartServer(ctx context.Context, sess *session.Session, dst *session.Target, port int, lifetime time.Duration, warnings *[]string) (*session.Agent, error) {
	spec := session.AgentSpec{Role: session.RoleServer, Target: dst, Serve: true, Lifetime: lifetime, Port: port}
	srv, err := sess.Start(ctx, spec)
	if err != nil && o.Mode == session.ModeAuto && errors.Is(err, session.ErrEphemeralUnsupported) {
		*warnings = append(*warnings, "ephemeral containers are not enabled on this cluster: used temporary pods instead")
		o.Progress("ephemeral containers unavailable: falling back to temporary pods")
		if perr := access.CheckPermissions(ctx, o.Client, []string{dst.Namespace}, access.NeededPermissions(true)); perr != nil {
			return nil, perr
		}
		sess.Mode = session.ModePod
		srv, err = sess.Start(ctx, spec)
	}
	if err != nil {
		return nil, fmt.Errorf("starting the server agent: %w", err)
	}
	if err := srv.WaitReady(ctx); err != nil {
		return nil, err
	}
	return srv, nil
}

func SetAgentName(e *report.Endpoint, a *session.Agent) {
	if a.Temporary {
		e.AgentPod = a.Pod
	} else {
		e.AgentContainer = a.Container
	}
}

// Endpoint describes a target and its node's topology; missing labels or permissions leave the
// zone empty, and the path class then says "unknown".
func (o *PathOptions) Endpoint(ctx context.Context, t *session.Target) report.Endpoint {
	e := report.Endpoint{Namespace: t.Namespace, Pod: t.Pod.Name, Container: t.Container, PodIP: t.Pod.Status.PodIP, Node: t.Pod.Spec.NodeName}
	if n, err := o.Client.CoreV1().Nodes().Get(ctx, e.Node, metav1.GetOptions{}); err == nil {
		e.Zone = n.Labels[corev1.LabelTopologyZone]
		e.Region = n.Labels[corev1.LabelTopologyRegion]
	}
	return e
}

// mtuWarnings says when the path carries smaller packets than the pods' interfaces, or the two
// interfaces disagree.
func mtuWarnings(results []*agent.ProbeResult) []string {
	var w []string
	for _, r := range results {
		m := r.PMTU
		if m == nil || m.PathMTU == 0 || m.LocalMTU == 0 || m.RemoteMTU == 0 {
			continue
		}
		if m.PathMTU < min(m.LocalMTU, m.RemoteMTU, 9216) {
			w = append(w, fmt.Sprintf("path MTU %d bytes is below both pods' interface MTUs (%d at SRC, %d at DST): larger packets are dropped on the way; TCP recovers only through path-MTU discovery, UDP datagrams above %d bytes are lost",
				m.PathMTU, m.LocalMTU, m.RemoteMTU, m.PathMTU))
		} else if m.LocalMTU != m.RemoteMTU {
			w = append(w, fmt.Sprintf("the pods' interface MTUs disagree (%d at SRC, %d at DST; path %d): TCP adapts through its MSS, but UDP datagrams above %d bytes from the larger side are lost",
				m.LocalMTU, m.RemoteMTU, m.PathMTU, min(m.LocalMTU, m.RemoteMTU)))
		}
	}
	return w
}
