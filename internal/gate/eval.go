package gate

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// Units of figures, as reports write them.
const (
	Micros  = v1alpha1.UnitMicros
	Gbps    = v1alpha1.UnitGbps
	ReqPerS = v1alpha1.UnitReqPerS
	Count   = v1alpha1.UnitCount
	Percent = v1alpha1.UnitPercent
	Bytes   = v1alpha1.UnitBytes
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
	"rps": {ReqPerS, 1}, "qps": {ReqPerS, 1}, "tps": {ReqPerS, 1}, "cps": {ReqPerS, 1},
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

// Figure is one measured value in its unit: v1alpha1.CheckValue, a type of the reports' schema.
type Figure = v1alpha1.CheckValue

// Figures maps figure names to values.
type Figures map[string]Figure

// ErrUnknownFigure is wrapped when a condition names a figure the run does not measure.
var ErrUnknownFigure = errors.New("unknown figure")

// ErrUnits is wrapped when a condition mixes quantities that cannot be compared.
var ErrUnits = errors.New("units do not match")

// ErrUndefined is wrapped when a figure, or a step of a condition's arithmetic, has no finite
// value: a figure that is NaN or infinite, 0/0, a division by zero, an overflow.
var ErrUndefined = errors.New("undefined")

// UndefinedError names the part of a condition without a finite value, and why.
type UndefinedError struct {
	// Expr is the part as it reads in the condition, e.g. "udp.loss / udp.loss".
	Expr string
	// Why is "0/0", "division by zero", "overflow", "not a number" or "infinite".
	Why string
}

func (e *UndefinedError) Error() string { return e.Expr + " is undefined (" + e.Why + ")" }

// Unwrap lets errors.Is(err, ErrUndefined) hold.
func (e *UndefinedError) Unwrap() error { return ErrUndefined }

// Check verifies, before anything is measured, that every figure the condition names will exist
// (planned maps each planned figure to its unit) and that its units agree.
func (c *Condition) Check(planned map[string]string) error {
	values := Figures{}
	for name, unit := range planned {
		values[name] = Figure{Value: 1, Unit: unit}
	}
	for _, n := range c.Figures() {
		if _, ok := planned[n]; !ok {
			return fmt.Errorf("%q: %w %q (this run measures: %s)", c.Text, ErrUnknownFigure, n, suggest(n, planned))
		}
	}
	_, _, err := c.sides(values, false)
	if errors.Is(err, ErrUndefined) {
		return fmt.Errorf("%q: %w", c.Text, err)
	}
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

// quantity is a value with its dimension's unit ("" for a plain number); measured when it
// depends on a figure.
type quantity struct {
	v        float64
	unit     string
	measured bool
}

// sides evaluates both sides. measured says whether f holds the run's figures: then any figure
// or step without a finite value is an UndefinedError; otherwise (checking units before a run)
// only a step of literal numbers alone is.
func (c *Condition) sides(f Figures, measured bool) (l, r quantity, err error) {
	ev := evaluator{f: f, measured: measured}
	if l, err = ev.eval(&c.Left); err != nil {
		return
	}
	if r, err = ev.eval(&c.Right); err != nil {
		return
	}
	if l.unit != "" && r.unit != "" && l.unit != r.unit {
		err = fmt.Errorf("%q compares a %s with a %s: %w", c.Text, dimensions[l.unit], dimensions[r.unit], ErrUnits)
	}
	return
}

// evaluator computes expressions over figures.
type evaluator struct {
	f        Figures
	measured bool
}

func (ev evaluator) eval(e *Expr) (quantity, error) {
	switch {
	case e.Figure != "":
		return ev.figure(e.Figure)
	case e.Op == 0:
		q := quantity{v: e.Number}
		if e.Unit != "" {
			u := literalUnits[e.Unit]
			q = quantity{v: e.Number * u.factor, unit: u.unit}
		}
		if !finite(q.v) {
			return q, &UndefinedError{e.String(), "overflow"}
		}
		return q, nil
	case e.Op == 'n':
		q, err := ev.eval(e.Left)
		return quantity{-q.v, q.unit, q.measured}, err
	}
	a, err := ev.eval(e.Left)
	if err != nil {
		return a, err
	}
	b, err := ev.eval(e.Right)
	if err != nil {
		return b, err
	}
	q, err := combine(e.Op, a, b)
	if err == nil && !finite(q.v) && (ev.measured || !q.measured) {
		err = &UndefinedError{e.String(), undefinedWhy(e.Op, a.v, b.v)}
	}
	return q, err
}

// figure is a figure's value; with measured figures, one that is NaN or infinite is undefined.
func (ev evaluator) figure(name string) (quantity, error) {
	v, ok := ev.f[name]
	if !ok {
		return quantity{}, fmt.Errorf("%w %q", ErrUnknownFigure, name)
	}
	q := quantity{v.Value, v.Unit, true}
	if ev.measured && !finite(v.Value) {
		why := "infinite"
		if math.IsNaN(v.Value) {
			why = "not a number"
		}
		return q, &UndefinedError{name, why}
	}
	return q, nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// undefinedWhy says why a step of finite operands has no finite result.
func undefinedWhy(op byte, a, b float64) string {
	switch {
	case op == '/' && a == 0 && b == 0:
		return "0/0"
	case op == '/' && b == 0:
		return "division by zero"
	}
	return "overflow"
}

func combine(op byte, a, b quantity) (quantity, error) {
	m := a.measured || b.measured
	switch op {
	case '+', '-':
		if a.unit != "" && b.unit != "" && a.unit != b.unit {
			return quantity{}, fmt.Errorf("cannot add a %s and a %s: %w", dimensions[a.unit], dimensions[b.unit], ErrUnits)
		}
		if op == '-' {
			b.v = -b.v
		}
		return quantity{a.v + b.v, either(a.unit, b.unit), m}, nil
	case '*':
		if a.unit == ratio || a.unit == "" {
			return quantity{a.v * b.v, either(b.unit, a.unit), m}, nil
		}
		if b.unit == ratio || b.unit == "" {
			return quantity{a.v * b.v, a.unit, m}, nil
		}
		return quantity{}, fmt.Errorf("cannot multiply a %s by a %s: %w (scale by a plain number)", dimensions[a.unit], dimensions[b.unit], ErrUnits)
	default: // '/'
		switch {
		case b.unit == "" || b.unit == ratio:
			return quantity{a.v / b.v, either(a.unit, b.unit), m}, nil
		case a.unit == b.unit:
			return quantity{a.v / b.v, ratio, m}, nil
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

// Result is a condition checked against a run's figures: v1alpha1.CheckResult, a type of the
// reports' schema.
type Result = v1alpha1.CheckResult

// Evaluate checks the condition on measured figures. A condition that cannot be evaluated
// fails: a figure it reads was not measured, or a figure or a step of its arithmetic is NaN or
// infinite (Undefined names it: a gate never passes on a number that is not one).
func (c *Condition) Evaluate(f Figures) Result {
	r := Result{Condition: c.Text, Values: map[string]Figure{}}
	for _, n := range c.Figures() {
		v, ok := f[n]
		switch {
		case !ok:
			r.Missing = append(r.Missing, n)
		case finite(v.Value):
			r.Values[n] = v
		}
	}
	if len(r.Missing) > 0 {
		r.Violated = true
		r.Message = fmt.Sprintf("%s: not measured in this run, so the condition cannot pass", strings.Join(r.Missing, ", "))
		return r
	}
	l, rt, err := c.sides(f, true)
	var ue *UndefinedError
	if errors.As(err, &ue) {
		r.Violated, r.Undefined = true, ue.Expr
		r.Message = strings.Join(append(c.valueParts(r), ue.Error()+", so the condition cannot pass"), "; ")
		return r
	}
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
	parts := c.valueParts(r)
	if c.Left.Figure == "" || (c.Right.Op != 0 || c.Right.Figure != "") {
		parts = append(parts, fmt.Sprintf("%s %s %s", Format(r.Left, r.Unit), c.Op, Format(r.Right, r.Unit)))
	}
	return strings.Join(parts, "; ")
}

// valueParts are "name = value" for each figure read that has a finite value.
func (c *Condition) valueParts(r Result) []string {
	var parts []string
	for _, n := range c.Figures() {
		if v, ok := r.Values[n]; ok {
			parts = append(parts, n+" = "+Format(v.Value, v.Unit))
		}
	}
	return parts
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
