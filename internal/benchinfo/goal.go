package benchinfo

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// Goal says how a figure's netbench median must relate to the reference's: Text is what the
// results table prints, Met decides (nil: information only).
type Goal struct {
	Text string
	Met  func(ours, ref float64) bool
}

// AtLeast wants ours ≥ x × the reference.
func AtLeast(x float64) Goal {
	return Goal{fmt.Sprintf("≥ %.2f×", x), func(o, r float64) bool { return o >= x*r }}
}

// AtMost wants ours ≤ x × the reference.
func AtMost(x float64) Goal {
	return Goal{fmt.Sprintf("≤ %.2f×", x), func(o, r float64) bool { return o <= x*r }}
}

// WithinPct wants ours within p % of the reference.
func WithinPct(p float64) Goal {
	return Goal{fmt.Sprintf("±%g %%", p), func(o, r float64) bool { return math.Abs(o-r) <= r*p/100 }}
}

// WithinMicros wants ours within d µs of the reference.
func WithinMicros(d float64) Goal {
	return Goal{fmt.Sprintf("±%g µs", d), func(o, r float64) bool { return math.Abs(o-r) <= d }}
}

// Info is no goal: the figure is shown for information.
var Info = Goal{Text: "(info)"}

// Fixed is a number the prose of a results file prints whatever was measured, on its line.
type Fixed struct{ Number, Line string }

// FixedNumbers renders the same generator's prose for two runs that share no figure (a and b)
// and returns the numbers of a's prose that b's prose prints too and that allowed (the code's
// own parameters) does not hold: typed-in figures. The names (of files the prose cites) are
// taken out of both first: their digits are not figures, and allowing them would let the same
// numbers through anywhere else.
func FixedNumbers(a, b string, allowed map[string]bool, names ...string) []Fixed {
	for _, n := range names {
		a, b = strings.ReplaceAll(a, n, ""), strings.ReplaceAll(b, n, "")
	}
	inB := map[string]bool{}
	for _, n := range Numbers(Prose(b)) {
		inB[n] = true
	}
	var out []Fixed
	for _, l := range strings.Split(Prose(a), "\n") {
		for _, n := range Numbers(l) {
			if inB[n] && !allowed[n] {
				out = append(out, Fixed{n, l})
			}
		}
	}
	return out
}

// CheckNoFixedNumbers fails t for each of FixedNumbers(a, b, allowed, names...), with a's prose.
func CheckNoFixedNumbers(t testing.TB, a, b string, allowed map[string]bool, names ...string) {
	t.Helper()
	for _, f := range FixedNumbers(a, b, allowed, names...) {
		t.Errorf("%q is printed whatever was measured, and is not a parameter of the code:\n%s", f.Number, f.Line)
	}
	if t.Failed() {
		t.Logf("the first rendering's prose:\n%s", Prose(a))
	}
}

// WithinPoints wants ours within d percentage points of the reference (for figures that are
// percentages themselves, such as loss).
func WithinPoints(d float64) Goal {
	return Goal{fmt.Sprintf("±%g points", d), func(o, r float64) bool { return math.Abs(o-r) <= d }}
}
