package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// goFile is a Go source whose package clause follows header and whose functions are funcs.
func goFile(header string, funcs ...string) string {
	return header + "package p\n\n" + strings.Join(funcs, "\n")
}

// fn is a function named name whose body has body lines, so it spans body+2 lines; doc, if any,
// is its doc comment.
func fn(doc, name string, body int) string {
	var b strings.Builder
	b.WriteString(doc)
	b.WriteString("func " + name + "() {\n")
	for range body {
		b.WriteString("\t_ = 0\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// padding is n lines of comment, to make a file long without making any function long.
func padding(n int) string {
	return strings.Repeat("// padding\n", n)
}

func write(t *testing.T, dir, name, src string) {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	// Violations: a 401-line file, an 81-line function, an 81-line method.
	write(t, dir, "long.go", goFile("", padding(401-2)))
	write(t, dir, "a/longfunc.go", goFile("", fn("", "Long", 79), "type T struct{}\n",
		fn("", "(t *T) M", 79)))
	// At the limits: a 400-line file, an 80-line function.
	limit := goFile("", fn("", "Short", 78), "", padding(400-2-80-2))
	if n := countLines([]byte(limit)); n != 400 {
		t.Fatalf("limit.go is %d lines, want 400", n)
	}
	write(t, dir, "limit.go", limit)
	// Exempted with a reason: a long file, a long function (the marker in its doc comment).
	write(t, dir, "exempt.go", goFile("//go:build linux\n\n// size: one table, kept whole\n\n",
		padding(500), fn("// Big is big.\n// size: one state machine\n", "Big", 200)))
	// A marker without a reason exempts nothing, nor does one after the package clause.
	write(t, dir, "noreason.go", goFile("", fn("// size:\n", "NoReason", 90)))
	write(t, dir, "wrongplace.go", goFile("", "// size: not at the top\n", padding(401-4)))
	// Never checked: tests, testdata, vendor, hidden and .cache directories.
	long := goFile("", padding(500), fn("", "Long", 200))
	for _, name := range []string{"long_test.go", "testdata/x.go", "vendor/x/x.go", ".cache/x.go", ".hidden/x.go", "b/testdata/y.go"} {
		write(t, dir, name, long)
	}

	got, err := check(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"a/longfunc.go:3: func Long is 81 lines (limit 80)",
		"a/longfunc.go:87: func (*T).M is 81 lines (limit 80)",
		"long.go: 401 lines (limit 400)",
		"noreason.go:4: func NoReason is 92 lines (limit 80)",
		"wrongplace.go: 401 lines (limit 400)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("check:\n got %q\nwant %q", got, want)
	}
}

func TestCountLines(t *testing.T) {
	for src, want := range map[string]int{"": 0, "a": 1, "a\n": 1, "a\nb": 2, "a\nb\n": 2, "\n\n": 2} {
		if got := countLines([]byte(src)); got != want {
			t.Errorf("countLines(%q) = %d, want %d", src, got, want)
		}
	}
}
