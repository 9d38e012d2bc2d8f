package render

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ from the current output")

// The human reports, rendered from reports that real runs on the lab produced (testdata/*.json),
// must match testdata/*.golden byte for byte. After an intended change to the layout, review the
// difference and run: go test ./internal/render/ -run Golden -update
func TestGoldenHumanReports(t *testing.T) {
	inputs, err := filepath.Glob("testdata/*.json")
	if err != nil || len(inputs) == 0 {
		t.Fatalf("no inputs in testdata/ (%v)", err)
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(in)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			switch {
			case strings.HasPrefix(name, "path"):
				var r report.PathReport
				mustDecode(t, data, &r)
				err = Write(&got, "", &r)
			case strings.HasPrefix(name, "ladder"):
				var r report.LadderReport
				mustDecode(t, data, &r)
				err = WriteLadder(&got, "", &r)
			case strings.HasPrefix(name, "dns"):
				var r report.DNSReport
				mustDecode(t, data, &r)
				err = WriteDNS(&got, "", &r)
			case strings.HasPrefix(name, "matrix"):
				var r report.MatrixReport
				mustDecode(t, data, &r)
				err = WriteMatrix(&got, "", &r, false)
			default:
				t.Fatalf("%s: name it path-…, ladder-…, dns-… or matrix-…", in)
			}
			if err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(in, ".json") + ".golden"
			if *update {
				if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (create it with -update)", err)
			}
			if diff := cmp.Diff(string(want), got.String()); diff != "" {
				t.Errorf("%s differs from %s (-want +got):\n%s", name, golden, diff)
			}
		})
	}
}

func mustDecode(t *testing.T, data []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatal(err)
	}
}
