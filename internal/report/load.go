package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// MaxReportBytes bounds a report LoadRun reads: far more than any run writes.
const MaxReportBytes = v1alpha1.MaxReportBytes

// maxFigure bounds a figure's magnitude in a report read back: no measurement comes near it
// (1e15 µs is 31 years), and the differences and percentages of figures within it are finite.
const maxFigure = 1e15

// Errors of LoadRun; each is wrapped with the file's name and what is wrong, on one line.
// All but ErrInternal are v1alpha1.Read's.
var (
	// ErrNotAReport: not JSON or YAML, or not a report of a run this version writes.
	ErrNotAReport = v1alpha1.ErrNotAReport
	// ErrTooLarge: more than MaxReportBytes.
	ErrTooLarge = v1alpha1.ErrTooLarge
	// ErrInvalid: a value of the wrong type, a negative count, a figure beyond any measurement.
	ErrInvalid = v1alpha1.ErrInvalid
	// ErrIncomplete: something the report's figures are read from is missing.
	ErrIncomplete = v1alpha1.ErrIncomplete
	// ErrInternal: reading the report failed in a way it never should (a bug to report).
	ErrInternal = errors.New("internal error")
)

// runKinds are the kinds LoadRun reads: the reports of runs.
var runKinds = []string{v1alpha1.KindPath, v1alpha1.KindLadder, v1alpha1.KindDNS, v1alpha1.KindMatrix}

// LoadRun reads a report written with -o json or -o yaml, with its figures. What it cannot
// compare it refuses with one line naming the file and what is wrong: not a report, another
// apiVersion or kind, a value of the wrong type, a probe without its result, a negative count,
// a figure beyond any measurement. Its work is bounded by the size of the file.
func LoadRun(file string, data []byte) (run *LoadedRun, err error) {
	defer func() {
		if p := recover(); p != nil {
			run, err = nil, fmt.Errorf("%s: %w reading it (%s): please report it", displayName(file), ErrInternal, clip(fmt.Sprint(p)))
		}
	}()
	run, err = loadRun(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", displayName(file), err)
	}
	run.Info.File = file
	return run, nil
}

// loadRun is LoadRun without the file's name: the report as v1alpha1.Read decodes it, and its
// figures.
func loadRun(data []byte) (*LoadedRun, error) {
	js, err := reportJSON(data)
	if err != nil {
		return nil, err
	}
	rep, err := v1alpha1.Read(js, runKinds...)
	if err != nil {
		return nil, err
	}
	var run *LoadedRun
	switch r := rep.(type) {
	case *v1alpha1.PathReport:
		run = pathRun((*PathReport)(r))
	case *v1alpha1.LadderReport:
		run = ladderRun((*LadderReport)(r))
	case *v1alpha1.DNSReport:
		run = dnsRun((*DNSReport)(r))
	case *v1alpha1.MatrixReport:
		run = matrixRun((*MatrixReport)(r))
	default:
		return nil, fmt.Errorf("%w: a %T", ErrInternal, rep)
	}
	return run, checkFigures(run.Figures)
}

// reportJSON is the report as JSON: as it is when it is JSON, converted when it is YAML.
func reportJSON(data []byte) ([]byte, error) {
	if len(data) > MaxReportBytes {
		return nil, fmt.Errorf("%w (more than %d MiB)", ErrTooLarge, MaxReportBytes>>20)
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, fmt.Errorf("%w: the file is empty", ErrNotAReport)
	}
	if trimmed[0] == '{' {
		return trimmed, nil
	}
	js, err := yaml.YAMLToJSON(data)
	var ue *json.UnsupportedValueError
	switch {
	case errors.As(err, &ue):
		return nil, fmt.Errorf("%w: a number that is %s (YAML .nan or .inf), which no report holds", ErrInvalid, clip(ue.Str))
	case err != nil:
		return nil, fmt.Errorf("%w: neither JSON nor YAML (%s)", ErrNotAReport, clip(err.Error()))
	}
	if len(js) > MaxReportBytes {
		return nil, fmt.Errorf("%w (more than %d MiB once its YAML aliases are expanded)", ErrTooLarge, MaxReportBytes>>20)
	}
	return js, nil
}

func pathRun(r *PathReport) *LoadedRun {
	return &LoadedRun{Figures: r.FigureValues(), Info: RunInfo{Kind: r.Kind, StartTime: r.StartTime, Profile: r.Profile,
		Subject: EndpointName(r.Source) + " → " + EndpointName(r.Destination)}}
}

func ladderRun(r *LadderReport) *LoadedRun {
	return &LoadedRun{Figures: r.FigureValues(), Info: RunInfo{Kind: r.Kind, StartTime: r.StartTime, Profile: r.Profile,
		Subject: "ladder to " + EndpointName(r.Destination)}}
}

func dnsRun(r *DNSReport) *LoadedRun {
	return &LoadedRun{Figures: r.FigureValues(), Info: RunInfo{Kind: r.Kind, StartTime: r.StartTime,
		Subject: "dns in " + r.Target.Namespace + "/" + r.Target.Pod}}
}

func matrixRun(r *MatrixReport) *LoadedRun {
	return &LoadedRun{Figures: r.FigureValues(), Info: RunInfo{Kind: r.Kind, StartTime: r.StartTime,
		Subject: "matrix of " + r.Namespace + " (" + r.Scope + ")"}}
}

// checkFigures wants every figure, and its range, within maxFigure.
func checkFigures(fs []FigureValue) error {
	for _, f := range fs {
		vs := []float64{f.Value}
		if f.Spread != nil {
			vs = append(vs, f.Spread.Low)
			if f.Spread.High != nil {
				vs = append(vs, *f.Spread.High)
			}
		}
		for _, v := range vs {
			if !(math.Abs(v) <= maxFigure) {
				return fmt.Errorf("%w: figure %s reads %.4g, beyond any measurement (at most %g in magnitude)", ErrInvalid, quote(f.Name), v, float64(maxFigure))
			}
		}
	}
	return nil
}

// maxQuoted bounds what an error repeats of a file's content.
const maxQuoted = 80

// quote writes a string from a file in quotes, control characters escaped, clipped.
func quote(s string) string { return strconv.Quote(clip(s)) }

// clip shortens s to maxQuoted characters and puts it on one line.
func clip(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	if r := []rune(s); len(r) > maxQuoted {
		return string(r[:maxQuoted]) + "…"
	}
	return s
}

// displayName is a file's name as an error gives it: quoted when it holds control characters.
func displayName(file string) string {
	if strings.ContainsFunc(file, unicode.IsControl) {
		return strconv.Quote(file)
	}
	return file
}
