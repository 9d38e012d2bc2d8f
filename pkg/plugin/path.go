package plugin

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/agent"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/version"
)

// Probe groups selectable with --probes.
var probeGroups = []string{"rtt", "http", "http-new-conn", "http-max", "grpc", "tcp"}

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
	f.BoolVar(&o.AllowHostNetwork, "allow-host-network", false, "measure from a hostNetwork pod (that is the node's network, not a pod path)")
	o.addFlags(cmd)
	_ = cmd.RegisterFlagCompletionFunc("mode", fixedCompletion(ModeEphemeral, ModePod, ModeAuto))
	_ = cmd.RegisterFlagCompletionFunc("profile", fixedCompletion("quick", "seed"))
	return cmd
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
	if o.Duration < 0 || o.QPS < 0 || o.Connections < 0 || o.Streams < 0 || o.Interval < 0 || o.PricePerGB < 0 {
		return errors.New("--duration, --qps, --connections, --streams, --interval and --price-per-gb cannot be negative")
	}
	if o.Interval > 0 && o.Duration > 0 && o.Interval > o.Duration {
		return fmt.Errorf("--interval %s is longer than --duration %s", o.Interval, o.Duration)
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
}

var profiles = map[string]profile{
	"quick": {
		rttCount: 20, rttInterval: 50,
		http:        agent.ProbeSpec{Kind: agent.ProbeHTTP, QPS: 100, Connections: 4, DurationSeconds: 4},
		httpNewConn: agent.ProbeSpec{Kind: agent.ProbeHTTPNewConn, QPS: 100, Connections: 4, DurationSeconds: 3},
		httpMax:     agent.ProbeSpec{Kind: agent.ProbeHTTPMax, Connections: 16, DurationSeconds: 3},
		grpc:        agent.ProbeSpec{Kind: agent.ProbeGRPC, QPS: 100, Connections: 4, DurationSeconds: 3},
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
		tcp: []agent.ProbeSpec{
			{Kind: agent.ProbeTCP, Name: "tcp-1", Streams: 1, DurationSeconds: 20},
			{Kind: agent.ProbeTCP, Name: "tcp-8", Streams: 8, DurationSeconds: 20},
			{Kind: agent.ProbeTCP, Name: "tcp-sustained", Streams: 4, DurationSeconds: 180, ReportIntervalSeconds: 10},
		},
	},
}

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
		case "tcp":
			for _, t := range pr.tcp {
				probes = append(probes, override(t))
			}
		}
	}
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

func expectedSeconds(specs []agent.ProbeSpec) float64 {
	var s float64
	for _, p := range specs {
		s += p.DurationSeconds
		if p.Count > 0 {
			s += float64(p.Count) * p.IntervalMillis / 1000
		}
	}
	return s
}

// Run resolves both workloads, starts the agents, measures, cleans up and prints the report.
func (o *PathOptions) Run(ctx context.Context) (err error) {
	start := time.Now()
	runID := o.NewRunID()
	defer func() {
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("interrupted: agents told to stop, temporary pods deleted (run %s)", runID)
		}
	}()
	rep := &report.PathReport{APIVersion: report.APIVersion, Kind: "PathReport", ToolVersion: version.Version,
		StartTime: start.UTC(), Profile: o.Profile}
	phaseStart := start
	phase := func(name string) {
		now := time.Now()
		rep.Timing.Phases = append(rep.Timing.Phases, report.Phase{Name: name, Seconds: round1(now.Sub(phaseStart).Seconds())})
		phaseStart = now
	}

	o.Progress("resolving %s and %s", o.SrcArg, o.DstArg)
	src, err := resolveTarget(o.getter, o.PodForObject, o.SrcArg, o.namespace, o.SrcContainer, o.AllowHostNetwork)
	if err != nil {
		return fmt.Errorf("SRC: %w", err)
	}
	dst, err := resolveTarget(o.getter, o.PodForObject, o.DstArg, o.namespace, o.DstContainer, o.AllowHostNetwork)
	if err != nil {
		return fmt.Errorf("DST: %w", err)
	}
	for _, t := range []*Target{src, dst} {
		if t.Pod.Spec.HostNetwork {
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("%s/%s uses the host network: this measures the node's network, not a pod path", t.Namespace, t.Pod.Name))
		}
	}
	rep.Source, rep.Destination = o.endpoint(ctx, src), o.endpoint(ctx, dst)
	rep.Path = report.Classify(rep.Source.Node, rep.Destination.Node, rep.Source.Zone, rep.Destination.Zone, rep.Source.Region, rep.Destination.Region)
	phase("resolve")

	token := randomID() + randomID()
	mode := o.Mode
	if mode == ModeAuto {
		mode = ModeEphemeral
	}
	inj := &injector{client: o.client, runID: runID, image: o.Image, mode: mode}
	defer func() {
		if cerr := deleteTemporary(o.client, []string{src.Namespace, dst.Namespace}, runID); cerr != nil && err == nil {
			err = cerr
		}
	}()

	probes, appPort := o.probeSpecs(dst.Pod.Status.PodIP)
	all := append(append([]agent.ProbeSpec{}, probes...), appPort...)
	// The agents' own deadline: the whole run plus the time allowed to start, and a margin.
	lifetime := time.Duration(expectedSeconds(all)*float64(time.Second)) + o.StartTimeout + 30*time.Second
	env := []corev1.EnvVar{{Name: agent.TokenEnv, Value: token}}

	o.Progress("starting the server agent next to %s/%s (%s)", dst.Namespace, dst.Pod.Name, mode)
	srvArgs := []string{"serve", "--listen", ":0", "--deadline", lifetime.Round(time.Second).String()}
	srv, err := inj.start(ctx, dst, "server", srvArgs, env)
	if err != nil && o.Mode == ModeAuto && (errors.Is(err, ErrEphemeralUnsupported) || strings.Contains(err.Error(), "forbidden")) {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("ephemeral containers unavailable (%v): used temporary pods instead", err))
		o.Progress("ephemeral containers unavailable: falling back to temporary pods")
		inj.mode = ModePod
		srv, err = inj.start(ctx, dst, "server", srvArgs, env)
	}
	if err != nil {
		return fmt.Errorf("starting the server agent: %w", err)
	}
	var port int
	defer func() {
		// On any failure or interrupt after this point the server must not wait for its deadline.
		if err != nil {
			_ = stopServer(o.client, srv, port, token)
		}
	}()
	rep.Mode = inj.mode
	startCtx, cancel := context.WithTimeout(ctx, o.StartTimeout)
	defer cancel()
	if err := waitAgent(ctx, startCtx, o.client, srv, o.Image, o.StartTimeout, "server agent"); err != nil {
		return err
	}
	err = streamEvents(startCtx, o.client, srv, func(ev agent.Event) (bool, error) {
		switch ev.Type {
		case agent.EventReady:
			port = ev.Port
			return true, nil
		case agent.EventError, agent.EventExit:
			return false, fmt.Errorf("server agent: %s", ev.Message)
		}
		return false, nil
	})
	if err != nil {
		return timeoutHint(err, startCtx, ctx, o.StartTimeout, o.Image)
	}
	rep.Destination.AgentIP = srv.IP
	if srv.Temporary {
		rep.Destination.AgentPod = srv.Pod
	} else {
		rep.Destination.AgentContainer = srv.Container
	}
	phase("start-server")

	job := agent.Job{APIVersion: agent.APIVersion, Host: srv.IP, Port: port, Done: true, Probes: all}
	jobJSON, err := json.Marshal(job)
	if err != nil {
		return err
	}
	o.Progress("starting the client agent next to %s/%s", src.Namespace, src.Pod.Name)
	cli, err := inj.start(ctx, src, "client", []string{"run", "--deadline", lifetime.Round(time.Second).String(), "--job", string(jobJSON)}, env)
	if err != nil {
		return fmt.Errorf("starting the client agent: %w", err)
	}
	if err := waitAgent(ctx, startCtx, o.client, cli, o.Image, o.StartTimeout, "client agent"); err != nil {
		return err
	}
	if cli.Temporary {
		rep.Source.AgentPod = cli.Pod
	} else {
		rep.Source.AgentContainer = cli.Container
	}
	phase("start-client")

	measureStart := time.Now()
	results := map[string]*agent.ProbeResult{}
	err = streamEvents(ctx, o.client, cli, func(ev agent.Event) (bool, error) {
		switch ev.Type {
		case agent.EventProgress:
			o.Progress("measuring: %s %s", ev.Probe, ev.Message)
		case agent.EventResult:
			results[ev.Probe] = ev.Result
		case agent.EventError:
			if ev.Probe == "" {
				return false, fmt.Errorf("client agent: %s", ev.Message)
			}
			return false, fmt.Errorf("probe %s from %s/%s to %s:%d failed: %s (a NetworkPolicy may block the agent's port)", ev.Probe, src.Namespace, src.Pod.Name, srv.IP, port, ev.Message)
		case agent.EventExit:
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	rep.Timing.MeasuringSeconds = round1(time.Since(measureStart).Seconds())
	rep.Source.AgentIP = src.Pod.Status.PodIP
	if cli.Temporary {
		if p, gerr := o.client.CoreV1().Pods(cli.Namespace).Get(ctx, cli.Pod, metav1.GetOptions{}); gerr == nil {
			rep.Source.AgentIP = p.Status.PodIP
		}
	}
	phase("measure")

	var crossBytes int64
	for _, p := range probes {
		if r := results[p.Label()]; r != nil {
			rep.Probes = append(rep.Probes, r)
			if r.Skipped != "" {
				rep.Skipped = append(rep.Skipped, r.Name+": "+r.Skipped+"; the TCP handshake RTT is measured instead")
			}
			if r.Throughput != nil {
				crossBytes += r.Throughput.BytesReceived
			}
		}
	}
	for _, p := range appPort {
		if r := results[p.Label()]; r != nil {
			rep.AppPort = append(rep.AppPort, r)
		}
	}
	if rep.Path.Class == report.CrossZone || rep.Path.Class == report.CrossRegion {
		rep.Cost = report.NewCost(crossBytes, o.PricePerGB)
	}
	if cerr := deleteTemporary(o.client, []string{src.Namespace, dst.Namespace}, runID); cerr != nil {
		return cerr
	}
	phase("cleanup")
	rep.Timing.WallSeconds = round1(time.Since(start).Seconds())
	rep.Timing.OverheadSeconds = round1(rep.Timing.WallSeconds - rep.Timing.MeasuringSeconds)
	return report.Write(o.Out, o.Output, rep)
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

// waitAgent waits for an agent to start within startCtx, naming what timed out.
func waitAgent(ctx, startCtx context.Context, client kubernetes.Interface, a *agentRef, image string, limit time.Duration, what string) error {
	if err := waitStarted(startCtx, client, a, image); err != nil {
		return fmt.Errorf("%s: %w", what, timeoutHint(err, startCtx, ctx, limit, image))
	}
	return nil
}

// timeoutHint explains a start that ran out of time.
func timeoutHint(err error, startCtx, runCtx context.Context, limit time.Duration, image string) error {
	if runCtx.Err() == nil && startCtx.Err() != nil {
		return fmt.Errorf("the agent did not start within --start-timeout %s (can the nodes pull %s? see kubectl describe pod; --image names a mirror)", limit, image)
	}
	return err
}

func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func round1(v float64) float64 { return float64(int64(v*10+0.5)) / 10 }
