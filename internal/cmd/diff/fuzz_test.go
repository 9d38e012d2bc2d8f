package diff

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Whatever file diff is given, it never panics: it compares (writing valid JSON) or refuses
// with one line, against a real report and against itself.
func FuzzDiff(f *testing.F) {
	good, err := os.ReadFile("../../render/testdata/path-pod-mode-rtt-tcp.json")
	if err != nil {
		f.Fatal(err)
	}
	const head = `{"apiVersion":"netbench.kubectl.dev/v1alpha1",`
	for _, s := range [][]byte{good, good[:len(good)/3], []byte(quotedReport),
		[]byte(head + `"kind":"PathReport","probes":[{"name":"h","kind":"http","http":{"latency":{"count":9223372036854775807,"p50Micros":1,"histogram":[{"endMicros":2,"count":9223372036854775807}]}}}]}`),
		[]byte(head + `"kind":"LadderReport","rungs":[{"name":"a","figures":{"x.p50":{"unit":"µs","median":1}}}],"figures":["x.p50"]}`),
		[]byte(head + `"kind":"DNSReport","result":{"names":[{"name":"a","variants":[{"label":"as configured","warm":{"count":-1}}]}]}}`),
		[]byte(head + `"kind":"Pod"}`), []byte(`{"apiVersion":"v1","kind":"PathReport"}`),
		[]byte(strings.Repeat(`{"a":`, 11000)), []byte("kind: PathReport\napiVersion: netbench.kubectl.dev/v1alpha1\nprobes: [.nan]\n"),
	} {
		f.Add(s)
	}
	dir := f.TempDir()
	old := filepath.Join(dir, "old.json")
	if err := os.WriteFile(old, good, 0o600); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		file := filepath.Join(t.TempDir(), "new.json")
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		for _, pair := range [][2]string{{old, file}, {file, file}} {
			var out bytes.Buffer
			o := &DiffOptions{IOStreams: genericiooptions.IOStreams{Out: &out, ErrOut: io.Discard},
				OldFile: pair[0], NewFile: pair[1], Tolerance: 10, FailIfRegressed: -1, Output: "json"}
			err := o.Run()
			switch {
			case errors.Is(err, report.ErrInternal) || err != nil && strings.ContainsAny(err.Error(), "\n\r"):
				t.Fatalf("%v", err)
			case err == nil && !json.Valid(out.Bytes()):
				t.Fatalf("not JSON: %s", out.Bytes())
			}
		}
	})
}
