// Package gate reads and checks --fail-if conditions: comparisons over a report's figures, with
// units, such as `rtt.p99 > 2ms` or `cross-zone.http.p50 > 1.5 * same-zone.http.p50`.
//
// Grammar (docs/gates.md):
//
//	condition := expr op expr            op: > >= < <= == !=
//	expr      := term { ("+" | "-") term }
//	term      := factor { ("*" | "/") factor }
//	factor    := number [unit] | figure | "(" expr ")" | "-" factor
//	figure    := letter { letter | digit | "." | "-" | "_" | ":" }
//
// A "-" inside a name belongs to the name (tcp-1.gbps): subtraction needs spaces around it.
package gate

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// ErrSyntax is wrapped by every parse error.
var ErrSyntax = errors.New("syntax error")

// SyntaxError says where (1-based column, in characters) a condition stops making sense.
type SyntaxError struct {
	Column int
	Msg    string
}

func (e *SyntaxError) Error() string { return fmt.Sprintf("column %d: %s", e.Column, e.Msg) }

// Unwrap lets errors.Is(err, ErrSyntax) hold.
func (e *SyntaxError) Unwrap() error { return ErrSyntax }

// Condition is one parsed --fail-if.
type Condition struct {
	Text        string
	Op          string
	Left, Right Expr
}

// Expr is a node of an expression: a number with its unit, a figure, a negation or an operation.
type Expr struct {
	Op          byte // 0 for a leaf, '+', '-', '*', '/', or 'n' (negation)
	Number      float64
	Unit        string // the literal's unit as written ("" for a plain number)
	Figure      string
	Left, Right *Expr
}

// String writes the expression as a condition would, with the parentheses its order needs:
// how a message names a part of a condition.
func (e *Expr) String() string {
	switch {
	case e.Figure != "":
		return e.Figure
	case e.Op == 0:
		return strconv.FormatFloat(e.Number, 'g', -1, 64) + e.Unit
	case e.Op == 'n':
		return "-" + e.Left.operand(precedence('n'))
	}
	p := precedence(e.Op)
	// Operators bind to the left: a right operand of the same precedence keeps its parentheses.
	return e.Left.operand(p) + " " + string(e.Op) + " " + e.Right.operand(p+1)
}

// operand writes e in parentheses when it binds less tightly than least.
func (e *Expr) operand(least int) string {
	if e.Op != 0 && e.Figure == "" && precedence(e.Op) < least {
		return "(" + e.String() + ")"
	}
	return e.String()
}

func precedence(op byte) int {
	switch op {
	case '+', '-':
		return 1
	case '*', '/':
		return 2
	}
	return 3 // a negation, a number or a figure
}

// MaxLength bounds a condition (a flag is not a program).
const MaxLength = 512

type token struct {
	kind byte // 'n' number, 'f' figure, 'o' operator, 'c' comparison, '(' ')', 0 end
	text string
	num  float64
	unit string
	col  int
}

// Parse reads one condition.
func Parse(s string) (*Condition, error) {
	if utf8.RuneCountInString(s) > MaxLength {
		return nil, &SyntaxError{MaxLength + 1, fmt.Sprintf("longer than %d characters", MaxLength)}
	}
	toks, err := lex(s)
	if err != nil {
		return nil, err
	}
	p := &parser{toks: toks}
	left, err := p.expr()
	if err != nil {
		return nil, err
	}
	t := p.next()
	if t.kind != 'c' {
		return nil, p.unexpected(t, "a comparison (> >= < <= == !=)")
	}
	right, err := p.expr()
	if err != nil {
		return nil, err
	}
	if end := p.next(); end.kind != 0 {
		return nil, p.unexpected(end, "the end of the condition")
	}
	return &Condition{Text: strings.TrimSpace(s), Op: t.text, Left: *left, Right: *right}, nil
}

type parser struct {
	toks []token
	pos  int
}

func (p *parser) peek() token { return p.toks[p.pos] }

func (p *parser) next() token {
	t := p.toks[p.pos]
	if t.kind != 0 {
		p.pos++
	}
	return t
}

func (p *parser) unexpected(t token, want string) error {
	if t.kind == 0 {
		return &SyntaxError{t.col, "the condition ends here: want " + want}
	}
	return &SyntaxError{t.col, fmt.Sprintf("unexpected %q: want %s", t.text, want)}
}

// expr reads terms joined by + and -; nesting is bounded by MaxLength (at most 256 parentheses).
func (p *parser) expr() (*Expr, error) {
	left, err := p.term()
	for err == nil && p.peek().kind == 'o' && (p.peek().text == "+" || p.peek().text == "-") {
		op := p.next().text[0]
		var right *Expr
		if right, err = p.term(); err == nil {
			left = &Expr{Op: op, Left: left, Right: right}
		}
	}
	return left, err
}

func (p *parser) term() (*Expr, error) {
	left, err := p.factor()
	for err == nil && p.peek().kind == 'o' && (p.peek().text == "*" || p.peek().text == "/") {
		op := p.next().text[0]
		var right *Expr
		if right, err = p.factor(); err == nil {
			left = &Expr{Op: op, Left: left, Right: right}
		}
	}
	return left, err
}

func (p *parser) factor() (*Expr, error) {
	t := p.next()
	switch {
	case t.kind == 'n':
		return &Expr{Number: t.num, Unit: t.unit}, nil
	case t.kind == 'f':
		return &Expr{Figure: t.text}, nil
	case t.kind == 'o' && t.text == "-":
		e, err := p.factor()
		if err != nil {
			return nil, err
		}
		return &Expr{Op: 'n', Left: e}, nil
	case t.kind == '(':
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		if c := p.next(); c.kind != ')' {
			return nil, p.unexpected(c, `")"`)
		}
		return e, nil
	}
	return nil, p.unexpected(t, "a number, a figure name or (")
}

// lex splits s into tokens; columns count characters from 1.
func lex(s string) ([]token, error) {
	rs := []rune(s)
	var out []token
	for i := 0; i < len(rs); {
		r, col := rs[i], i+1
		switch {
		case unicode.IsSpace(r):
			i++
		case unicode.IsDigit(r) || (r == '.' && i+1 < len(rs) && unicode.IsDigit(rs[i+1])):
			t, n, err := lexNumber(rs[i:], col)
			if err != nil {
				return nil, err
			}
			out, i = append(out, t), i+n
		case unicode.IsLetter(r):
			n := 1
			for i+n < len(rs) && isNameRune(rs[i+n]) {
				n++
			}
			out, i = append(out, token{kind: 'f', text: string(rs[i : i+n]), col: col}), i+n
		case strings.ContainsRune("+-*/", r):
			out, i = append(out, token{kind: 'o', text: string(r), col: col}), i+1
		case r == '(' || r == ')':
			out, i = append(out, token{kind: byte(r), text: string(r), col: col}), i+1
		case strings.ContainsRune("<>=!", r):
			op := string(r)
			if i+1 < len(rs) && rs[i+1] == '=' {
				op += "="
			}
			if op == "=" || op == "!" {
				return nil, &SyntaxError{col, fmt.Sprintf("%q is not a comparison: want > >= < <= == !=", op)}
			}
			out, i = append(out, token{kind: 'c', text: op, col: col}), i+len(op)
		default:
			return nil, &SyntaxError{col, fmt.Sprintf("unexpected character %q", r)}
		}
	}
	return append(out, token{col: len(rs) + 1}), nil
}

func isNameRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune(".-_:", r)
}

// lexNumber reads a number and the unit written right after it (2ms, 1.5e3, 5Gbps, 1%).
func lexNumber(rs []rune, col int) (token, int, error) {
	n := 0
	for n < len(rs) && (unicode.IsDigit(rs[n]) || rs[n] == '.' ||
		((rs[n] == 'e' || rs[n] == 'E') && n+1 < len(rs) && (unicode.IsDigit(rs[n+1]) || rs[n+1] == '-' || rs[n+1] == '+')) ||
		((rs[n] == '-' || rs[n] == '+') && n > 0 && (rs[n-1] == 'e' || rs[n-1] == 'E'))) {
		n++
	}
	text := string(rs[:n])
	v, err := strconv.ParseFloat(text, 64)
	if err != nil {
		return token{}, 0, &SyntaxError{col, fmt.Sprintf("%q is not a number", text)}
	}
	u := n
	for u < len(rs) && (unicode.IsLetter(rs[u]) || rs[u] == '%') {
		u++
	}
	unit := string(rs[n:u])
	if unit != "" {
		if _, ok := literalUnits[unit]; !ok {
			return token{}, 0, &SyntaxError{col + n, fmt.Sprintf("unknown unit %q: want %s", unit, unitList())}
		}
	}
	return token{kind: 'n', text: string(rs[:u]), num: v, unit: unit, col: col}, u, nil
}
