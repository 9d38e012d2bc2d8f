package cmdutil

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/render"

	"github.com/spf13/cobra"

	"github.com/kubectl-netbench/kubectl-netbench/internal/gate"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// ExitGateFailed is the exit code of a run whose --fail-if condition held (or whose
// diff --fail-if-regressed found a regression); other errors exit 1.
const ExitGateFailed = 3

// ErrGateFailed is wrapped by the error of such a run.
var ErrGateFailed = errors.New("gate failed")

// GateError lists the conditions that failed; the report was printed before it.
type GateError struct {
	Failed []gate.Result
	Total  int
}

func (e *GateError) Error() string {
	lines := []string{fmt.Sprintf("%d of %d --fail-if conditions failed:", len(e.Failed), e.Total)}
	for _, r := range e.Failed {
		lines = append(lines, fmt.Sprintf("  %s   (%s)", r.Condition, r.Message))
	}
	return strings.Join(lines, "\n")
}

// Unwrap lets errors.Is(err, ErrGateFailed) hold.
func (e *GateError) Unwrap() error { return ErrGateFailed }

// Gates are a command's --fail-if conditions.
type Gates struct {
	FailIf []string
	conds  []*gate.Condition
}

func (g *Gates) AddFlags(cmd *cobra.Command, example string) {
	cmd.Flags().StringArrayVar(&g.FailIf, "fail-if", nil,
		"fail (exit "+fmt.Sprint(ExitGateFailed)+") when this condition on the report's figures holds, e.g. "+example+"; repeatable (docs/gates.md)")
}

// Parse reads every condition; a syntax error names the flag and the column.
func (g *Gates) Parse(output string) error {
	g.conds = nil
	for _, s := range g.FailIf {
		c, err := gate.Parse(s)
		if err != nil {
			return fmt.Errorf("--fail-if %q: %w", s, err)
		}
		g.conds = append(g.conds, c)
	}
	if output == render.FormatJUnit && len(g.conds) == 0 {
		return errors.New("-o junit writes one test case per --fail-if condition: give at least one --fail-if")
	}
	return nil
}

// Check verifies, before anything is created, that every figure named will be measured.
func (g *Gates) Check(planned map[string]string) error {
	for _, c := range g.conds {
		if err := c.Check(planned); err != nil {
			return fmt.Errorf("--fail-if %w", err)
		}
	}
	return nil
}

// Evaluate checks every condition on the run's figures.
func (g *Gates) Evaluate(fs []report.FigureValue) []gate.Result {
	figs := report.Figures(fs)
	var out []gate.Result
	for _, c := range g.conds {
		out = append(out, c.Evaluate(figs))
	}
	return out
}

// Verdict is the run's error once the report is out: a GateError when a condition held.
func Verdict(results []gate.Result) error {
	failed := slices.DeleteFunc(slices.Clone(results), func(r gate.Result) bool { return !r.Violated })
	if len(failed) == 0 {
		return nil
	}
	return &GateError{Failed: failed, Total: len(results)}
}
