package e2e

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The tests that run beside each other (beside) reach no lab switch through any function of this
// package, call beside first, are the only ones to run in parallel, and none of them is a
// fidelity test of hack/mutations.sh. Needs no lab.
func TestBesideTestsSwitchNothing(t *testing.T) {
	funcs := packageFuncs(t)
	fidelity := mutationTests(t)
	n := 0
	for name, fn := range funcs {
		if !strings.HasPrefix(name, "Test") {
			continue
		}
		if !callsBesideFirst(fn) {
			continue
		}
		n++
		if reach := reachable(funcs, name); reach["labScript"] {
			t.Errorf("%s runs beside other tests but reaches labScript, which switches the whole lab", name)
		}
		if fidelity[name] {
			t.Errorf("%s runs beside other tests but is a fidelity test of hack/mutations.sh: it must run alone", name)
		}
	}
	for name, fn := range funcs {
		if name == "beside" {
			continue
		}
		ast.Inspect(fn, func(x ast.Node) bool {
			if sel, ok := x.(*ast.SelectorExpr); ok && sel.Sel.Name == "Parallel" {
				t.Errorf("%s calls Parallel itself: call beside(t), whose rules TestBesideTestsSwitchNothing checks", name)
			}
			return true
		})
	}
	if n == 0 {
		t.Fatal("no test calls beside: the check found nothing to check")
	}
	t.Logf("%d tests run beside each other", n)
}

// packageFuncs parses the package's files: every top-level function by name.
func packageFuncs(t *testing.T) map[string]*ast.FuncDecl {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("the package's files: %v", err)
	}
	funcs := map[string]*ast.FuncDecl{}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil {
				funcs[fn.Name.Name] = fn
			}
		}
	}
	return funcs
}

// callsBesideFirst: the test's first statement is beside(t).
func callsBesideFirst(fn *ast.FuncDecl) bool {
	if fn.Body == nil || len(fn.Body.List) == 0 {
		return false
	}
	expr, ok := fn.Body.List[0].(*ast.ExprStmt)
	if !ok {
		return false
	}
	call, ok := expr.X.(*ast.CallExpr)
	if !ok {
		return false
	}
	id, ok := call.Fun.(*ast.Ident)
	return ok && id.Name == "beside"
}

// reachable is every package function that from can reach: called, or passed on as a value.
func reachable(funcs map[string]*ast.FuncDecl, from string) map[string]bool {
	seen := map[string]bool{from: true}
	queue := []string{from}
	for len(queue) > 0 {
		fn := funcs[queue[0]]
		queue = queue[1:]
		ast.Inspect(fn, func(x ast.Node) bool {
			if id, ok := x.(*ast.Ident); ok && funcs[id.Name] != nil && !seen[id.Name] {
				seen[id.Name] = true
				queue = append(queue, id.Name)
			}
			return true
		})
	}
	return seen
}

// mutationTests names the end-to-end tests that hack/mutations.sh runs with a fault.
func mutationTests(t *testing.T) map[string]bool {
	t.Helper()
	b, err := os.ReadFile("../../hack/mutations.sh")
	if err != nil {
		t.Fatal(err)
	}
	rows := regexp.MustCompile(`(?m)^  "[a-z0-9-]+\|\./test/e2e\|(Test\w+)[/|]`).FindAllStringSubmatch(string(b), -1)
	if len(rows) == 0 {
		t.Fatal("hack/mutations.sh lists no end-to-end test")
	}
	names := map[string]bool{}
	for _, r := range rows {
		names[r[1]] = true
	}
	return names
}
