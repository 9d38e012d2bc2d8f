package report

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func loadTestRun(t *testing.T, file string, edit func(*PathReport)) *LoadedRun {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		var r PathReport
		mustDecode(t, data, &r)
		edit(&r)
		if data, err = json.Marshal(r); err != nil {
			t.Fatal(err)
		}
	}
	run, err := LoadRun(file, data)
	if err != nil {
		t.Fatal(err)
	}
	return run
}

func TestDiffSameRunChangesNothing(t *testing.T) {
	for _, f := range []string{"testdata/path-cross-zone-app-port.json", "testdata/ladder-zone-delay-two-rounds.json", "testdata/dns-glibc.json", "testdata/matrix-nodes-slow-b1.json"} {
		run := loadTestRun(t, f, nil)
		d, err := Diff(run, run, 10)
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
	cur := loadTestRun(t, "testdata/path-cross-zone-app-port.json", func(r *PathReport) {
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
	d, err := Diff(old, cur, 10)
	if err != nil {
		t.Fatal(err)
	}
	verdicts := map[string]string{}
	for _, f := range d.Figures {
		verdicts[f.Name] = f.Verdict
	}
	for name, want := range map[string]string{"icmp.p50": Regressed, "icmp.p99": WithinSpread /* 20 samples bound no p99 from above */, "tcp-rtt.p50": WithinSpread, "tcp-1.gbps": Regressed, "http.p50": WithinSpread, "tcp-8.gbps": WithinSpread} {
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
	improved, _ := Diff(cur, old, 10)
	if improved.Improvements != 2 || improved.Regressions != 0 {
		t.Errorf("reverse: %d improved, %d regressed", improved.Improvements, improved.Regressions)
	}
}

func TestDiffRefusesOtherFiles(t *testing.T) {
	for _, data := range []string{"", "{}", `{"apiVersion":"v1","kind":"Pod"}`, `{"apiVersion":"netbench.kubectl.dev/v1alpha1","kind":"Nope"}`, "\x00\x01", `{"apiVersion":"netbench.kubectl.dev/v1alpha1","kind":"PathReport","probes":"x"}`} {
		if _, err := LoadRun("f.json", []byte(data)); err == nil {
			t.Errorf("%q: accepted", data)
		}
	}
	a := loadTestRun(t, "testdata/dns-glibc.json", nil)
	b := loadTestRun(t, "testdata/path-pod-mode-rtt-tcp.json", nil)
	if _, err := Diff(a, b, 10); err == nil {
		t.Error("a DNS report diffed against a path report")
	}
}

// The ranks of a percentile's 95 % interval, against the binomial distribution's published
// values (e.g. the median of 20 samples lies between the 6th and the 15th with 95.9 %).
func TestOrderRanks(t *testing.T) {
	for _, c := range []struct {
		n    int64
		q    float64
		l, u int64
	}{
		{20, 0.5, 6, 15},
		{10, 0.5, 2, 9},
		{100, 0.5, 40, 61},
		{20, 0.99, 19, 0}, // no rank of 20 holds the p99 from above
		{1000, 0.99, 983, 997},
		{5, 0.5, 0, 0}, // too few for either side
	} {
		if l, u := orderRanks(c.n, c.q); l != c.l || u != c.u {
			t.Errorf("n %d q %g: ranks %d, %d; want %d, %d", c.n, c.q, l, u, c.l, c.u)
		}
	}
}

// One slow reply among 20 moves a p99 a lot, but 20 samples cannot bound a p99 from above:
// that is not a change beyond the spread.
func TestDiffSmallSampleP99IsNotARegression(t *testing.T) {
	p99 := func(v float64) FigureValue {
		return FigureValue{Name: "icmp.p99", Unit: UnitMicros, Value: v, Spread: &Range{Low: v * 0.95}}
	}
	if c := compareFigure(p99(121), p99(229), 10); c.Verdict != WithinSpread {
		t.Errorf("%+v", c)
	}
}

func BenchmarkOrderRanksHTTP(b *testing.B) {
	for i := 0; i < b.N; i++ {
		orderRanks(40000, 0.999)
	}
}

// A change from 0, or from a value too close to 0 for a percentage, has no percentage (and is
// beyond any tolerance); one between equal values is none.
func TestCompareFigureFromZero(t *testing.T) {
	pct := func(p float64) *float64 { return &p }
	for _, c := range []struct {
		name     string
		old, new float64
		want     FigureChange
	}{
		{"zero to zero", 0, 0, FigureChange{Verdict: WithinSpread, Reason: "within the 10 % tolerance"}},
		{"zero to more", 0, 5, FigureChange{Change: 5, Verdict: Regressed, Reason: "beyond the tolerance"}},
		{"tiny to more", 1e-310, 1e5, FigureChange{Change: 1e5, Verdict: Regressed, Reason: "beyond the tolerance"}},
		{"small to more", 1, 2, FigureChange{Change: 1, ChangePercent: pct(100), Verdict: Regressed, Reason: "beyond the tolerance"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := compareFigure(FigureValue{Name: "x", Unit: UnitMicros, Value: c.old}, FigureValue{Name: "x", Unit: UnitMicros, Value: c.new}, 10)
			c.want.Name, c.want.Unit, c.want.Old, c.want.New = "x", UnitMicros, c.old, c.new
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
