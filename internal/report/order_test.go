package report

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

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
