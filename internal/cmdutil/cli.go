package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/render"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/kubectl/pkg/polymorphichelpers"

	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/internal/version"
)

// progressPrinter writes timed progress lines to w when it is a terminal (or when
// NETBENCH_PROGRESS=always), and nothing otherwise.
func progressPrinter(w io.Writer) func(string, ...any) {
	f, ok := w.(*os.File)
	tty := ok && term.IsTerminal(int(f.Fd()))
	if !tty && os.Getenv("NETBENCH_PROGRESS") != "always" {
		return func(string, ...any) {}
	}
	start := time.Now()
	return func(format string, args ...any) {
		fmt.Fprintf(w, "[%5.1fs] %s\n", time.Since(start).Seconds(), fmt.Sprintf(format, args...))
	}
}

func FixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return values, cobra.ShellCompDirectiveNoFileComp
	}
}

// podCompletion completes pod names in the current namespace (the first two arguments).
func podCompletion(flags *genericclioptions.ConfigFlags) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(_ *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) >= 2 || strings.Contains(toComplete, "/") {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		cfg, err := flags.ToRESTConfig()
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveError
		}
		var out []string
		for _, p := range pods.Items {
			if strings.HasPrefix(p.Name, toComplete) {
				out = append(out, p.Name)
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp
	}
}

// CommonOptions are what every measuring command shares: the kubeconfig flags and streams, the
// agent image and start timeout, the output format, and the clients Complete fills in.
type CommonOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	Image          string
	Output         string
	HTML           bool // the command can write -o html
	StartTimeout   time.Duration
	AgentResources string
	Gates          Gates
	// DryRun sends every object the run would create or patch with dryRun=All, prints them and
	// creates nothing.
	DryRun bool
	// AgentPlacement: --toleration and --image-pull-secret, on the commands that add them.
	AgentPlacement

	// Filled by complete.
	Namespace string
	Client    kubernetes.Interface
	getter    genericclioptions.RESTClientGetter
	clock     *serverClock
	Resources *corev1.ResourceRequirements

	// Swappable in tests.
	PodForObject polymorphichelpers.AttachablePodForObjectFunc
	NewRunID     func() string
	Progress     func(format string, args ...any)
	// Resolve finds the running pod behind a command-line target (default: as kubectl exec does).
	Resolve func(ctx context.Context, arg, container string, allowHostNetwork bool) (*session.Target, error)
	// ConfigureSession, when set, adjusts every new session (tests script logs and the proxy).
	ConfigureSession func(*session.Session)
}

func NewCommonOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) CommonOptions {
	return CommonOptions{
		ConfigFlags: flags, IOStreams: streams,
		Image: version.AgentImage(), StartTimeout: 2 * time.Minute,
		PodForObject: polymorphichelpers.AttachablePodForObjectFn, NewRunID: randomID,
	}
}

func (o *CommonOptions) AddFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.Image, "image", o.Image, "agent image (for mirrors and air-gapped clusters)")
	formats := strings.Join(o.formats(), ", ")
	if o.HTML {
		formats += " (html: one self-contained page)"
	}
	f.StringVarP(&o.Output, "output", "o", "", "output format: "+formats+" (default: a human report; junit: one test case per --fail-if)")
	f.DurationVar(&o.StartTimeout, "start-timeout", o.StartTimeout, "how long an agent may take to start (1s-1h)")
	f.StringVar(&o.AgentResources, "agent-resources", "", "requests and limits of temporary agent pods, e.g. cpu=200m,memory=64Mi; none: the namespace's LimitRange decides (default: requests cpu=100m,memory=64Mi, limit memory=128Mi)")
	f.BoolVar(&o.DryRun, "dry-run", false, "send every object the run would create or patch to the API server with dryRun=All, print them (-o yaml or json: the objects; default: one line each) and create nothing")
	_ = cmd.RegisterFlagCompletionFunc("output", FixedCompletion(o.formats()...))
	cmd.ValidArgsFunction = podCompletion(o.ConfigFlags)
}

// CompleteFlags reads the kubeconfig (every kubectl flag) into the default namespace and a clientset.
func (o *CommonOptions) CompleteFlags() error {
	return o.completeWith(o.ConfigFlags)
}

// completeWith builds the clients from any RESTClientGetter, as kubectl debug does, so that
// tests can pass their own.
// The plugin's client-side rate limit: room for ~20 agents' lease renewals and the run's calls.
const (
	clientQPS   = 50
	clientBurst = 100
)

func (o *CommonOptions) completeWith(getter genericclioptions.RESTClientGetter) error {
	ns, _, err := getter.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	cfg, err := getter.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	o.clock = &serverClock{}
	cfg = rest.CopyConfig(cfg)
	// A run keeps one lease renewal per server agent going every second, beside its own calls:
	// client-go's default of 5 requests a second (burst 10) would queue a ladder's calls behind
	// the renewals of its endpoint agents for seconds.
	cfg.QPS, cfg.Burst = clientQPS, clientBurst
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { o.clock.next = rt; return o.clock })
	if o.Client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	o.Namespace, o.getter = ns, getter
	o.setDefaults()
	return nil
}

// setDefaults fills what complete leaves to defaults (tests that set the client call it too).
func (o *CommonOptions) setDefaults() {
	if o.Progress == nil {
		o.Progress = progressPrinter(o.ErrOut)
	}
	if o.Resolve == nil {
		o.Resolve = func(ctx context.Context, arg, container string, allowHostNetwork bool) (*session.Target, error) {
			return resolveTarget(ctx, o.getter, o.Client, o.PodForObject, arg, o.Namespace, container, allowHostNetwork)
		}
	}
}

func (o *CommonOptions) ServerNow() time.Time {
	if o.clock == nil {
		return time.Now()
	}
	return o.clock.now()
}

// formats are the -o values the command takes: json and yaml, and html where it has a page.
func (o *CommonOptions) formats() []string {
	f := []string{"json", "yaml", render.FormatOpenMetrics, render.FormatJUnit}
	if o.HTML {
		f = append(f, "html")
	}
	return f
}

func (o *CommonOptions) ValidateFlags() error {
	if o.Output != "" && !slices.Contains(o.formats(), o.Output) {
		f := o.formats()
		return fmt.Errorf("--output %q: want %s or %s", o.Output, strings.Join(f[:len(f)-1], ", "), f[len(f)-1])
	}
	if err := o.Gates.Parse(o.Output); err != nil {
		return err
	}
	if o.DryRun && o.Output != "" && o.Output != "json" && o.Output != "yaml" {
		return fmt.Errorf("--output %s with --dry-run: a dry run measures nothing; it prints the objects it would create (-o yaml or json) or lists them (default)", o.Output)
	}
	if o.Image == "" {
		return errors.New("--image is empty")
	}
	if err := o.AgentPlacement.Parse(); err != nil {
		return err
	}
	if o.StartTimeout < time.Second || o.StartTimeout > time.Hour {
		return fmt.Errorf("--start-timeout %s: want 1s to 1h", o.StartTimeout)
	}
	switch o.AgentResources {
	case "":
		o.Resources = DefaultAgentResources()
	case "none":
		o.Resources = nil
	default:
		r, err := parseResources(o.AgentResources)
		if err != nil {
			return fmt.Errorf("--agent-resources %q: %w", o.AgentResources, err)
		}
		o.Resources = r
	}
	return nil
}

// MinAgentMemory is the smallest memory --agent-resources may give an agent: its measured peak
// RSS in the quick profile stays under 30 MiB (benchmarks/notes/2026-12-01-lab-results.md).
var MinAgentMemory = resource.MustParse("40Mi")

// DefaultAgentResources is what a temporary agent pod asks for unless --agent-resources says
// otherwise: requests that cover its measured footprint (one core at most, as GOMAXPROCS=1, only
// while it sends; < 30 MiB peak RSS), a memory limit with room above it (the Go runtime's own
// limit is set below it, see agentMemoryLimit), and no CPU limit: a CFS quota would throttle the
// throughput probes and add its periods to every latency.
func DefaultAgentResources() *corev1.ResourceRequirements {
	return &corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
	}
}

// parseResources reads NAME=QUANTITY,... into equal requests and limits ("none" is handled
// by the caller).
func parseResources(s string) (*corev1.ResourceRequirements, error) {
	list := corev1.ResourceList{}
	for _, kv := range strings.Split(s, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || (name != "cpu" && name != "memory" && name != "ephemeral-storage") {
			return nil, fmt.Errorf("want cpu=Q,memory=Q (ephemeral-storage=Q), not %q", kv)
		}
		q, err := resource.ParseQuantity(value)
		if err != nil || q.Sign() <= 0 {
			return nil, fmt.Errorf("%s=%s: not a positive quantity", name, value)
		}
		if name == "memory" && q.Cmp(MinAgentMemory) < 0 {
			return nil, fmt.Errorf("memory=%s: the agent needs at least %s", value, MinAgentMemory.String())
		}
		list[corev1.ResourceName(name)] = q
	}
	return &corev1.ResourceRequirements{Requests: list, Limits: list.DeepCopy()}, nil
}
