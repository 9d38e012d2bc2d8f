package gate

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var planned = map[string]string{
	"rtt.p99": Micros, "icmp.p50": Micros, "http.p99.9": Micros, "tcp-1.gbps": Gbps,
	"dns.kubernetes.default.queries": Count, "cross-zone.http.p50": Micros, "same-zone.http.p50": Micros,
	"http-max.qps": ReqPerS, "udp.loss": Percent, "path-mtu.bytes": Bytes,
}

var measured = Figures{
	"rtt.p99": {Value: 2500, Unit: Micros}, "icmp.p50": {Value: 180, Unit: Micros}, "http.p99.9": {Value: 4200, Unit: Micros}, "tcp-1.gbps": {Value: 9.5, Unit: Gbps},
	"dns.kubernetes.default.queries": {Value: 8, Unit: Count}, "cross-zone.http.p50": {Value: 2400, Unit: Micros}, "same-zone.http.p50": {Value: 300, Unit: Micros},
	"http-max.qps": {Value: 5000, Unit: ReqPerS}, "udp.loss": {Value: 0, Unit: Percent}, "path-mtu.bytes": {Value: 1400, Unit: Bytes},
}

func TestValidConditions(t *testing.T) {
	for _, c := range []struct {
		cond     string
		violated bool
		left     float64
		right    float64
	}{
		{"rtt.p99 > 2ms", true, 2500, 2000},
		{"rtt.p99 > 2.5ms", false, 2500, 2500},
		{"rtt.p99 >= 2500us", true, 2500, 2500},
		{"rtt.p99 >= 2500µs", true, 2500, 2500},
		{"rtt.p99 > 3000000ns", false, 2500, 3000},
		{"rtt.p99 > 0.002s", true, 2500, 2000},
		{"http.p99.9 > 5ms", false, 4200, 5000},
		{"tcp-1.gbps < 5", false, 9.5, 5},
		{"tcp-1.gbps < 10Gbps", true, 9.5, 10},
		{"tcp-1.gbps < 9600Mbps", true, 9.5, 9.6},
		{"dns.kubernetes.default.queries > 2", true, 8, 2},
		{"cross-zone.http.p50 > 1.5 * same-zone.http.p50", true, 2400, 450},
		{"cross-zone.http.p50 - same-zone.http.p50 > 2ms", true, 2100, 2000},
		{"cross-zone.http.p50 / same-zone.http.p50 > 10", false, 8, 10},
		{"(cross-zone.http.p50 + same-zone.http.p50) / 2 >= 1350us", true, 1350, 1350},
		{"-icmp.p50 < -100us", true, -180, -100},
		{"http-max.qps < 1e4", true, 5000, 10000},
		{"http-max.qps < 4000qps", false, 5000, 4000},
		{"udp.loss > 1%", false, 0, 1},
		{"path-mtu.bytes < 1500B", true, 1400, 1500},
		{"path-mtu.bytes != 1500", true, 1400, 1500},
		{"path-mtu.bytes == 1400", true, 1400, 1400},
		{"  rtt.p99>2ms  ", true, 2500, 2000},
		{".5ms < icmp.p50", false, 500, 180},
		{"rtt.p99 / icmp.p50 * 100 > 1000", true, 2500.0 / 180 * 100, 1000},
	} {
		t.Run(c.cond, func(t *testing.T) {
			cond, err := Parse(c.cond)
			if err != nil {
				t.Fatal(err)
			}
			if err := cond.Check(planned); err != nil {
				t.Fatalf("Check: %v", err)
			}
			r := cond.Evaluate(measured)
			if r.Violated != c.violated || !near(r.Left, c.left) || !near(r.Right, c.right) {
				t.Errorf("got violated=%v %g vs %g (%s), want %v %g vs %g", r.Violated, r.Left, r.Right, r.Message, c.violated, c.left, c.right)
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

func TestSyntaxErrorsPointAtTheColumn(t *testing.T) {
	for _, c := range []struct {
		cond string
		col  int
		msg  string
	}{
		{"rtt.p99 > ", 11, "the condition ends here"},
		{"rtt.p99", 8, "want a comparison"},
		{"rtt.p99 = 2ms", 9, `"=" is not a comparison`},
		{"rtt.p99 > 2 ms", 13, `unexpected "ms"`},
		{"rtt.p99 > 2parsecs", 12, `unknown unit "parsecs"`},
		{"rtt.p99 > 2ms > 3ms", 15, `unexpected ">"`},
		{"rtt.p99 > (2ms", 15, `want ")"`},
		{"rtt.p99 > 2ms)", 14, `unexpected ")"`},
		{"rtt.p99 $ 2", 9, `unexpected character '$'`},
		{"1.2.3 > rtt.p99", 1, `"1.2.3" is not a number`},
		{"> 2", 1, "want a number, a figure name"},
		{"", 1, "the condition ends here"},
		{"µ > 1", 3, "the condition ends here"}, // µ is a letter: a figure named µ
		{strings.Repeat("a", MaxLength+1) + " > 1", MaxLength + 1, "longer than"},
	} {
		t.Run(c.cond, func(t *testing.T) {
			_, err := Parse(c.cond)
			var se *SyntaxError
			if !errors.As(err, &se) || !errors.Is(err, ErrSyntax) {
				if c.cond == "µ > 1" && err == nil {
					return
				}
				t.Fatalf("got %v, want a syntax error", err)
			}
			if se.Column != c.col || !strings.Contains(se.Msg, c.msg) {
				t.Errorf("got column %d %q, want column %d %q", se.Column, se.Msg, c.col, c.msg)
			}
		})
	}
}

func TestCheckBeforeMeasuring(t *testing.T) {
	for _, c := range []struct {
		cond string
		want error
		msg  string
	}{
		{"rtt.p98 > 2ms", ErrUnknownFigure, "rtt.p99"},
		{"nosuch.p50 > 2ms", ErrUnknownFigure, "this run measures"},
		{"rtt.p99 > 5Gbps", ErrUnits, "compares a time with a bit rate"},
		{"rtt.p99 + tcp-1.gbps > 1", ErrUnits, "cannot add a time and a bit rate"},
		{"rtt.p99 * icmp.p50 > 1", ErrUnits, "cannot multiply"},
		{"2 / rtt.p99 > 1", ErrUnits, "cannot divide a plain number by a time"},
		{"rtt.p99 / icmp.p50 > 2ms", ErrUnits, "compares a ratio of two figures with a time"},
	} {
		t.Run(c.cond, func(t *testing.T) {
			cond, err := Parse(c.cond)
			if err != nil {
				t.Fatal(err)
			}
			err = cond.Check(planned)
			if !errors.Is(err, c.want) || !strings.Contains(err.Error(), c.msg) {
				t.Errorf("got %v, want %v containing %q", err, c.want, c.msg)
			}
		})
	}
}

func TestMissingFigureFailsTheGate(t *testing.T) {
	cond, err := Parse("icmp.p50 > 1ms")
	if err != nil {
		t.Fatal(err)
	}
	r := cond.Evaluate(Figures{})
	if !r.Violated || !cmp.Equal(r.Missing, []string{"icmp.p50"}) || !strings.Contains(r.Message, "not measured") {
		t.Errorf("got %+v", r)
	}
}

func TestMessageNamesTheValues(t *testing.T) {
	cond, _ := Parse("cross-zone.http.p50 > 1.5 * same-zone.http.p50")
	r := cond.Evaluate(measured)
	want := "cross-zone.http.p50 = 2.4 ms; same-zone.http.p50 = 300 µs; 2.4 ms > 450 µs"
	if r.Message != want {
		t.Errorf("got %q\nwant %q", r.Message, want)
	}
	cond, _ = Parse("rtt.p99 > 2ms")
	if r := cond.Evaluate(measured); r.Message != "rtt.p99 = 2.5 ms" {
		t.Errorf("got %q", r.Message)
	}
}
