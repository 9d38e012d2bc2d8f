package render

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// Any report the loader accepts renders its diff in every format, and no figure of that diff is
// a number JSON cannot hold (the encoders would write it as null and say so).
func FuzzWriteDiff(f *testing.F) {
	files, err := filepath.Glob("testdata/*.json")
	if err != nil || len(files) == 0 {
		f.Fatalf("no seed reports in testdata (%v)", err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		run, err := report.LoadRun("fuzz.json", b)
		if err != nil {
			return
		}
		d, err := report.Diff(run, run, 10)
		if err != nil {
			t.Fatal(err)
		}
		for _, format := range []string{"", "json", "yaml"} {
			var out bytes.Buffer
			if err := WriteDiff(&out, format, d); err != nil {
				t.Fatalf("-o %q: %v", format, err)
			}
			if bytes.Contains(out.Bytes(), []byte(": written as null")) {
				t.Errorf("a diff of a loaded run holds a number JSON cannot: %s", out.Bytes())
			}
		}
	})
}
