package render

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

func loadTestRun(t *testing.T, file string, edit func(*report.PathReport)) *report.LoadedRun {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		var r report.PathReport
		mustDecode(t, data, &r)
		edit(&r)
		if data, err = json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	}
	run, err := report.LoadRun(file, data)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestDiffSameRunChangesNothing(t *testing.T) {
	for _, f := range []string{"testdata/path-cross-zone-app-port.json", "testdata/ladder-zone-delay-two-rounds.json", "testdata/dns-glibc.json", "testdata/matrix-nodes-slow-b1.json"} {
		run := loadTestRun(t, f, nil)
		d, err := report.Diff(run, run, 10)
		if err != nil {
			t.Fatal(err)
		}
		if d.Regressions != 0 || d.Improvements != 0 || len(d.Figures) < 4 || len(d.OnlyNew)+len(d.OnlyOld) != 0 {
			t.Errorf("%s: %+v", f, d)
		}
	}
}

// A slower path is a regression beyond the spread; a small wobble inside the tolerance or the
// percentile's own interval is not; throughput down is a regression too.
func TestDiffFindsTheRegression(t *testing.T) {
	old := loadTestRun(t, "testdata/path-cross-zone-app-port.json", nil)
	cur := loadTestRun(t, "testdata/path-cross-zone-app-port.json", func(r *report.PathReport) {
		for _, p := range r.Probes {
			switch {
			case p.Name == "icmp":
				l := &p.RTT.RTT
				l.P50Micros, l.P99Micros, l.MinMicros, l.MaxMicros = l.P50Micros+2000, l.P99Micros+2000, l.MinMicros+2000, l.MaxMicros+2000
				for i := range l.Histogram {
					l.Histogram[i].StartMicros += 2000
					l.Histogram[i].EndMicros += 2000
				}
			case p.Name == "tcp-rtt":
				p.RTT.RTT.P50Micros *= 1.05
			case p.Throughput != nil && p.Name == "tcp-1":
				p.Throughput.BitsPerSecondReceived /= 2
			}
		}
	})
	d, err := report.Diff(old, cur, 10)
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]string{}
	for _, f := range d.Figures {
		verdicts[f.Name] = f.Verdict
	}
	for name, want := range map[string]string{"icmp.p50": report.Regressed, "icmp.p99": report.WithinSpread /* 20 samples bound no p99 from above */, "tcp-rtt.p50": report.WithinSpread, "tcp-1.gbps": report.Regressed, "http.p50": report.WithinSpread, "tcp-8.gbps": report.WithinSpread} {
		if verdicts[name] != want {
			t.Errorf("%s: got %q, want %q", name, verdicts[name], want)
		}
	}
	var out bytes.Buffer
	if err := WriteDiff(&out, "", d); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "** regressed") || !strings.Contains(out.String(), "2 regressed") || !strings.Contains(out.String(), "too few samples to bound") {
		t.Errorf("table:\n%s", out.String())
	}
	improved, _ := report.Diff(cur, old, 10)
	if improved.Improvements != 2 || improved.Regressions != 0 {
		t.Errorf("reverse: %d improved, %d regressed", improved.Improvements, improved.Regressions)
	}
}

func TestDiffRefusesOtherFiles(t *testing.T) {
	for _, data := range []string{"", "{}", `{"apiVersion":"v1","kind":"Pod"}`, `{"apiVersion":"netbench.kubectl.dev/v1alpha1","kind":"Nope"}`, "\x00\x01", `{"apiVersion":"netbench.kubectl.dev/v1alpha1","kind":"PathReport","probes":"x"}`} {
		if _, err := report.LoadRun("f.json", []byte(data)); err == nil {
			t.Errorf("%q: accepted", data)
		}
	}
	a := loadTestRun(t, "testdata/dns-glibc.json", nil)
	b := loadTestRun(t, "testdata/path-pod-mode-rtt-tcp.json", nil)
	if _, err := report.Diff(a, b, 10); err == nil {
		t.Error("a DNS report diffed against a path report")
	}
}
