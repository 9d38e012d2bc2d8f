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

// The tests that run beside each other (beside) reach no lab switch and no reference tool through
// any function or method of this package, call beside first (and nothing else calls it), are
// the only ones to run in parallel, and none of them is a fidelity test of hack/mutations.sh.
// Needs no lab.
func TestBesideTestsSwitchNothing(t *testing.T) {
	funcs := packageFuncs(t)
	fidelity := mutationTests(t)
	n := 0
	for name, fns := range funcs {
		if !strings.HasPrefix(name, "Test") || !callsBesideFirst(fns[0]) {
			continue
		}
		n++
		for fn := range reachable(funcs, name) {
			if why := forbidden(fn, funcs[fn]); why != "" {
				t.Errorf("%s runs beside other tests but reaches %s, which %s", name, fn, why)
			}
		}
		if fidelity[name] || comparesRuns[name] {
			t.Errorf("%s runs beside other tests but measures alone (a fidelity test of hack/mutations.sh, or comparesRuns): it must run alone", name)
		}
	}
	for name, fns := range funcs {
		for _, fn := range fns {
			checkParallelCalls(t, name, fn)
		}
		if !callsSiblings(fns) {
			continue
		}
		for fn := range reachable(funcs, name) {
			if why := forbidden(fn, funcs[fn]); why != "" {
				t.Errorf("%s runs subtests at once (siblings) but reaches %s, which %s", name, fn, why)
			}
		}
	}
	for name := range fidelity {
		for fn := range reachable(funcs, name) {
			if callsSiblings(funcs[fn]) {
				t.Errorf("%s is a fidelity test of hack/mutations.sh but reaches %s, which runs subtests at once (siblings)", name, fn)
			}
		}
	}
	if n == 0 {
		t.Fatal("no test calls beside: the check found nothing to check")
	}
	t.Logf("%d tests run beside each other", n)
}

// switches are the string literals that name a lab-wide switch or a reference tool whose timing a
// test compares with the agents' (a beside test runs while others do).
var switches = []string{"lab.sh", "ping", "curl", "tcpdump", "iperf3", "conntrack", "fortio"}

// forbidden says why a function a beside test reaches may not run beside others, or "".
func forbidden(name string, fns []ast.Node) string {
	switch name {
	case "labScript":
		return "switches the whole lab"
	case "taintNodes":
		return "taints nodes every test places agents on"
	case "compareUnderSiege":
		return "compares the agents' figures with runs made before"
	}
	why := ""
	for _, fn := range fns {
		ast.Inspect(fn, func(x ast.Node) bool {
			if lit, ok := x.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				v := strings.Trim(lit.Value, "`\"")
				for _, s := range switches {
					if v == s || (s == "lab.sh" && strings.Contains(v, s)) {
						why = "runs " + s + " (a lab switch, or a reference tool that times the path)"
					}
				}
			}
			return why == ""
		})
	}
	return why
}

// checkParallelCalls fails on a call to Parallel outside beside, and on a call to beside that is
// not a test's first statement (a helper calling it would escape the check above).
func checkParallelCalls(t *testing.T, name string, fn ast.Node) {
	t.Helper()
	first := ast.Node(nil)
	if d, ok := fn.(*ast.FuncDecl); ok && strings.HasPrefix(name, "Test") && callsBesideFirst(d) {
		first = d.Body.List[0].(*ast.ExprStmt).X
	}
	ast.Inspect(fn, func(x ast.Node) bool {
		call, ok := x.(*ast.CallExpr)
		if !ok {
			return true
		}
		if sel, ok := call.Fun.(*ast.SelectorExpr); ok && sel.Sel.Name == "Parallel" && name != "beside" && name != "siblings" {
			t.Errorf("%s calls Parallel itself: call beside(t), whose rules TestBesideTestsSwitchNothing checks", name)
		}
		if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "beside" && x != first {
			t.Errorf("%s calls beside other than as a test's first statement: only a test may, first", name)
		}
		return true
	})
}

// packageFuncs parses the package's files: every top-level function, method (by its bare name)
// and function-valued variable, by name.
func packageFuncs(t *testing.T) map[string][]ast.Node {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("the package's files: %v", err)
	}
	funcs := map[string][]ast.Node{}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range file.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				funcs[d.Name.Name] = append(funcs[d.Name.Name], d)
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					if vs, ok := spec.(*ast.ValueSpec); ok {
						for i, v := range vs.Values {
							if lit, ok := v.(*ast.FuncLit); ok && i < len(vs.Names) {
								funcs[vs.Names[i].Name] = append(funcs[vs.Names[i].Name], lit)
							}
						}
					}
				}
			}
		}
	}
	return funcs
}

// callsBesideFirst: the test's first statement is beside(t).
func callsBesideFirst(n ast.Node) bool {
	fn, ok := n.(*ast.FuncDecl)
	if !ok || fn.Body == nil || len(fn.Body.List) == 0 {
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

// callsSiblings says whether a function calls siblings (for its subtests).
func callsSiblings(fns []ast.Node) bool {
	found := false
	for _, fn := range fns {
		ast.Inspect(fn, func(x ast.Node) bool {
			if call, ok := x.(*ast.CallExpr); ok {
				if id, ok := call.Fun.(*ast.Ident); ok && id.Name == "siblings" {
					found = true
				}
			}
			return !found
		})
	}
	return found
}

// reachable is every package function, method or function variable that from can reach: called,
// or passed on as a value (a method by any selector of its name: more than it reaches, never less).
func reachable(funcs map[string][]ast.Node, from string) map[string]bool {
	seen := map[string]bool{from: true}
	queue := []string{from}
	for len(queue) > 0 {
		fns := funcs[queue[0]]
		queue = queue[1:]
		for _, fn := range fns {
			ast.Inspect(fn, func(x ast.Node) bool {
				if id, ok := x.(*ast.Ident); ok && funcs[id.Name] != nil && !seen[id.Name] {
					seen[id.Name] = true
					queue = append(queue, id.Name)
				}
				return true
			})
		}
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
