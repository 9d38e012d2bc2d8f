package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strconv"
	"strings"
	"unicode"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
)

// MaxReportBytes bounds a report LoadRun reads: far more than any run writes.
const MaxReportBytes = 64 << 20

// maxFigure bounds a figure's magnitude in a report read back: no measurement comes near it
// (1e15 µs is 31 years), and the differences and percentages of figures within it are finite.
const maxFigure = 1e15

// Errors of LoadRun; each is wrapped with the file's name and what is wrong, on one line.
var (
	// ErrNotAReport: not JSON or YAML, or not a report of a run this version writes.
	ErrNotAReport = errors.New("not a kubectl-netbench report")
	// ErrTooLarge: more than MaxReportBytes.
	ErrTooLarge = errors.New("larger than any report")
	// ErrInvalid: a value of the wrong type, a negative count, a figure beyond any measurement.
	ErrInvalid = errors.New("invalid report")
	// ErrIncomplete: something the report's figures are read from is missing.
	ErrIncomplete = errors.New("incomplete report")
	// ErrInternal: reading the report failed in a way it never should (a bug to report).
	ErrInternal = errors.New("internal error")
)

// reportKinds are the kinds LoadRun reads, as the error for another kind lists them.
const reportKinds = "PathReport, LadderReport, DNSReport or MatrixReport"

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

// loadRun is LoadRun without the file's name.
func loadRun(data []byte) (*LoadedRun, error) {
	js, err := reportJSON(data)
	if err != nil {
		return nil, err
	}
	var head struct{ APIVersion, Kind string }
	if err := decode(js, &head); err != nil {
		return nil, err
	}
	switch {
	case head.APIVersion == "":
		return nil, fmt.Errorf("%w: no apiVersion (want %s, as -o json and -o yaml write it)", ErrNotAReport, APIVersion)
	case head.APIVersion != APIVersion:
		return nil, fmt.Errorf("%w: apiVersion %s, want %s", ErrNotAReport, quote(head.APIVersion), APIVersion)
	}
	var run *LoadedRun
	switch head.Kind {
	case "PathReport":
		run, err = loadPath(js)
	case "LadderReport":
		run, err = loadLadder(js)
	case "DNSReport":
		run, err = loadDNS(js)
	case "MatrixReport":
		run, err = loadMatrix(js)
	case "":
		return nil, fmt.Errorf("%w: no kind (want %s)", ErrNotAReport, reportKinds)
	default:
		return nil, fmt.Errorf("%w: kind %s, want %s", ErrNotAReport, quote(head.Kind), reportKinds)
	}
	if err != nil {
		return nil, err
	}
	run.Info.Kind = head.Kind
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

// decode reads js into v, saying where and what is wrong when it cannot.
func decode(js []byte, v any) error {
	err := json.Unmarshal(js, v)
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se) && se.Offset >= int64(len(js)):
		return fmt.Errorf("%w: the file ends early, at byte %d (truncated?)", ErrNotAReport, len(js))
	case errors.As(err, &se):
		return fmt.Errorf("%w: invalid JSON at byte %d: %s", ErrNotAReport, se.Offset, clip(se.Error()))
	case errors.As(err, &te) && te.Field == "":
		return fmt.Errorf("%w: %s where an object with apiVersion and kind is wanted", ErrNotAReport, jsonValue(te.Value))
	case errors.As(err, &te):
		return fmt.Errorf("%w: %s holds %s where %s is wanted", ErrInvalid, clip(te.Field), jsonValue(te.Value), jsonType(te.Type))
	}
	return fmt.Errorf("%w: %s", ErrNotAReport, clip(err.Error()))
}

// jsonValue names a JSON value as encoding/json describes it ("string", "number 1e400").
func jsonValue(v string) string {
	switch {
	case v == "array" || v == "object":
		return "an " + v
	case strings.HasPrefix(v, "number "):
		return clip(v)
	}
	return "a " + clip(v)
}

// jsonType names what a Go type is in JSON.
func jsonType(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return fmt.Sprintf("an integer of %d bits", t.Bits())
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return fmt.Sprintf("a non-negative integer of %d bits", t.Bits())
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a value"
}

func loadPath(js []byte) (*LoadedRun, error) {
	var r PathReport
	if err := decode(js, &r); err != nil {
		return nil, err
	}
	if err := checkProbes("probes", r.Probes); err != nil {
		return nil, err
	}
	if err := checkProbes("appPort", r.AppPort); err != nil {
		return nil, err
	}
	return &LoadedRun{Figures: r.FigureValues(), Info: RunInfo{StartTime: r.StartTime, Profile: r.Profile,
		Subject: endpoint(r.Source) + " → " + endpoint(r.Destination)}}, nil
}

func loadLadder(js []byte) (*LoadedRun, error) {
	var r LadderReport
	if err := decode(js, &r); err != nil {
		return nil, err
	}
	return &LoadedRun{Figures: r.FigureValues(), Info: RunInfo{StartTime: r.StartTime, Profile: r.Profile,
		Subject: "ladder to " + endpoint(r.Destination)}}, nil
}

func loadDNS(js []byte) (*LoadedRun, error) {
	var r DNSReport
	if err := decode(js, &r); err != nil {
		return nil, err
	}
	if err := checkDNS(&r); err != nil {
		return nil, err
	}
	return &LoadedRun{Figures: r.FigureValues(), Info: RunInfo{StartTime: r.StartTime,
		Subject: "dns in " + r.Target.Namespace + "/" + r.Target.Pod}}, nil
}

func loadMatrix(js []byte) (*LoadedRun, error) {
	var r MatrixReport
	if err := decode(js, &r); err != nil {
		return nil, err
	}
	return &LoadedRun{Figures: r.FigureValues(), Info: RunInfo{StartTime: r.StartTime,
		Subject: "matrix of " + r.Namespace + " (" + r.Scope + ")"}}, nil
}

// checkProbes finds, in a list of probe results, the first that figures cannot be read from.
func checkProbes(field string, rs []*agent.ProbeResult) error {
	for i, p := range rs {
		if what, err := probeProblem(p); err != nil {
			return fmt.Errorf("%w: %s[%d] %s", err, field, i, what)
		}
	}
	return nil
}

// probeProblem says what is wrong with a probe's result, if anything: a probe that ran (was
// not skipped) carries the result block of its kind, with counts of 0 or more.
func probeProblem(p *agent.ProbeResult) (string, error) {
	if p == nil {
		return "is null", ErrIncomplete
	}
	if p.Skipped != "" {
		return "", nil
	}
	if p.Name == "" {
		return "has no name", ErrIncomplete
	}
	b := resultBlock(p)
	switch {
	case b.name == "":
		return "", nil // a kind without figures
	case !b.present:
		return fmt.Sprintf("%s (kind %s) has no %q result (a probe that was not skipped has one)", quote(p.Name), p.Kind, b.name), ErrIncomplete
	case b.latency != nil:
		if what, err := latencyProblem(*b.latency); err != nil {
			return fmt.Sprintf("%s (kind %s): %s.%s", quote(p.Name), p.Kind, b.latencyPath, what), err
		}
	}
	return "", nil
}

// block is where a probe of a kind with figures carries them: the block's JSON name, whether
// the result has it, and its latency with that latency's JSON path (nil for kinds without one).
type block struct {
	name        string
	present     bool
	latency     *probes.Latency
	latencyPath string
}

func resultBlock(p *agent.ProbeResult) block {
	switch p.Kind {
	case agent.ProbeICMP, agent.ProbeTCPRTT, agent.ProbeUDP:
		if p.RTT != nil {
			return block{"rtt", true, &p.RTT.RTT, "rtt.rtt"}
		}
		return block{name: "rtt"}
	case agent.ProbeHTTP, agent.ProbeHTTPNewConn, agent.ProbeHTTPMax:
		if p.HTTP != nil {
			return block{"http", true, &p.HTTP.Latency, "http.latency"}
		}
		return block{name: "http"}
	case agent.ProbeGRPC:
		if p.GRPC != nil {
			return block{"grpc", true, &p.GRPC.Latency, "grpc.latency"}
		}
		return block{name: "grpc"}
	case agent.ProbeTCP:
		return block{name: "throughput", present: p.Throughput != nil}
	case agent.ProbePMTU:
		return block{name: "pathMTU", present: p.PMTU != nil}
	}
	return block{}
}

// latencyProblem says which count of a latency is negative, if one is.
func latencyProblem(l probes.Latency) (string, error) {
	if l.Count < 0 {
		return fmt.Sprintf("count is %d (want 0 or more)", l.Count), ErrInvalid
	}
	for i, b := range l.Histogram {
		if b.Count < 0 {
			return fmt.Sprintf("histogram[%d].count is %d (want 0 or more)", i, b.Count), ErrInvalid
		}
	}
	return "", nil
}

// checkDNS wants the DNS result the figures are read from, with counts of 0 or more.
func checkDNS(r *DNSReport) error {
	switch {
	case r.Result == nil:
		return fmt.Errorf("%w: no result", ErrIncomplete)
	case r.Result.DNSResult == nil:
		return fmt.Errorf("%w: the result has no names measured", ErrIncomplete)
	}
	for i, n := range r.Result.Names {
		if v := variant(n, "as configured"); v != nil {
			if what, err := latencyProblem(v.Warm); err != nil {
				return fmt.Errorf("%w: result.names[%d] (%s) as configured: warm.%s", err, i, quote(n.Name), what)
			}
		}
	}
	return nil
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
