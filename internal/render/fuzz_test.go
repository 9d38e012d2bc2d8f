package render

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// Any report the loader accepts compares with itself without a change and renders that diff
// in every format, with no figure a number JSON cannot hold (the encoders would write it as
// null and say so). Seeds: every report in testdata as JSON and YAML, whole and cut short,
// and reports with extreme values.
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
		f.Add(b[:len(b)*2/3]) // truncated
		if y, err := yaml.JSONToYAML(b); err == nil {
			f.Add(y)
			f.Add(y[:len(y)/2])
		}
	}
	head := `{"apiVersion":"` + v1alpha1.APIVersion + `",`
	f.Add([]byte(head + `"kind":"LadderReport","rungs":[{"name":"a b","figures":{"x.p50":{"unit":"µs","median":1}}}],"figures":["x.p50"]}`))
	f.Add([]byte(head + `"kind":"MatrixReport","probe":"icmp","zoneCells":[{"from":"a","to":"b","pairs":2,"p50Micros":1,"p99Micros":2,"minP50Micros":0.5,"maxP50Micros":1.5}],"outliers":[{"kind":"node"}]}`))
	f.Add([]byte(head + `"kind":"PathReport","probes":[{"name":"icmp","kind":"icmp","rtt":{"received":3,"rtt":{"count":9223372036854775807,"p50Micros":1,"p99Micros":2,"histogram":[{"startMicros":0,"endMicros":3,"count":9223372036854775807},{"count":5}]}}}]}`))
	f.Add([]byte(head + `"kind":"PathReport","probes":[{"name":"u","kind":"udp","rtt":{"received":2,"lossPercent":0,"rtt":{"count":2,"p50Micros":1e-300,"histogram":[{"startMicros":0,"endMicros":0,"count":0},{"startMicros":0,"endMicros":1e15,"count":2}]}}}]}`))
	f.Add([]byte(head + `"kind":"PathReport","probes":[{"name":"\u007f\u0085\ufffe","kind":"icmp","rtt":{"received":1,"rtt":{"count":1}}}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		run, err := report.LoadRun("fuzz.json", b)
		if err != nil {
			return
		}
		d, err := report.Diff(run, run, 10)
		if err != nil {
			t.Fatal(err)
		}
		if d.Regressions != 0 || d.Improvements != 0 {
			t.Errorf("a run changed against itself: %+v", d.Figures)
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
