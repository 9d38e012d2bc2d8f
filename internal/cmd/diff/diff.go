package diff

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"

	"github.com/kubectl-netbench/kubectl-netbench/internal/render"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// DiffOptions holds `kubectl netbench diff`.
type DiffOptions struct {
	genericiooptions.IOStreams
	OldFile, NewFile string
	Tolerance        float64
	FailIfRegressed  float64
	Output           string
}

func NewDiffCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := &DiffOptions{IOStreams: streams, Tolerance: 10, FailIfRegressed: -1}
	cmd := &cobra.Command{
		Use:   "diff OLD.json NEW.json",
		Short: "Compare two runs figure by figure: what changed, by how much, and whether beyond the runs' own spread",
		Long: `Compare two reports written with -o json (path, ladder or dns; both of the same command).

A figure changed when it moved by more than --tolerance percent of its old value and, where both
runs carry a spread, left the other run's: the rounds' min–max of a ladder run with --repeat, or
the 95 % interval of a latency percentile from the run's own samples (the ranks n·q ∓ 1.96·√(n·q·(1−q))
of its histogram). A change for the worse (latency, loss, retransmits or queries up; throughput,
request rate or MTU down) is a regression. --fail-if-regressed PCT exits 3 when a figure regressed by
at least PCT percent.`,
		Example: `  kubectl netbench path deploy/web deploy/api -o json > before.json
  # … upgrade the CNI …
  kubectl netbench path deploy/web deploy/api -o json > after.json
  kubectl netbench diff before.json after.json --fail-if-regressed 20`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.OldFile, o.NewFile = args[0], args[1]
			if err := o.Validate(); err != nil {
				return err
			}
			cmd.SilenceUsage = true
			return o.Run()
		},
	}
	f := cmd.Flags()
	f.Float64Var(&o.Tolerance, "tolerance", o.Tolerance, "smallest change, in percent of the old value, that counts (0-1000)")
	f.Float64Var(&o.FailIfRegressed, "fail-if-regressed", o.FailIfRegressed, fmt.Sprintf("exit %d when a figure regressed beyond the spread by at least this many percent (default: never)", cmdutil.ExitGateFailed))
	f.StringVarP(&o.Output, "output", "o", "", "output format: json or yaml (default: a table)")
	_ = cmd.RegisterFlagCompletionFunc("output", cmdutil.FixedCompletion("json", "yaml"))
	return cmd
}

// Validate checks the flags; every message names the flag.
func (o *DiffOptions) Validate() error {
	switch {
	case !(o.Tolerance >= 0 && o.Tolerance <= 1000):
		return fmt.Errorf("--tolerance %g: want 0-1000 (percent)", o.Tolerance)
	case o.FailIfRegressed != -1 && !(o.FailIfRegressed >= 0 && o.FailIfRegressed <= 1e6):
		return fmt.Errorf("--fail-if-regressed %g: want a percentage of 0 or more", o.FailIfRegressed)
	case o.Output != "" && !slices.Contains([]string{"json", "yaml"}, o.Output):
		return fmt.Errorf("--output %q: want json or yaml", o.Output)
	}
	return nil
}

// load reads a report file (a regular file or a pipe, as `<(kubectl netbench … -o json)` gives),
// at most report.MaxReportBytes of it; what it cannot use it refuses with one line naming the
// file.
func (o *DiffOptions) load(file string) (*report.LoadedRun, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() && fi.Size() > report.MaxReportBytes {
		return nil, fmt.Errorf("%s: %w (more than %d MiB)", file, report.ErrTooLarge, report.MaxReportBytes>>20)
	}
	data, err := io.ReadAll(io.LimitReader(f, report.MaxReportBytes+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", file, err)
	}
	return report.LoadRun(file, data)
}

// Run reads both reports, compares them and prints the result.
func (o *DiffOptions) Run() error {
	old, err := o.load(o.OldFile)
	if err != nil {
		return err
	}
	cur, err := o.load(o.NewFile)
	if err != nil {
		return err
	}
	d, err := report.Diff(old, cur, o.Tolerance)
	if err != nil {
		return err
	}
	if err := render.WriteDiff(o.Out, o.Output, d); err != nil {
		return err
	}
	return o.verdict(d)
}

// verdict fails the command when --fail-if-regressed is set and a figure regressed that much.
func (o *DiffOptions) verdict(d *report.DiffReport) error {
	if o.FailIfRegressed < 0 {
		return nil
	}
	var worst []string
	for _, f := range d.Figures {
		if f.Verdict == report.Regressed && (f.ChangePercent == nil || math.Abs(*f.ChangePercent) >= o.FailIfRegressed) {
			worst = append(worst, fmt.Sprintf("%s %+.1f %%", f.Name, pctOr(f.ChangePercent)))
		}
	}
	if len(worst) == 0 {
		return nil
	}
	return fmt.Errorf("%d figure(s) regressed by at least %g %%: %v: %w", len(worst), o.FailIfRegressed, worst, cmdutil.ErrGateFailed)
}

func pctOr(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}
