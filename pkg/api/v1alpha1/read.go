package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// MaxReportBytes bounds a report Read reads: far more than any run writes.
const MaxReportBytes = 64 << 20

// Errors of Read; each is wrapped with what is wrong, on one line.
var (
	// ErrNotAReport: not JSON, or not a report of a run this version writes.
	ErrNotAReport = errors.New("not a kubectl-netbench report")
	// ErrTooLarge: more than MaxReportBytes.
	ErrTooLarge = errors.New("larger than any report")
	// ErrInvalid: a value of the wrong type, a negative count.
	ErrInvalid = errors.New("invalid report")
	// ErrIncomplete: something the report's figures are read from is missing.
	ErrIncomplete = errors.New("incomplete report")
)

// allKinds are the kinds Read reads when it is not told which.
var allKinds = []string{KindPath, KindLadder, KindDNS, KindMatrix, KindDiff}

// Read decodes a report as -o json writes it (-o yaml writes the same document: convert it to
// JSON first) into the report of its kind: *PathReport, *LadderReport, *DNSReport,
// *MatrixReport or *DiffReport. kinds, when given, are the only kinds it accepts.
//
// What it cannot read it refuses with one line saying what is wrong, wrapping ErrNotAReport,
// ErrTooLarge, ErrInvalid or ErrIncomplete: not a report, another apiVersion or kind, a value
// of the wrong type, a probe that ran without its result, a negative count. Its work is
// bounded by the size of the data.
func Read(data []byte, kinds ...string) (Report, error) {
	if len(kinds) == 0 {
		kinds = allKinds
	}
	if len(data) > MaxReportBytes {
		return nil, fmt.Errorf("%w (more than %d MiB)", ErrTooLarge, MaxReportBytes>>20)
	}
	js := bytes.TrimSpace(data)
	if len(js) == 0 {
		return nil, fmt.Errorf("%w: the file is empty", ErrNotAReport)
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
	case head.Kind == "":
		return nil, fmt.Errorf("%w: no kind (want %s)", ErrNotAReport, orList(kinds))
	}
	var r Report
	switch head.Kind {
	case KindPath:
		r = &PathReport{}
	case KindLadder:
		r = &LadderReport{}
	case KindDNS:
		r = &DNSReport{}
	case KindMatrix:
		r = &MatrixReport{}
	case KindDiff:
		r = &DiffReport{}
	}
	if r == nil || !slices.Contains(kinds, head.Kind) {
		return nil, fmt.Errorf("%w: kind %s, want %s", ErrNotAReport, quote(head.Kind), orList(kinds))
	}
	if err := decode(js, r); err != nil {
		return nil, err
	}
	return r, check(r)
}

// orList lists words as "a, b or c".
func orList(words []string) string {
	if len(words) < 2 {
		return strings.Join(words, "")
	}
	return strings.Join(words[:len(words)-1], ", ") + " or " + words[len(words)-1]
}

// check finds what a decoded report's figures cannot be read from.
func check(r Report) error {
	switch r := r.(type) {
	case *PathReport:
		if err := checkProbes("probes", r.Probes); err != nil {
			return err
		}
		return checkProbes("appPort", r.AppPort)
	case *DNSReport:
		return checkDNS(r)
	}
	return nil
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

// checkProbes finds, in a list of probe results, the first that figures cannot be read from.
func checkProbes(field string, rs []*ProbeResult) error {
	for i, p := range rs {
		if what, err := probeProblem(p); err != nil {
			return fmt.Errorf("%w: %s[%d] %s", err, field, i, what)
		}
	}
	return nil
}

// probeProblem says what is wrong with a probe's result, if anything: a probe that ran (was
// not skipped) carries the result block of its kind, with counts of 0 or more.
func probeProblem(p *ProbeResult) (string, error) {
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
	latency     *Latency
	latencyPath string
}

func resultBlock(p *ProbeResult) block {
	switch p.Kind {
	case ProbeICMP, ProbeTCPRTT, ProbeUDP:
		if p.RTT != nil {
			return block{"rtt", true, &p.RTT.RTT, "rtt.rtt"}
		}
		return block{name: "rtt"}
	case ProbeHTTP, ProbeHTTPNewConn, ProbeHTTPMax:
		if p.HTTP != nil {
			return block{"http", true, &p.HTTP.Latency, "http.latency"}
		}
		return block{name: "http"}
	case ProbeGRPC:
		if p.GRPC != nil {
			return block{"grpc", true, &p.GRPC.Latency, "grpc.latency"}
		}
		return block{name: "grpc"}
	case ProbeTCP:
		return block{name: "throughput", present: p.Throughput != nil}
	case ProbePMTU:
		return block{name: "pathMTU", present: p.PMTU != nil}
	}
	return block{}
}

// latencyProblem says which count of a latency is negative, if one is.
func latencyProblem(l Latency) (string, error) {
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
		for _, v := range n.Variants {
			if v.Label != "as configured" {
				continue
			}
			if what, err := latencyProblem(v.Warm); err != nil {
				return fmt.Errorf("%w: result.names[%d] (%s) as configured: warm.%s", err, i, quote(n.Name), what)
			}
			break
		}
	}
	return nil
}

// maxQuoted bounds what an error repeats of the data read.
const maxQuoted = 80

// quote writes a string from the data in quotes, control characters escaped, clipped.
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
