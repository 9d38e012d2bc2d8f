package path

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/render"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// A --fail-if on a figure that has no value fails whatever it compares, names why, and the
// report is still written in every format, showing the condition as failed.
func TestFailIfOnAnUndefinedFigureFails(t *testing.T) {
	g := &cmdutil.Gates{FailIf: []string{"udp.loss / udp.loss > 1", "udp.loss / udp.loss <= 1", "udp.p50 > 1s"}}
	if err := g.Parse(render.FormatJUnit); err != nil {
		t.Fatal(err)
	}
	specs := []agent.ProbeSpec{{Kind: agent.ProbeUDP}}
	if err := g.Check(report.PlannedFigures(specs)); err != nil {
		t.Fatalf("refused before the run: %v", err)
	}
	rep := &report.PathReport{APIVersion: report.APIVersion, Kind: "PathReport", Probes: []*agent.ProbeResult{{Name: "udp", Kind: agent.ProbeUDP,
		RTT: &probes.RTTResult{Sent: 10, Received: 10, RTT: probes.Latency{Count: 10, P50Micros: 100, P99Micros: 120}}}}}
	rep.Checks = g.Evaluate(rep.FigureValues())

	var got []string
	for _, c := range rep.Checks {
		got = append(got, fmtVerdict(c.Violated)+" "+c.Condition+" ("+c.Message+")")
	}
	want := []string{
		"FAILED udp.loss / udp.loss > 1 (udp.loss = 0 %; udp.loss / udp.loss is undefined (0/0), so the condition cannot pass)",
		"FAILED udp.loss / udp.loss <= 1 (udp.loss = 0 %; udp.loss / udp.loss is undefined (0/0), so the condition cannot pass)",
		"ok udp.p50 > 1s (udp.p50 = 100 µs)",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("checks (-want +got):\n%s", diff)
	}
	err := cmdutil.Verdict(rep.Checks)
	var ge *cmdutil.GateError
	if !errors.Is(err, cmdutil.ErrGateFailed) || !errors.As(err, &ge) || len(ge.Failed) != 2 {
		t.Errorf("verdict: %v", err)
	}
	checkFormatsShowFailed(t, rep)
}

func fmtVerdict(violated bool) string {
	if violated {
		return "FAILED"
	}
	return "ok"
}

// checkFormatsShowFailed writes rep in every format and finds the two undefined conditions
// failed in each.
func checkFormatsShowFailed(t *testing.T, rep *report.PathReport) {
	t.Helper()
	for _, format := range []string{"", "json", "yaml", render.FormatJUnit, render.FormatOpenMetrics} {
		var out bytes.Buffer
		if err := render.Write(&out, format, rep); err != nil {
			t.Fatalf("-o %q: %v", format, err)
		}
		s := out.String()
		var ok bool
		switch format {
		case "json":
			var back report.PathReport
			ok = json.Unmarshal(out.Bytes(), &back) == nil && back.Checks[0].Violated && back.Checks[0].Undefined == "udp.loss / udp.loss"
		case render.FormatJUnit:
			var suites struct {
				Failures int `xml:"failures,attr"`
			}
			ok = xml.Unmarshal(out.Bytes(), &suites) == nil && suites.Failures == 2
		case render.FormatOpenMetrics:
			ok = strings.Count(s, "netbench_check_violated{") == 3 && strings.Contains(s, `condition="udp.loss / udp.loss > 1"} 1`) && strings.Contains(s, `condition="udp.loss / udp.loss <= 1"} 1`)
		default:
			ok = strings.Count(s, "is undefined (0/0)") == 2
		}
		if !ok {
			t.Errorf("-o %q does not show both conditions failed:\n%s", format, s)
		}
	}
}
