package gate

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A condition on a figure that is NaN or infinite, or whose arithmetic has no finite value,
// fails and names why; whatever it compares, it never passes.
func TestUndefinedFailsTheGate(t *testing.T) {
	with := func(name string, v float64) Figures {
		f := Figures{}
		for k, x := range measured {
			f[k] = x
		}
		f[name] = Figure{Value: v, Unit: f[name].Unit}
		return f
	}
	loss0 := map[string]Figure{"udp.loss": {Value: 0, Unit: Percent}}
	for _, c := range []struct {
		cond string
		figs Figures
		want Result
	}{
		{"udp.loss / udp.loss > 1", measured, Result{Violated: true, Values: loss0, Undefined: "udp.loss / udp.loss",
			Message: "udp.loss = 0 %; udp.loss / udp.loss is undefined (0/0), so the condition cannot pass"}},
		{"udp.loss / udp.loss <= 1", measured, Result{Violated: true, Values: loss0, Undefined: "udp.loss / udp.loss",
			Message: "udp.loss = 0 %; udp.loss / udp.loss is undefined (0/0), so the condition cannot pass"}},
		{"udp.loss > 1%", with("udp.loss", math.NaN()), Result{Violated: true, Values: map[string]Figure{}, Undefined: "udp.loss",
			Message: "udp.loss is undefined (not a number), so the condition cannot pass"}},
		{"udp.loss <= 1%", with("udp.loss", math.NaN()), Result{Violated: true, Values: map[string]Figure{}, Undefined: "udp.loss",
			Message: "udp.loss is undefined (not a number), so the condition cannot pass"}},
		{"tcp-1.gbps < 1", with("tcp-1.gbps", math.Inf(1)), Result{Violated: true, Values: map[string]Figure{}, Undefined: "tcp-1.gbps",
			Message: "tcp-1.gbps is undefined (infinite), so the condition cannot pass"}},
		{"rtt.p99 > -icmp.p50", with("icmp.p50", math.Inf(-1)), Result{Violated: true, Values: map[string]Figure{"rtt.p99": {Value: 2500, Unit: Micros}}, Undefined: "icmp.p50",
			Message: "rtt.p99 = 2.5 ms; icmp.p50 is undefined (infinite), so the condition cannot pass"}},
		{"rtt.p99 / (icmp.p50 - icmp.p50) > 1", measured, Result{Violated: true, Values: map[string]Figure{"rtt.p99": {Value: 2500, Unit: Micros}, "icmp.p50": {Value: 180, Unit: Micros}},
			Undefined: "rtt.p99 / (icmp.p50 - icmp.p50)", Message: "rtt.p99 = 2.5 ms; icmp.p50 = 180 µs; rtt.p99 / (icmp.p50 - icmp.p50) is undefined (division by zero), so the condition cannot pass"}},
		{"rtt.p99 * 1e300 * 1e300 > 1ms", measured, Result{Violated: true, Values: map[string]Figure{"rtt.p99": {Value: 2500, Unit: Micros}},
			Undefined: "rtt.p99 * 1e+300 * 1e+300", Message: "rtt.p99 = 2.5 ms; rtt.p99 * 1e+300 * 1e+300 is undefined (overflow), so the condition cannot pass"}},
		{"-(udp.loss / udp.loss) != 0", measured, Result{Violated: true, Values: loss0, Undefined: "udp.loss / udp.loss",
			Message: "udp.loss = 0 %; udp.loss / udp.loss is undefined (0/0), so the condition cannot pass"}},
	} {
		t.Run(c.cond, func(t *testing.T) {
			cond, err := Parse(c.cond)
			if err != nil {
				t.Fatal(err)
			}
			got := cond.Evaluate(c.figs)
			c.want.Condition = c.cond
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if _, err := json.Marshal(got); err != nil {
				t.Errorf("the result does not encode: %v", err)
			}
		})
	}
}

// The message names the smallest step without a finite value, as it reads in the condition.
func TestUndefinedNamesTheStep(t *testing.T) {
	for _, c := range []struct{ cond, want string }{
		{"rtt.p99 / (icmp.p50 - icmp.p50) > 1", "rtt.p99 / (icmp.p50 - icmp.p50)"},
		{"(udp.loss + 0) / udp.loss > 1", "(udp.loss + 0) / udp.loss"},
		{"1 + udp.loss / udp.loss * 2 > 1", "udp.loss / udp.loss"},
	} {
		cond, err := Parse(c.cond)
		if err != nil {
			t.Fatal(err)
		}
		if got := cond.Evaluate(measured).Undefined; got != c.want {
			t.Errorf("%s: undefined %q, want %q", c.cond, got, c.want)
		}
	}
}

// Before a run, a step of literal numbers alone without a finite value is refused; one that
// depends on figures is not (its value is known only after measuring).
func TestCheckRefusesUndefinedLiterals(t *testing.T) {
	for _, c := range []struct {
		cond string
		want string // "" when Check accepts it
	}{
		{"rtt.p99 > 1ms / 0", `"rtt.p99 > 1ms / 0": 1ms / 0 is undefined (division by zero)`},
		{"rtt.p99 > 0 / 0 * 1ms", `"rtt.p99 > 0 / 0 * 1ms": 0 / 0 is undefined (0/0)`},
		{"rtt.p99 > 1e305s", `"rtt.p99 > 1e305s": 1e+305s is undefined (overflow)`},
		{"rtt.p99 / (icmp.p50 - icmp.p50) > 1", ""},
		{"udp.loss / udp.loss > 1", ""},
	} {
		t.Run(c.cond, func(t *testing.T) {
			cond, err := Parse(c.cond)
			if err != nil {
				t.Fatal(err)
			}
			err = cond.Check(planned)
			switch {
			case c.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case c.want != "" && (!errors.Is(err, ErrUndefined) || err.Error() != c.want):
				t.Errorf("got %v, want %s", err, c.want)
			}
		})
	}
}

func TestExprString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"(a + b) * 2 / c - -d", "(a + b) * 2 / c - -d"},
		{"a - (b - c)", "a - (b - c)"},
		{"a - b - c", "a - b - c"},
		{"a * (b / c)", "a * (b / c)"},
		{"-(a + b)", "-(a + b)"},
		{"--a", "--a"},
		{".5ms", "0.5ms"},
		{"1.5e3us", "1500us"},
		{"((x))", "x"},
	} {
		cond, err := Parse(c.in + " > 0")
		if err != nil {
			t.Fatal(err)
		}
		if got := cond.Left.String(); got != c.want {
			t.Errorf("%s: got %q, want %q", c.in, got, c.want)
		}
	}
}

// Whatever the condition and the figures' values (NaN and infinities included), parsing and
// evaluating never panic; a condition prints back as one that parses to the same tree; a
// result always encodes as JSON, and a condition reading a figure without a finite value fails.
func FuzzParseEvaluate(f *testing.F) {
	nan, inf := math.Float64bits(math.NaN()), math.Float64bits(math.Inf(1))
	for _, s := range []struct {
		cond string
		a, b uint64
	}{
		{"rtt.p99 > 2ms", math.Float64bits(2500), 0},
		{"(a + b) * 2 / c - -d >= 1e-3s", 0, nan},
		{"a.b-c:d_e != .5%", inf, 0},
		{"((((1)))) < 2", 0, 0},
		{"udp.loss / udp.loss > 1", 0, 0},
		{"udp.loss / udp.loss <= 1", 0, 0},
		{"udp.loss > 1", nan, nan},
		{"a * 1e300 * 1e300 > b", math.Float64bits(1e10), 1},
		{"a / (b - b) < 1", 1, math.Float64bits(-math.MaxFloat64)},
		{strings.Repeat("(", 200) + "a" + strings.Repeat(")", 200) + " > 1", nan, 0},
		{"(0B*A0)  *A00!=0", 52, nan},
	} {
		f.Add(s.cond, s.a, s.b)
	}
	f.Fuzz(func(t *testing.T, s string, a, b uint64) {
		c, err := Parse(s)
		if err != nil {
			var se *SyntaxError
			if !errors.As(err, &se) || se.Column < 1 {
				t.Fatalf("%q: %v is not a syntax error with a column", s, err)
			}
			return
		}
		checkRoundTrip(t, c)
		figs, undefined := Figures{}, false
		for i, n := range c.Figures() {
			v := math.Float64frombits(a)
			if i%2 == 1 {
				v = math.Float64frombits(b)
			}
			figs[n] = Figure{Value: v, Unit: Micros}
			undefined = undefined || math.IsNaN(v) || math.IsInf(v, 0)
		}
		r := c.Evaluate(figs)
		if _, err := json.Marshal(r); err != nil {
			t.Fatalf("%q: the result does not encode: %v", s, err)
		}
		if undefined && !r.Violated {
			t.Fatalf("%q on %v passed: %+v", s, figs, r)
		}
		if r.Undefined != "" && (!r.Violated || !strings.Contains(r.Message, " is undefined (")) {
			t.Fatalf("%q: undefined without saying so: %+v", s, r)
		}
	})
}

// checkRoundTrip parses c's sides as String writes them and wants the same trees back.
func checkRoundTrip(t *testing.T, c *Condition) {
	t.Helper()
	text := c.Left.String() + " " + c.Op + " " + c.Right.String()
	again, err := Parse(text)
	if err != nil && len([]rune(text)) <= MaxLength {
		t.Fatalf("%q printed as %q, which does not parse: %v", c.Text, text, err)
	}
	if err == nil {
		again.Text = c.Text
		if diff := cmp.Diff(c, again); diff != "" {
			t.Fatalf("%q printed as %q parses differently (-want +got):\n%s", c.Text, text, diff)
		}
	}
}
