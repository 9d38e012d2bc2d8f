// Command sizecheck enforces the repository's size rule: no non-test Go file over 400 lines and
// no non-test function or method over 80 lines (from its func line to its closing brace), unless
// the exception gives a one-line reason at its top:
//
//	// size: <reason>
//
// For a file the marker is a comment line before its package clause; for a function it is a
// line of its doc comment. It walks the Go files under the directory given (default "."),
// skipping _test.go files and testdata, vendor, .cache and hidden directories, prints one line
// per violation and exits 1 if there is any.
//
//	go run ./hack/sizecheck [dir]
package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

const (
	maxFileLines = 400
	maxFuncLines = 80
	marker       = "size:"
)

func main() {
	root := "."
	if len(os.Args) > 2 {
		fmt.Fprintln(os.Stderr, "usage: sizecheck [dir]")
		os.Exit(2)
	}
	if len(os.Args) == 2 {
		root = os.Args[1]
	}
	violations, err := check(root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "sizecheck:", err)
		os.Exit(2)
	}
	for _, v := range violations {
		fmt.Println(v)
	}
	if len(violations) > 0 {
		os.Exit(1)
	}
}

// check returns one line per violation in the Go files under root, in the walk's (lexical) order.
func check(root string) ([]string, error) {
	var violations []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		v, err := checkFile(path, filepath.ToSlash(rel))
		violations = append(violations, v...)
		return err
	})
	return violations, err
}

func skipDir(name string) bool {
	return name == "testdata" || name == "vendor" || strings.HasPrefix(name, ".")
}

// checkFile returns the violations in one file, naming it name.
func checkFile(path, name string) ([]string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
	if err != nil {
		return nil, err
	}
	var violations []string
	if n := countLines(src); n > maxFileLines && !fileExempt(f) {
		violations = append(violations, fmt.Sprintf("%s: %d lines (limit %d)", name, n, maxFileLines))
	}
	for _, decl := range f.Decls {
		fd, ok := decl.(*ast.FuncDecl)
		if !ok || fd.Body == nil {
			continue
		}
		start := fset.Position(fd.Pos()).Line // the func keyword, not the doc comment
		n := fset.Position(fd.End()).Line - start + 1
		if n > maxFuncLines && !hasMarker(fd.Doc) {
			violations = append(violations,
				fmt.Sprintf("%s:%d: func %s is %d lines (limit %d)", name, start, funcName(fd), n, maxFuncLines))
		}
	}
	return violations, nil
}

// countLines counts lines as wc -l does, plus a last line without a newline.
func countLines(src []byte) int {
	n := bytes.Count(src, []byte("\n"))
	if len(src) > 0 && src[len(src)-1] != '\n' {
		n++
	}
	return n
}

// fileExempt reports whether a comment before the package clause carries the marker.
func fileExempt(f *ast.File) bool {
	for _, cg := range f.Comments {
		if cg.Pos() >= f.Package {
			break
		}
		if hasMarker(cg) {
			return true
		}
	}
	return false
}

// hasMarker reports whether a line comment in cg is "// size: <reason>" with a reason.
func hasMarker(cg *ast.CommentGroup) bool {
	if cg == nil {
		return false
	}
	for _, c := range cg.List {
		text, ok := strings.CutPrefix(c.Text, "//")
		if !ok {
			continue
		}
		reason, ok := strings.CutPrefix(strings.TrimSpace(text), marker)
		if ok && strings.TrimSpace(reason) != "" {
			return true
		}
	}
	return false
}

// funcName is F for a function and T.M for a method (pointer receivers shown as (*T).M).
func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	t := fd.Recv.List[0].Type
	star := false
	if s, ok := t.(*ast.StarExpr); ok {
		star, t = true, s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr: // generic receiver T[P]
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	recv := "?"
	if id, ok := t.(*ast.Ident); ok {
		recv = id.Name
	}
	if star {
		return fmt.Sprintf("(*%s).%s", recv, fd.Name.Name)
	}
	return recv + "." + fd.Name.Name
}
