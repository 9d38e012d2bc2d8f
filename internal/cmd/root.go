// Package cmd is the root command of kubectl-netbench: kubectl's config flags and the subcommands,
// one package each under internal/cmd.
package cmd

import (
	"flag"
	"fmt"
	"io"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/cleanup"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/diff"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/dns"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/ladder"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/matrix"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/path"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/klog/v2"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/version"
)

// NewRootCommand builds `kubectl netbench` with every subcommand.
func NewRootCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	cmd := &cobra.Command{
		Use:   "netbench",
		Short: "Measure what the network between real workloads costs, from inside their pods",
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl netbench",
		},
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	flags.AddFlags(cmd.PersistentFlags())
	// -v is klog's verbosity, as in kubectl; without it client-go's own logging stays quiet so
	// that a failure prints one line.
	klogFlags := flag.NewFlagSet("klog", flag.ContinueOnError)
	klog.InitFlags(klogFlags)
	cmd.PersistentFlags().AddGoFlag(klogFlags.Lookup("v"))
	cmd.PersistentPreRun = func(*cobra.Command, []string) {
		if klogFlags.Lookup("v").Value.String() == "0" {
			_ = klogFlags.Set("logtostderr", "false")
			_ = klogFlags.Set("alsologtostderr", "false")
			// Errors too: client-go logs a watch it ends itself as "Failed to watch".
			_ = klogFlags.Set("stderrthreshold", "FATAL")
			klog.SetOutput(io.Discard)
		}
	}

	a := agent.NewCommand(streams)
	a.Hidden = true
	cmd.AddCommand(path.NewPathCommand(flags, streams), ladder.NewLadderCommand(flags, streams), dns.NewDNSCommand(flags, streams), diff.NewDiffCommand(streams), newVersionCommand(streams), newTokenCommand(streams), cleanup.NewCleanupCommand(flags, streams), matrix.NewMatrixCommand(flags, streams), a)
	return cmd
}

func newVersionCommand(streams genericiooptions.IOStreams) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the plugin's version, commit, Go version and default agent image",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := fmt.Fprintf(streams.Out, "kubectl-netbench %s\ncommit: %s\nbuilt: %s\ngo: %s\nagent image: %s\n",
				version.Version, version.Commit, version.Date, version.GoVersion(), version.AgentImage())
			return err
		},
	}
}
