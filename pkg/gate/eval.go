package gate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// Units of figures, as reports write them.
const (
	Micros  = "µs"
	Gbps    = "Gbit/s"
	ReqPerS = "req/s"
	Count   = "count"
	Percent = "%"
	Bytes   = "bytes"
)

// dimension of each figure unit: what it may be compared or added with.
var dimensions = map[string]string{ratio: "ratio of two figures", Micros: "time", Gbps: "bit rate", ReqPerS: "request rate", Count: "count", Percent: "percentage", Bytes: "size"}

// literalUnits are the units a number may carry, with their factor to the figure unit.
var literalUnits = map[string]struct {
	unit   string
	factor float64
}{
	"ns": {Micros, 1e-3}, "us": {Micros, 1}, "µs": {Micros, 1}, "ms": {Micros, 1e3}, "s": {Micros, 1e6},
	"bps": {Gbps, 1e-9}, "kbps": {Gbps, 1e-6}, "Mbps": {Gbps, 1e-3}, "Gbps": {Gbps, 1},
	"rps": {ReqPerS, 1}, "qps": {ReqPerS, 1},
	"%": {Percent, 1},
	"B": {Bytes, 1},
}

func unitList() string {
	var u []string
	for k := range literalUnits {
		u = append(u, k)
	}
	sort.Strings(u)
	return strings.Join(u, " ")
}

// Figure is one measured value in its unit.
type Figure struct {
	Value float64
	Unit  string
}

// Figures maps figure names to values.
type Figures map[string]Figure

// ErrUnknownFigure is wrapped when a condition names a figure the run does not measure.
var ErrUnknownFigure = errors.New("unknown figure")

// ErrUnits is wrapped when a condition mixes quantities that cannot be compared.
var ErrUnits = errors.New("units do not match")

// Check verifies, before anything is measured, that every figure the condition names will exist
// (planned maps each planned figure to its unit) and that its units agree.
func (c *Condition) Check(planned map[string]string) error {
	values := Figures{}
	for name, unit := range planned {
		values[name] = Figure{1, unit}
	}
	for _, n := range c.Figures() {
		if _, ok := planned[n]; !ok {
			return fmt.Errorf("%q: %w %q (this run measures: %s)", c.Text, ErrUnknownFigure, n, suggest(n, planned))
		}
	}
	_, _, err := c.sides(values)
	return err
}

// suggest lists the planned figures sharing n's first part, or all of them when none does.
func suggest(n string, planned map[string]string) string {
	var all, near []string
	head, _, _ := strings.Cut(n, ".")
	for k := range planned {
		all = append(all, k)
		if strings.HasPrefix(k, head+".") {
			near = append(near, k)
		}
	}
	if len(near) == 0 {
		near = all
	}
	sort.Strings(near)
	if len(near) > 24 {
		near = append(near[:24], "…")
	}
	return strings.Join(near, ", ")
}

// Figures lists the figure names the condition reads, in order, once each.
func (c *Condition) Figures() []string {
	var out []string
	var walk func(e *Expr)
	walk = func(e *Expr) {
		if e == nil {
			return
		}
		if e.Figure != "" && !slices.Contains(out, e.Figure) {
			out = append(out, e.Figure)
		}
		walk(e.Left)
		walk(e.Right)
	}
	walk(&c.Left)
	walk(&c.Right)
	return out
}

// ratio is the unit of a figure divided by a figure of the same unit.
const ratio = "ratio"

// quantity is a value with its dimension's unit ("" for a plain number).
type quantity struct {
	v    float64
	unit string
}

func (c *Condition) sides(f Figures) (l, r quantity, err error) {
	if l, err = eval(&c.Left, f); err != nil {
		return
	}
	if r, err = eval(&c.Right, f); err != nil {
		return
	}
	if l.unit != "" && r.unit != "" && l.unit != r.unit {
		err = fmt.Errorf("%q compares a %s with a %s: %w", c.Text, dimensions[l.unit], dimensions[r.unit], ErrUnits)
	}
	return
}

func eval(e *Expr, f Figures) (quantity, error) {
	switch {
	case e.Figure != "":
		v, ok := f[e.Figure]
		if !ok {
			return quantity{}, fmt.Errorf("%w %q", ErrUnknownFigure, e.Figure)
		}
		return quantity{v.Value, v.Unit}, nil
	case e.Op == 0:
		u := literalUnits[e.Unit]
		if e.Unit == "" {
			return quantity{e.Number, ""}, nil
		}
		return quantity{e.Number * u.factor, u.unit}, nil
	case e.Op == 'n':
		q, err := eval(e.Left, f)
		return quantity{-q.v, q.unit}, err
	}
	a, err := eval(e.Left, f)
	if err != nil {
		return a, err
	}
	b, err := eval(e.Right, f)
	if err != nil {
		return b, err
	}
	return combine(e.Op, a, b)
}

func combine(op byte, a, b quantity) (quantity, error) {
	switch op {
	case '+', '-':
		if a.unit != "" && b.unit != "" && a.unit != b.unit {
			return quantity{}, fmt.Errorf("cannot add a %s and a %s: %w", dimensions[a.unit], dimensions[b.unit], ErrUnits)
		}
		if op == '-' {
			b.v = -b.v
		}
		return quantity{a.v + b.v, either(a.unit, b.unit)}, nil
	case '*':
		if a.unit == ratio || a.unit == "" {
			return quantity{a.v * b.v, either(b.unit, a.unit)}, nil
		}
		if b.unit == ratio || b.unit == "" {
			return quantity{a.v * b.v, a.unit}, nil
		}
		return quantity{}, fmt.Errorf("cannot multiply a %s by a %s: %w (scale by a plain number)", dimensions[a.unit], dimensions[b.unit], ErrUnits)
	default: // '/'
		switch {
		case b.unit == "" || b.unit == ratio:
			return quantity{a.v / b.v, either(a.unit, b.unit)}, nil
		case a.unit == b.unit:
			return quantity{a.v / b.v, ratio}, nil
		}
		return quantity{}, fmt.Errorf("cannot divide a %s by a %s: %w", dimensionOf(a.unit), dimensions[b.unit], ErrUnits)
	}
}

// either is a's unit, or b's when a is a plain number.
func either(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func dimensionOf(unit string) string {
	if unit == "" {
		return "plain number"
	}
	return dimensions[unit]
}

// Result is a condition checked against a run's figures.
type Result struct {
	Condition string `json:"condition"`
	// Violated is true when the condition held (the run fails), or could not be evaluated
	// because a figure it reads was not measured (Missing).
	Violated bool `json:"violated"`
	// Left and Right are the two sides' values in Unit ("" for plain numbers).
	Left    float64           `json:"left"`
	Right   float64           `json:"right"`
	Unit    string            `json:"unit,omitempty"`
	Values  map[string]Figure `json:"values,omitempty"`
	Missing []string          `json:"missing,omitempty"`
	Message string            `json:"message"`
}

// Evaluate checks the condition on measured figures.
func (c *Condition) Evaluate(f Figures) Result {
	r := Result{Condition: c.Text, Values: map[string]Figure{}}
	for _, n := range c.Figures() {
		if v, ok := f[n]; ok {
			r.Values[n] = v
		} else {
			r.Missing = append(r.Missing, n)
		}
	}
	if len(r.Missing) > 0 {
		r.Violated = true
		r.Message = fmt.Sprintf("%s: not measured in this run, so the condition cannot pass", strings.Join(r.Missing, ", "))
		return r
	}
	l, rt, err := c.sides(f)
	if err != nil {
		r.Violated, r.Message = true, err.Error()
		return r
	}
	r.Left, r.Right, r.Unit = l.v, rt.v, either(l.unit, rt.unit)
	r.Violated = compare(c.Op, l.v, rt.v)
	r.Message = c.describe(r)
	return r
}

func compare(op string, a, b float64) bool {
	switch op {
	case ">":
		return a > b
	case ">=":
		return a >= b
	case "<":
		return a < b
	case "<=":
		return a <= b
	case "==":
		return a == b
	}
	return a != b
}

// describe says what was measured: each figure's value, and both sides when either is computed.
func (c *Condition) describe(r Result) string {
	var parts []string
	for _, n := range c.Figures() {
		parts = append(parts, n+" = "+Format(r.Values[n].Value, r.Values[n].Unit))
	}
	if c.Left.Figure == "" || (c.Right.Op != 0 || c.Right.Figure != "") {
		parts = append(parts, fmt.Sprintf("%s %s %s", Format(r.Left, r.Unit), c.Op, Format(r.Right, r.Unit)))
	}
	return strings.Join(parts, "; ")
}

// Format writes a value with its unit, times scaled to a readable unit.
func Format(v float64, unit string) string {
	if unit == Micros {
		switch a := math.Abs(v); {
		case a >= 1e6:
			return fmt.Sprintf("%.3g s", v/1e6)
		case a >= 1e3:
			return fmt.Sprintf("%.3g ms", v/1e3)
		}
		return fmt.Sprintf("%.4g µs", v)
	}
	if unit == "" || unit == Count || unit == ratio {
		return fmt.Sprintf("%.4g", v)
	}
	if unit == Percent {
		return fmt.Sprintf("%.4g %%", v)
	}
	return fmt.Sprintf("%.4g %s", v, unit)
}
