package plugin

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/version"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/report"
)

// Probe groups selectable with --probes.
var probeGroups = []string{"rtt", "udp", "path-mtu", "http", "http-new-conn", "http-max", "grpc", "tcp"}

// PathOptions holds everything `kubectl netbench path` needs.
type PathOptions struct {
	commonOptions

	SrcArg, DstArg             string
	SrcContainer, DstContainer string
	Mode                       string
	Profile                    string
	Probes                     []string
	Duration                   time.Duration
	QPS                        float64
	Connections                int
	Streams                    int
	Interval                   time.Duration
	Port                       int
	HTTPPath                   string
	PricePerGB                 float64
	AllowHostNetwork           bool
	AllowPolicy                bool
}

// NewPathOptions returns options with the defaults.
func NewPathOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *PathOptions {
	return &PathOptions{
		commonOptions: newCommonOptions(flags, streams),
		Mode:          ModeEphemeral,
		Profile:       "quick",
		Probes:        probeGroups,
		PricePerGB:    0.01,
		HTTPPath:      "/",
	}
}

func newPathCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewPathOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "path SRC DST",
		Short: "Measure the network path between two workloads from inside their pods",
		Long: `Measure the real app-to-app path between two workloads: RTT, HTTP and gRPC latency with and
without connection reuse, closed-loop request rate, and single- and multi-stream TCP throughput.

SRC and DST are a pod name, TYPE/NAME (deploy/, sts/, ds/, rs/, job/, svc/ …) or NAMESPACE/TYPE/NAME.
A measuring agent is added to each pod as an ephemeral container (--mode ephemeral, the default),
or started in a temporary pod on each pod's node (--mode pod; --mode auto falls back to pods when
ephemeral containers are unavailable).`,
		Example: `  kubectl netbench path deploy/frontend deploy/backend
  kubectl netbench path frontend-7d9c shop/sts/db --probes rtt,tcp --profile seed
  kubectl netbench path deploy/frontend svc/backend --port 8080 --http-path /healthz -o json`,
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
	o.addMeasureFlags(cmd)
	o.addFlags(cmd)
	o.gates.addFlags(cmd, "'rtt.p99 > 2ms' or 'tcp-1.gbps < 5'")
	return cmd
}

// addMeasureFlags adds the flags that choose what is measured and how (path and ladder).
func (o *PathOptions) addMeasureFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.Mode, "mode", o.Mode, "how to start the agents: ephemeral, pod, or auto")
	f.StringVar(&o.Profile, "profile", o.Profile, "quick (whole run ≤ 30 s) or seed (the published methodology, ~8 min)")
	f.StringSliceVar(&o.Probes, "probes", o.Probes, "probes to run: "+strings.Join(probeGroups, ","))
	f.DurationVar(&o.Duration, "duration", 0, "duration of each HTTP, gRPC and TCP probe (default: the profile's)")
	f.Float64Var(&o.QPS, "qps", 0, "request rate of the fixed-rate HTTP and gRPC probes (default: the profile's)")
	f.IntVar(&o.Connections, "connections", 0, "connections of the fixed-rate HTTP and gRPC probes (default: the profile's)")
	f.IntVar(&o.Streams, "streams", 0, "streams of the multi-stream TCP probe (default: the profile's)")
	f.DurationVar(&o.Interval, "interval", 0, "interval reports within each TCP probe, e.g. 10s")
	f.IntVar(&o.Port, "port", 0, "also measure TCP connect RTT and HTTP latency to DST's own container port")
	f.StringVar(&o.HTTPPath, "http-path", o.HTTPPath, "path requested on --port")
	f.Float64Var(&o.PricePerGB, "price-per-gb", o.PricePerGB, "cross-zone transfer price in USD per GB, charged on each side")
	f.BoolVar(&o.AllowPolicy, "allow-policy", false, "where NetworkPolicies block the agents, create temporary ones that allow exactly this run's agent ports between its agents and pods (deleted at the end)")
	f.BoolVar(&o.AllowHostNetwork, "allow-host-network", false, "measure from a hostNetwork pod (that is the node's network, not a pod path)")
	_ = cmd.RegisterFlagCompletionFunc("mode", fixedCompletion(ModeEphemeral, ModePod, ModeAuto))
	_ = cmd.RegisterFlagCompletionFunc("profile", fixedCompletion("quick", "seed"))
}

// Complete resolves the namespace and the clients.
func (o *PathOptions) Complete(cmd *cobra.Command, args []string) error {
	o.SrcArg, o.DstArg = args[0], args[1]
	return o.complete()
}

// Validate checks the flags; every message names the flag.
func (o *PathOptions) Validate() error {
	switch o.Mode {
	case ModeEphemeral, ModePod, ModeAuto:
	default:
		return fmt.Errorf("--mode %q: want ephemeral, pod or auto", o.Mode)
	}
	if _, ok := profiles[o.Profile]; !ok {
		return fmt.Errorf("--profile %q: want quick or seed", o.Profile)
	}
	if len(o.Probes) == 0 {
		return fmt.Errorf("--probes is empty: name at least one of %s", strings.Join(probeGroups, ","))
	}
	for _, p := range o.Probes {
		if !slices.Contains(probeGroups, p) {
			return fmt.Errorf("--probes: unknown probe %q (known: %s)", p, strings.Join(probeGroups, ","))
		}
	}
	if err := o.validate(); err != nil {
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
	case o.Streams < 0 || o.Streams > agent.MaxStreams:
		return fmt.Errorf("--streams %d: want 1-%d", o.Streams, agent.MaxStreams)
	case o.Connections < 0 || o.Connections > agent.MaxConnections:
		return fmt.Errorf("--connections %d: want 1-%d", o.Connections, agent.MaxConnections)
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

// profile is a set of probe settings.
type profile struct {
	rttCount    int
	rttInterval float64 // ms
	http        agent.ProbeSpec
	httpNewConn agent.ProbeSpec
	httpMax     agent.ProbeSpec
	grpc        agent.ProbeSpec
	tcp         []agent.ProbeSpec
	udp         agent.ProbeSpec
}

var profiles = map[string]profile{
	"quick": {
		rttCount: 20, rttInterval: 50,
		http:        agent.ProbeSpec{Kind: agent.ProbeHTTP, QPS: 100, Connections: 4, DurationSeconds: 4},
		httpNewConn: agent.ProbeSpec{Kind: agent.ProbeHTTPNewConn, QPS: 100, Connections: 4, DurationSeconds: 3},
		httpMax:     agent.ProbeSpec{Kind: agent.ProbeHTTPMax, Connections: 16, DurationSeconds: 3},
		grpc:        agent.ProbeSpec{Kind: agent.ProbeGRPC, QPS: 100, Connections: 4, DurationSeconds: 3},
		udp:         agent.ProbeSpec{Kind: agent.ProbeUDP, Count: 1000, IntervalMillis: 1, Size: udpSize},
		tcp: []agent.ProbeSpec{
			{Kind: agent.ProbeTCP, Name: "tcp-1", Streams: 1, DurationSeconds: 3},
			{Kind: agent.ProbeTCP, Name: "tcp-8", Streams: 8, DurationSeconds: 3},
		},
	},
	"seed": {
		rttCount: 200, rttInterval: 50,
		http:        agent.ProbeSpec{Kind: agent.ProbeHTTP, QPS: 100, Connections: 4, DurationSeconds: 60},
		httpNewConn: agent.ProbeSpec{Kind: agent.ProbeHTTPNewConn, QPS: 100, Connections: 4, DurationSeconds: 30},
		httpMax:     agent.ProbeSpec{Kind: agent.ProbeHTTPMax, Connections: 16, DurationSeconds: 20},
		grpc:        agent.ProbeSpec{Kind: agent.ProbeGRPC, QPS: 100, Connections: 4, DurationSeconds: 30},
		udp:         agent.ProbeSpec{Kind: agent.ProbeUDP, Count: 20000, IntervalMillis: 1, Size: udpSize},
		tcp: []agent.ProbeSpec{
			{Kind: agent.ProbeTCP, Name: "tcp-1", Streams: 1, DurationSeconds: 20},
			{Kind: agent.ProbeTCP, Name: "tcp-8", Streams: 8, DurationSeconds: 20},
			{Kind: agent.ProbeTCP, Name: "tcp-sustained", Streams: 4, DurationSeconds: 180, ReportIntervalSeconds: 10},
		},
	},
}

// udpSize is the UDP probe's datagram size: a small request, as DNS and games send.
const udpSize = 100

// pmtuSeconds is what the path-MTU probe takes when the path is narrower than the interfaces:
// about five sizes that do not cross, three tries of 200 ms each (one probe when it is not).
const pmtuSeconds = 3

// probeSpecs builds the agent-to-agent probes and the app-port probes from the profile and flags.
func (o *PathOptions) probeSpecs(dstIP string) (probes, appPort []agent.ProbeSpec) {
	pr := profiles[o.Profile]
	override := func(p agent.ProbeSpec) agent.ProbeSpec {
		if o.Duration > 0 {
			p.DurationSeconds = o.Duration.Seconds()
		}
		if o.QPS > 0 && p.QPS > 0 {
			p.QPS = o.QPS
		}
		if o.Connections > 0 && p.Kind != agent.ProbeHTTPMax && p.Kind != agent.ProbeTCP {
			p.Connections = o.Connections
		}
		if p.Kind == agent.ProbeTCP {
			if o.Streams > 0 && p.Streams > 1 {
				p.Streams = o.Streams
				p.Name = "tcp-" + strconv.Itoa(o.Streams)
			}
			if o.Interval > 0 {
				p.ReportIntervalSeconds = o.Interval.Seconds()
			}
		}
		return p
	}
	for _, g := range o.Probes {
		switch g {
		case "rtt":
			probes = append(probes,
				agent.ProbeSpec{Kind: agent.ProbeICMP, Count: pr.rttCount, IntervalMillis: pr.rttInterval},
				agent.ProbeSpec{Kind: agent.ProbeTCPRTT, Count: pr.rttCount, IntervalMillis: pr.rttInterval})
		case "http":
			probes = append(probes, override(pr.http))
		case "http-new-conn":
			probes = append(probes, override(pr.httpNewConn))
		case "http-max":
			probes = append(probes, override(pr.httpMax))
		case "grpc":
			probes = append(probes, override(pr.grpc))
		case "udp":
			probes = append(probes, pr.udp)
		case "path-mtu":
			probes = append(probes, agent.ProbeSpec{Kind: agent.ProbePMTU})
		case "tcp":
			for _, t := range pr.tcp {
				probes = append(probes, override(t))
			}
		}
	}
	probes = uniqueLabels(probes)
	if o.Port > 0 {
		addr := net.JoinHostPort(dstIP, strconv.Itoa(o.Port))
		h := override(pr.http)
		h.Name, h.URL = "app-http", "http://"+addr+o.HTTPPath
		appPort = append(appPort,
			agent.ProbeSpec{Kind: agent.ProbeTCPRTT, Name: "app-tcp-rtt", Address: addr, Count: pr.rttCount, IntervalMillis: pr.rttInterval},
			h)
	}
	return probes, appPort
}

// uniqueLabels keeps the first probe of each label: results are keyed by label, and an
// override such as --streams 1 can make the multi-stream probe another tcp-1.
func uniqueLabels(specs []agent.ProbeSpec) []agent.ProbeSpec {
	seen := map[string]bool{}
	var out []agent.ProbeSpec
	for _, p := range specs {
		if !seen[p.Label()] {
			seen[p.Label()] = true
			out = append(out, p)
		}
	}
	return out
}

func expectedSeconds(specs []agent.ProbeSpec) float64 {
	var s float64
	for _, p := range specs {
		s += p.DurationSeconds
		if p.Kind == agent.ProbePMTU {
			s += pmtuSeconds
		}
		if p.Count > 0 {
			s += float64(p.Count) * p.IntervalMillis / 1000
		}
	}
	return s
}

// Run resolves both workloads, checks permissions, starts the agents, measures, cleans up and
// prints the report.
func (o *PathOptions) Run(ctx context.Context) error {
	start := time.Now()
	rep := &report.PathReport{APIVersion: report.APIVersion, Kind: "PathReport", ToolVersion: version.Version,
		StartTime: start.UTC(), Profile: o.Profile}
	return o.run(ctx, start, &pathRun{o: o, rep: rep, timer: newPhaseTimer(&rep.Timing, start)})
}

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

// resolvePair resolves SRC and DST and refuses the same pod twice.
func (o *PathOptions) resolvePair(ctx context.Context) (src, dst *Target, err error) {
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

func targetWarnings(ts ...*Target) []string {
	var w []string
	for _, t := range ts {
		if t.Pod.Spec.HostNetwork {
			w = append(w, fmt.Sprintf("%s/%s uses the host network: this measures the node's network, not a pod path", t.Namespace, t.Pod.Name))
		}
		if n := len(t.Pod.Spec.EphemeralContainers); n >= ephemeralWarnAt {
			w = append(w, fmt.Sprintf("pod %s/%s already holds %d ephemeral containers; each run adds about 1.5 KB to the pod object, which etcd caps at 1.5 MiB: use --mode pod for repeated runs",
				t.Namespace, t.Pod.Name, n))
		}
	}
	return w
}

// ephemeralWarnAt is the number of ephemeral containers in a pod from which runs warn.
const ephemeralWarnAt = 100

// startServer starts the server agent and waits until it is ready; in auto mode a cluster
// without ephemeral containers falls back to temporary pods.
func (o *PathOptions) startServer(ctx context.Context, sess *Session, dst *Target, port int, lifetime time.Duration, warnings *[]string) (*Agent, error) {
	spec := AgentSpec{Role: RoleServer, Target: dst, Serve: true, Lifetime: lifetime, Port: port}
	srv, err := sess.Start(ctx, spec)
	if err != nil && o.Mode == ModeAuto && errors.Is(err, ErrEphemeralUnsupported) {
		*warnings = append(*warnings, "ephemeral containers are not enabled on this cluster: used temporary pods instead")
		o.Progress("ephemeral containers unavailable: falling back to temporary pods")
		if perr := checkPermissions(ctx, o.client, []string{dst.Namespace}, neededPermissions(ModePod)); perr != nil {
			return nil, perr
		}
		sess.Mode = ModePod
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

func setAgentName(e *report.Endpoint, a *Agent) {
	if a.Temporary {
		e.AgentPod = a.Pod
	} else {
		e.AgentContainer = a.Container
	}
}

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

// endpoint describes a target and its node's topology; missing labels or permissions leave the
// zone empty, and the path class then says "unknown".
func (o *PathOptions) endpoint(ctx context.Context, t *Target) report.Endpoint {
	e := report.Endpoint{Namespace: t.Namespace, Pod: t.Pod.Name, Container: t.Container, PodIP: t.Pod.Status.PodIP, Node: t.Pod.Spec.NodeName}
	if n, err := o.client.CoreV1().Nodes().Get(ctx, e.Node, metav1.GetOptions{}); err == nil {
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

func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
