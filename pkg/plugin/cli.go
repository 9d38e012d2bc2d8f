package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/polymorphichelpers"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/version"
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

func fixedCompletion(values ...string) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
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

// commonOptions are what every measuring command shares: the kubeconfig flags and streams, the
// agent image and start timeout, the output format, and the clients Complete fills in.
type commonOptions struct {
	ConfigFlags *genericclioptions.ConfigFlags
	genericiooptions.IOStreams

	Image        string
	Output       string
	StartTimeout time.Duration

	// Filled by complete.
	namespace string
	client    kubernetes.Interface
	getter    genericclioptions.RESTClientGetter

	// Swappable in tests.
	PodForObject polymorphichelpers.AttachablePodForObjectFunc
	NewRunID     func() string
	Progress     func(format string, args ...any)
}

func newCommonOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) commonOptions {
	return commonOptions{
		ConfigFlags: flags, IOStreams: streams,
		Image: version.AgentImage(), StartTimeout: 2 * time.Minute,
		PodForObject: polymorphichelpers.AttachablePodForObjectFn, NewRunID: randomID,
	}
}

func (o *commonOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&o.Image, "image", o.Image, "agent image (for mirrors and air-gapped clusters)")
	f.StringVarP(&o.Output, "output", "o", "", "output format: json or yaml (default: a human report)")
	f.DurationVar(&o.StartTimeout, "start-timeout", o.StartTimeout, "how long an agent may take to start")
	_ = cmd.RegisterFlagCompletionFunc("output", fixedCompletion("json", "yaml"))
	cmd.ValidArgsFunction = podCompletion(o.ConfigFlags)
}

// complete reads the kubeconfig (every kubectl flag) into the default namespace and a clientset.
func (o *commonOptions) complete() error {
	ns, _, err := o.ConfigFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	cfg, err := o.ConfigFlags.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	if o.client, err = kubernetes.NewForConfig(cfg); err != nil {
		return err
	}
	o.namespace, o.getter = ns, o.ConfigFlags
	if o.Progress == nil {
		o.Progress = progressPrinter(o.ErrOut)
	}
	return nil
}

func (o *commonOptions) validate() error {
	switch o.Output {
	case "", "json", "yaml":
	default:
		return fmt.Errorf("--output %q: want json or yaml", o.Output)
	}
	if o.Image == "" {
		return errors.New("--image is empty")
	}
	return nil
}
