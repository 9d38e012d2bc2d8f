package render

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/gate"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// setFloats sets every number of v that a report can carry (every float reachable through
// exported fields, pointers, slices and maps) to x.
func setFloats(v reflect.Value, x float64) {
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		if v.CanSet() {
			v.SetFloat(x)
		}
	case reflect.Pointer, reflect.Interface:
		if !v.IsNil() {
			setFloats(v.Elem(), x)
		}
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			if v.Type().Field(i).IsExported() {
				setFloats(v.Field(i), x)
			}
		}
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len(); i++ {
			setFloats(v.Index(i), x)
		}
	case reflect.Map:
		for it := v.MapRange(); it.Next(); {
			e := reflect.New(it.Value().Type()).Elem()
			e.Set(it.Value())
			setFloats(e, x)
			v.SetMapIndex(it.Key(), e)
		}
	}
}

// nonFiniteReport is a testdata report with every number set to x, and a check whose sides are
// x too; write renders it in a format.
func nonFiniteReport(t *testing.T, in string, x float64) (write func(w io.Writer, format string) error, formats []string) {
	t.Helper()
	data, err := os.ReadFile(in)
	if err != nil {
		t.Fatal(err)
	}
	checks := []gate.Result{{Condition: "a / a > 1", Violated: true, Left: x, Right: x, Values: map[string]gate.Figure{"a": {Value: x}}}}
	formats = []string{"", "json", "yaml", FormatOpenMetrics, FormatJUnit}
	switch name := filepath.Base(in); {
	case strings.HasPrefix(name, "path"):
		r := &report.PathReport{}
		mustDecode(t, data, r)
		setFloats(reflect.ValueOf(r), x)
		r.Checks = checks
		return func(w io.Writer, f string) error { return Write(w, f, r) }, formats
	case strings.HasPrefix(name, "ladder"):
		r := &report.LadderReport{}
		mustDecode(t, data, r)
		setFloats(reflect.ValueOf(r), x)
		r.Checks = checks
		return func(w io.Writer, f string) error { return WriteLadder(w, f, r) }, append(formats, "html")
	case strings.HasPrefix(name, "matrix"):
		r := &report.MatrixReport{}
		mustDecode(t, data, r)
		setFloats(reflect.ValueOf(r), x)
		r.Checks = checks
		return func(w io.Writer, f string) error { return WriteMatrix(w, f, r, true) }, append(formats, "html")
	}
	r := &report.DNSReport{}
	mustDecode(t, data, r)
	setFloats(reflect.ValueOf(r), x)
	r.Checks = checks
	return func(w io.Writer, f string) error { return WriteDNS(w, f, r) }, formats
}

// A report whose every number is NaN or infinite is still written in every format: JSON and
// YAML with null in their place and a warning naming each, OpenMetrics without those samples
// (named in netbench_figure_undefined), JUnit and text as they are.
func TestEncodersNeverFailOnNonFiniteNumbers(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs in testdata/ (%v)", err)
	}
	for _, in := range inputs {
		for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
			write, formats := nonFiniteReport(t, in, x)
			if !math.IsNaN(x) {
				formats = []string{"json", FormatOpenMetrics} // the infinities where they differ from NaN
			}
			for _, format := range formats {
				t.Run(filepath.Base(in)+"/"+format+"/"+gate.Format(x, ""), func(t *testing.T) {
					var out bytes.Buffer
					if err := write(&out, format); err != nil {
						t.Fatalf("not written: %v", err)
					}
					checkEncoded(t, format, out.Bytes())
				})
			}
		}
	}
}

// checkEncoded parses what a format wrote with that format's own parser (OpenMetrics: finds no
// sample without a finite value; TestOpenMetricsNamesUndefinedFigures parses it).
func checkEncoded(t *testing.T, format string, out []byte) {
	t.Helper()
	switch format {
	case "json", "yaml":
		js := out
		if format == "yaml" {
			var err error
			if js, err = yaml.YAMLToJSON(out); err != nil {
				t.Fatalf("not YAML: %v", err)
			}
		}
		var v struct{ Warnings []string }
		if err := json.Unmarshal(js, &v); err != nil {
			t.Fatalf("not JSON: %v", err)
		}
		if !bytes.Contains(js, []byte("null")) || len(v.Warnings) == 0 || !strings.Contains(strings.Join(v.Warnings, "\n"), ": written as null") {
			t.Errorf("no null or no warning naming it: %v", v.Warnings)
		}
	case FormatOpenMetrics:
		for _, line := range strings.Split(string(out), "\n") {
			if !strings.HasPrefix(line, "#") && (strings.HasSuffix(line, "NaN") || strings.HasSuffix(line, "Inf")) {
				t.Errorf("a sample without a finite value: %s", line)
			}
		}
	case FormatJUnit:
		if err := xml.Unmarshal(out, new(junitSuites)); err != nil {
			t.Fatalf("not XML: %v", err)
		}
	}
}

// A diff whose figures are NaN or infinite is written in every format too.
func TestDiffEncodesNonFiniteNumbers(t *testing.T) {
	for _, x := range []float64{math.NaN(), math.Inf(1), math.Inf(-1)} {
		hi := x
		d := &report.DiffReport{APIVersion: report.APIVersion, Kind: "DiffReport", TolerancePercent: x,
			Figures: []report.FigureChange{{Name: "icmp.p50", Unit: report.UnitMicros, Old: x, New: x, Change: x, ChangePercent: &hi,
				OldRange: &report.Range{Low: x, High: &hi}, NewRange: &report.Range{Low: x}, Verdict: report.WithinSpread}}}
		for _, format := range []string{"", "json", "yaml"} {
			var out bytes.Buffer
			if err := WriteDiff(&out, format, d); err != nil {
				t.Fatalf("%v %s: %v", x, format, err)
			}
			checkEncoded(t, format, out.Bytes())
		}
	}
}

// The warnings name each number written as null by its JSON path, and the report given is not
// changed.
func TestNullWarningsNameThePath(t *testing.T) {
	r := &report.PathReport{APIVersion: report.APIVersion, Kind: "PathReport", Warnings: []string{"a hostNetwork pod"},
		Cost: &report.Cost{RunCostUSD: math.NaN()}, Timing: report.Timing{Phases: []report.Phase{{Name: "measure", Seconds: math.Inf(1)}}}}
	var out bytes.Buffer
	if err := Write(&out, "json", r); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Warnings []string
		Cost     map[string]any
	}
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	want := []string{"a hostNetwork pod", "cost.runCostUSD was NaN: written as null", "timing.phases[0].seconds was +Inf: written as null"}
	if diff := cmp.Diff(want, got.Warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if v, ok := got.Cost["runCostUSD"]; !ok || v != nil {
		t.Errorf("runCostUSD: %v", got.Cost)
	}
	if len(r.Warnings) != 1 || !math.IsNaN(r.Cost.RunCostUSD) {
		t.Errorf("the report given was changed: %+v", r)
	}
}

// Should an encoding still fail, the report is written as text and the error says so.
func TestMachineEncodingFallsBackToText(t *testing.T) {
	var out bytes.Buffer
	err := writeMachineOrText(&out, "json", struct{ C chan int }{make(chan int)}, func(w io.Writer) error {
		_, err := io.WriteString(w, "the report as text\n")
		return err
	})
	if !errors.Is(err, ErrEncoding) || !strings.Contains(err.Error(), "written as text instead") {
		t.Errorf("error: %v", err)
	}
	if out.String() != "the report as text\n" {
		t.Errorf("written: %q", out.String())
	}
}

// Characters JSON writes as they are but YAML's reader refuses are escaped: -o yaml writes any
// string a report holds, and it reads back the same.
func TestYAMLWritesEveryCharacter(t *testing.T) {
	odd := "del \x7f, next line \u0085, C1 \u0090, \ufffe \uffff, bom \ufeff, tab \t, µs 😀"
	r := &report.PathReport{APIVersion: report.APIVersion, Kind: "PathReport", Warnings: []string{odd}}
	var out bytes.Buffer
	if err := Write(&out, "yaml", r); err != nil {
		t.Fatal(err)
	}
	var back report.PathReport
	if err := yaml.Unmarshal(out.Bytes(), &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{odd}, back.Warnings); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// OpenMetrics leaves a figure without a finite value out of its family and names it in
// netbench_figure_undefined; the Prometheus project's parser reads the result.
func TestOpenMetricsNamesUndefinedFigures(t *testing.T) {
	r := &report.PathReport{Probes: []*agent.ProbeResult{{Name: "udp", Kind: agent.ProbeUDP,
		RTT: &probes.RTTResult{Received: 3, LossPercent: math.NaN(), JitterMicros: math.Inf(1), RTT: probes.Latency{Count: 3, P50Micros: 100, P99Micros: 200}}}}}
	var out bytes.Buffer
	if err := Write(&out, FormatOpenMetrics, r); err != nil {
		t.Fatal(err)
	}
	fams, err := DecodeOpenMetrics(bytes.NewReader(out.Bytes()))
	if err != nil {
		t.Fatalf("%v\n%s", err, out.Bytes())
	}
	var undefined []string
	for _, m := range fams["netbench_figure_undefined"].GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "figure" || l.GetName() == "value" {
				undefined = append(undefined, l.GetValue())
			}
		}
	}
	if diff := cmp.Diff([]string{"udp.loss", "NaN", "udp.jitter", "+Inf"}, undefined); diff != "" {
		t.Errorf("undefined (-want +got):\n%s", diff)
	}
	if fams["netbench_loss_ratio"] != nil || fams["netbench_jitter_seconds"] != nil || len(fams["netbench_latency_seconds"].GetMetric()) != 2 {
		t.Errorf("families:\n%s", out.Bytes())
	}
}
