package v1alpha1

import (
	"encoding/json"
	"errors"
	"go/build"
	"reflect"
	"strings"
	"testing"
	"time"
)

const head = `{"apiVersion":"netbench.kubectl.dev/v1alpha1",`

// Read returns the report of the kind the data names.
func TestReadEveryKind(t *testing.T) {
	for kind, want := range map[string]Report{
		KindPath: &PathReport{}, KindLadder: &LadderReport{}, KindDNS: &DNSReport{}, KindMatrix: &MatrixReport{}, KindDiff: &DiffReport{},
	} {
		data := head + `"kind":"` + kind + `"`
		if kind == KindDNS {
			data += `,"result":{"names":[]}`
		}
		r, err := Read([]byte(data + "}"))
		if err != nil {
			t.Fatalf("%s: %v", kind, err)
		}
		if reflect.TypeOf(r) != reflect.TypeOf(want) {
			t.Errorf("%s: got a %T", kind, r)
		}
	}
}

// What a run writes reads back as it was.
func TestReadRoundTrip(t *testing.T) {
	high := 2.5
	in := &PathReport{APIVersion: APIVersion, Kind: KindPath, StartTime: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		Source: Endpoint{Namespace: "a", Pod: "p"}, Path: PathClass{Class: CrossZone, Dataplane: &Dataplane{Mode: "iptables"}},
		Probes: []*ProbeResult{
			{Name: "icmp", Kind: ProbeICMP, RTT: &RTTResult{Received: 3, RTT: Latency{Count: 3, P50Micros: 100, Histogram: []Bucket{{StartMicros: 90, EndMicros: 110, Count: 3}}}}},
			{Name: "dns", Kind: ProbeDNS, DNS: &DNSProbeResult{DNSResult: &DNSResult{Resolver: ResolverMusl, Config: ResolverConfig{Ndots: 5},
				Names: []DNSName{{Name: "x", Timeline: []DNSQuery{{Rcode: RcodeNXDomain}}}}, Race: &DNSRace{Measured: DNSRaceRun{Mode: RaceTogether}}}}},
			{Name: "tcp", Kind: ProbeTCP, Skipped: "not allowed"},
		},
		AgentFootprint: map[string]Footprint{"client": {CPUSeconds: 1}},
		Checks:         []CheckResult{{Condition: "rtt.p50 > 1ms", Values: map[string]CheckValue{"rtt.p50": {Value: 100, Unit: UnitMicros}}}},
	}
	js, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := Read(js)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, Report(in)) {
		t.Errorf("read back differently:\n got %+v\nwant %+v", out, in)
	}
	d := &DiffReport{APIVersion: APIVersion, Kind: KindDiff, Figures: []FigureChange{{Name: "rtt.p50", OldRange: &Range{Low: 1, High: &high}, Verdict: Regressed}}}
	if js, err = json.Marshal(d); err != nil {
		t.Fatal(err)
	}
	if out, err = Read(js); err != nil || !reflect.DeepEqual(out, Report(d)) {
		t.Errorf("diff read back as %+v, %v", out, err)
	}
}

// Read refuses what is not a report it can read, saying why on one line.
func TestReadRefuses(t *testing.T) {
	for _, c := range []struct {
		name, data string
		kinds      []string
		want       error
		msg        string
	}{
		{"empty", " \n", nil, ErrNotAReport, "empty"},
		{"YAML", "apiVersion: " + APIVersion + "\nkind: PathReport\n", nil, ErrNotAReport, "invalid JSON at byte 1"},
		{"another apiVersion", `{"apiVersion":"v1","kind":"Pod"}`, nil, ErrNotAReport, `apiVersion "v1", want netbench.kubectl.dev/v1alpha1`},
		{"no kind", head + `"probes":[]}`, nil, ErrNotAReport, "no kind (want PathReport, LadderReport, DNSReport, MatrixReport or DiffReport)"},
		{"another kind", head + `"kind":"Nope"}`, nil, ErrNotAReport, `kind "Nope", want`},
		{"a kind not asked for", head + `"kind":"DiffReport"}`, []string{KindPath, KindLadder}, ErrNotAReport, `kind "DiffReport", want PathReport or LadderReport`},
		{"a probe without its result", head + `"kind":"PathReport","probes":[{"name":"x","kind":"tcp"}]}`, nil, ErrIncomplete, `probes[0] "x" (kind tcp) has no "throughput" result`},
		{"a null app-port probe", head + `"kind":"PathReport","appPort":[null]}`, nil, ErrIncomplete, "appPort[0] is null"},
		{"a negative count", head + `"kind":"PathReport","probes":[{"name":"g","kind":"grpc","grpc":{"latency":{"count":-1}}}]}`, nil, ErrInvalid, "grpc.latency.count is -1"},
		{"a value of the wrong type", head + `"kind":"MatrixReport","pairs":"x"}`, nil, ErrInvalid, "pairs holds a string where an array is wanted"},
		{"a DNS report without a result", head + `"kind":"DNSReport"}`, nil, ErrIncomplete, "no result"},
		{"a DNS lookup with a negative count", head + `"kind":"DNSReport","result":{"names":[{"name":"a","variants":[{"label":"as configured","warm":{"count":-3}}]}]}}`, nil, ErrInvalid, "warm.count is -3"},
		{"truncated", head + `"kind":"PathReport","probes":[{"name":`, nil, ErrNotAReport, "ends early"},
		{"too large", head + `"kind":"PathReport","warnings":["` + strings.Repeat("a", MaxReportBytes) + `"]}`, nil, ErrTooLarge, "more than 64 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Read([]byte(c.data), c.kinds...)
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if msg := err.Error(); !strings.Contains(msg, c.msg) || strings.ContainsAny(msg, "\n\r") {
				t.Errorf("got %q, want one line containing %q", msg, c.msg)
			}
		})
	}
}

// The schema is for anyone to import: nothing but the standard library.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	p, err := build.ImportDir(".", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, imp := range p.Imports {
		if first, _, _ := strings.Cut(imp, "/"); strings.Contains(first, ".") {
			t.Errorf("imports %s", imp)
		}
	}
}
