package report

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
)

const head = `{"apiVersion":"netbench.kubectl.dev/v1alpha1",`

// badReports are inputs LoadRun refuses, each with the error it wraps.
var badReports = []struct {
	name string
	data string
	want error
}{
	{"a probe without its result", head + `"kind":"PathReport","probes":[{"name":"x","kind":"tcp"}]}`, ErrIncomplete},
	{"an rtt probe without its result", head + `"kind":"PathReport","probes":[{"name":"u","kind":"udp"}]}`, ErrIncomplete},
	{"an app-port probe without its result", head + `"kind":"PathReport","appPort":[{"name":"app-http","kind":"http"}]}`, ErrIncomplete},
	{"a probe without a name", head + `"kind":"PathReport","probes":[{"kind":"path-mtu","pathMTU":{}}]}`, ErrIncomplete},
	{"a null probe", head + `"kind":"PathReport","probes":[null]}`, ErrIncomplete},
	{"a negative count", head + `"kind":"PathReport","probes":[{"name":"g","kind":"grpc","grpc":{"latency":{"count":-1}}}]}`, ErrInvalid},
	{"a count too large for its type", head + `"kind":"PathReport","probes":[{"name":"i","kind":"icmp","rtt":{"rtt":{"count":1e30}}}]}`, ErrInvalid},
	{"a figure beyond any measurement", head + `"kind":"MatrixReport","zoneCells":[{"from":"a","to":"a","p50Micros":1e300}]}`, ErrInvalid},
	{"a ladder figure beyond any measurement", head + `"kind":"LadderReport","rungs":[{"name":"r","figures":{"x.p50":{"unit":"µs","median":1,"min":-1e200,"max":1,"samples":2}}}],"figures":["x.p50"]}`, ErrInvalid},
	{"a DNS report without a result", head + `"kind":"DNSReport"}`, ErrIncomplete},
	{"a DNS result without names", head + `"kind":"DNSReport","result":{"resolvConf":""}}`, ErrIncomplete},
	{"a DNS lookup with a negative count", head + `"kind":"DNSReport","result":{"names":[{"name":"a","variants":[{"label":"as configured","warm":{"count":-3}}]}]}}`, ErrInvalid},
	{"a value of the wrong type", head + `"kind":"PathReport","probes":"x"}`, ErrInvalid},
	{"a number that is not one", "apiVersion: netbench.kubectl.dev/v1alpha1\nkind: MatrixReport\noutlierFactor: .inf\n", ErrInvalid},
	{"another apiVersion", `{"apiVersion":"v1","kind":"Pod"}`, ErrNotAReport},
	{"no apiVersion", `{"kind":"PathReport"}`, ErrNotAReport},
	{"another kind", head + `"kind":"Nope"}`, ErrNotAReport},
	{"no kind", head + `"probes":[]}`, ErrNotAReport},
	{"a diff", head + `"kind":"DiffReport"}`, ErrNotAReport},
	{"empty", "", ErrNotAReport},
	{"blank", " \n\t ", ErrNotAReport},
	{"an empty object", "{}", ErrNotAReport},
	{"an array", "[1]", ErrNotAReport},
	{"binary", "\x00\x01", ErrNotAReport},
	{"truncated", head + `"kind":"PathReport","probes":[{"name":`, ErrNotAReport},
	{"trailing garbage", head + `"kind":"PathReport"}}`, ErrNotAReport},
	{"JSON nested too deep", strings.Repeat(`{"a":`, 20000), ErrNotAReport},
	{"a probe list nested too deep", head + `"kind":"PathReport","probes":` + strings.Repeat("[", 20000), ErrNotAReport},
	{"YAML nested too deep", strings.Repeat("- ", 20000) + "1", ErrNotAReport},
	{"YAML aliases expanding", "a: &a [x,x,x,x,x,x,x,x,x]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n", ErrNotAReport},
	{"larger than any report", head + `"kind":"PathReport","warnings":["` + strings.Repeat("a", MaxReportBytes) + `"]}`, ErrTooLarge},
}

// LoadRun refuses what it cannot compare with one line naming the file, wrapping the error
// that says why.
func TestLoadRunRefuses(t *testing.T) {
	for _, c := range badReports {
		t.Run(c.name, func(t *testing.T) {
			_, err := LoadRun("dir/f.json", []byte(c.data))
			if !errors.Is(err, c.want) {
				t.Fatalf("got %v, want %v", err, c.want)
			}
			if msg := err.Error(); !strings.HasPrefix(msg, "dir/f.json: ") || strings.ContainsAny(msg, "\n\r") || len(msg) > 400 {
				t.Errorf("not one short line naming the file: %q", msg)
			}
		})
	}
}

// A file name with control characters is quoted in the error.
func TestLoadRunQuotesTheFileName(t *testing.T) {
	_, err := LoadRun("a\nb\x1b[31m.json", nil)
	if err == nil || strings.ContainsAny(err.Error(), "\n\x1b") {
		t.Errorf("got %q", err)
	}
}

// What every run writes loads back, as JSON and as YAML, with the same figures.
func TestLoadRunReadsJSONAndYAML(t *testing.T) {
	for _, in := range []string{"../render/testdata/path-cross-zone-app-port.json", "../render/testdata/ladder-zone-delay-two-rounds.json", "../render/testdata/dns-glibc.json", "../render/testdata/matrix-nodes-slow-b1.json"} {
		data, err := os.ReadFile(in)
		if err != nil {
			t.Fatal(err)
		}
		y, err := yaml.JSONToYAML(data)
		if err != nil {
			t.Fatal(err)
		}
		a, err := LoadRun(in, data)
		if err != nil {
			t.Fatal(err)
		}
		b, err := LoadRun(in, y)
		if err != nil {
			t.Fatal(err)
		}
		if len(a.Figures) == 0 {
			t.Errorf("%s: no figures", in)
		}
		if diff := cmp.Diff(a.Figures, b.Figures); diff != "" {
			t.Errorf("%s: JSON and YAML differ (-json +yaml):\n%s", in, diff)
		}
	}
}

// Counts no run reaches load at once: the largest count a file can hold, and a ladder with as
// many rungs and figure names as the largest file holds (its figures are listed in linear
// time, not rungs × names).
func TestLoadRunBoundedWork(t *testing.T) {
	huge := head + `"kind":"PathReport","probes":[{"name":"http","kind":"http","http":{"latency":{"count":9223372036854775807,"p50Micros":1,"p99Micros":2,"p999Micros":3,"minMicros":1,"maxMicros":3,"histogram":[{"startMicros":0,"endMicros":3,"count":9223372036854775807}]}}}]}`
	var ladder bytes.Buffer
	ladder.WriteString(head + `"kind":"LadderReport","rungs":[`)
	const n = 30_000
	for i := range n {
		fmt.Fprintf(&ladder, `%s{"name":"r%d","class":"same-zone","figures":{"f%d.p50":{"unit":"µs","median":1}}}`, map[bool]string{true: ",", false: ""}[i > 0], i, i)
	}
	ladder.WriteString(`],"figures":[`)
	for i := range n {
		fmt.Fprintf(&ladder, `%s"f%d.p50"`, map[bool]string{true: ",", false: ""}[i > 0], i)
	}
	ladder.WriteString("]}")
	for name, data := range map[string][]byte{"count": []byte(huge), "ladder": ladder.Bytes()} {
		start := time.Now()
		run, err := LoadRun(name, data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if took := time.Since(start); took > 20*time.Second {
			t.Errorf("%s took %v", name, took)
		}
		for _, f := range run.Figures {
			if f.Spread != nil && (math.IsNaN(f.Spread.Low) || f.Spread.High != nil && math.IsNaN(*f.Spread.High)) {
				t.Errorf("%s: %s has a range %+v", name, f.Name, f.Spread)
			}
		}
	}
}

// Whatever a file holds, reading it back never panics and, when refused, says why on one
// line; a file that loads has finite figures and compares with itself without a change, in
// numbers JSON can hold (FuzzWriteDiff in internal/render writes such diffs in every format).
func FuzzLoadRun(f *testing.F) {
	for _, in := range []string{"../render/testdata/path-pod-mode-rtt-tcp.json", "../render/testdata/dns-glibc.json", "../render/testdata/ladder-service-any.json", "../render/testdata/matrix-nodes-slow-b1.json"} {
		b, err := os.ReadFile(in)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(b[:len(b)*2/3]) // truncated
		if y, err := yaml.JSONToYAML(b); err == nil {
			f.Add(y)
			f.Add(y[:len(y)/2])
		}
	}
	for _, c := range badReports {
		if len(c.data) < 1<<20 {
			f.Add([]byte(c.data))
		}
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		run, err := loadRun(b)
		if err != nil {
			if strings.ContainsAny(err.Error(), "\n\r") {
				t.Fatalf("more than one line: %q", err)
			}
			if !errors.Is(err, ErrNotAReport) && !errors.Is(err, ErrInvalid) && !errors.Is(err, ErrIncomplete) && !errors.Is(err, ErrTooLarge) {
				t.Fatalf("an error of no known kind: %v", err)
			}
			return
		}
		checkLoaded(t, run)
	})
}

func checkLoaded(t *testing.T, run *LoadedRun) {
	t.Helper()
	if err := checkFigures(run.Figures); err != nil {
		t.Fatalf("loaded with %v", err)
	}
	d, err := Diff(run, run, 10)
	if err != nil {
		t.Fatal(err)
	}
	if d.Regressions != 0 || d.Improvements != 0 {
		t.Errorf("a run changed against itself: %+v", d.Figures)
	}
	// JSON holds no NaN or infinity: a diff of a loaded run must not compute one (FuzzWriteDiff
	// renders such diffs in every format).
	if _, err := json.Marshal(d); err != nil {
		t.Errorf("a diff of a loaded run holds a number JSON cannot: %v", err)
	}
}

// A result of any kind without its block has no figures (and reading them does not fail).
func TestFiguresOfResultsWithoutTheirBlock(t *testing.T) {
	kinds := []string{agent.ProbeICMP, agent.ProbeTCPRTT, agent.ProbeUDP, agent.ProbeHTTP, agent.ProbeHTTPNewConn,
		agent.ProbeHTTPMax, agent.ProbeGRPC, agent.ProbeTCP, agent.ProbePMTU, agent.ProbeDNS, agent.ProbeSpread, "unknown"}
	var results []*agent.ProbeResult
	for _, k := range kinds {
		results = append(results, &agent.ProbeResult{Name: k, Kind: k}, nil)
	}
	if got := ProbeFigures(results); len(got) != 0 {
		t.Errorf("figures of results without blocks: %+v", got)
	}
}
