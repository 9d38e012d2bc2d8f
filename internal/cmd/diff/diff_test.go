package diff

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// quotedReport is a path report whose probe lacks its result block.
const quotedReport = `{"apiVersion":"netbench.kubectl.dev/v1alpha1","kind":"PathReport","probes":[{"name":"x","kind":"tcp"}]}`

// runDiff runs `kubectl netbench diff` in-process as the binary does: what it prints, what the
// binary would print on stderr (the command's own output there, then "error: " and the
// error) and its exit code.
func runDiff(args ...string) (stdout, stderr string, code int) {
	var out, errOut bytes.Buffer
	c := NewDiffCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	c.SilenceUsage, c.SilenceErrors = true, true // as under the root command
	c.SetArgs(args)
	c.SetOut(&out)
	c.SetErr(&errOut)
	err := c.Execute()
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case errors.Is(err, cmdutil.ErrGateFailed):
		code = cmdutil.ExitGateFailed
	default:
		code = 1
	}
	fmt.Fprintln(&errOut, "error:", err)
	return out.String(), errOut.String(), code
}

// writeFile writes data to name in dir and returns its path.
func writeFile(t *testing.T, dir, name string, data []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// diff refuses a report it cannot use with exit code 1 and exactly one line on stderr, which
// names the file and what is wrong; it prints nothing else.
func TestDiffRefusesBadReportsWithOneLine(t *testing.T) {
	dir := t.TempDir()
	good, err := filepath.Abs("../../render/testdata/path-pod-mode-rtt-tcp.json")
	if err != nil {
		t.Fatal(err)
	}
	dns, _ := filepath.Abs("../../render/testdata/dns-glibc.json")
	goodData, err := os.ReadFile(good)
	if err != nil {
		t.Fatal(err)
	}
	file := func(name string, data []byte) string { return writeFile(t, dir, name, data) }
	quoted := file("quoted.json", []byte(quotedReport))
	huge := filepath.Join(dir, "huge.json")
	if f, err := os.Create(huge); err != nil || f.Truncate(report.MaxReportBytes+1) != nil || f.Close() != nil {
		t.Fatalf("sparse file: %v", err)
	}
	for _, c := range []struct {
		name     string
		old, new string
		want     string
	}{
		{"the report quoted as NEW", good, quoted,
			quoted + `: incomplete report: probes[0] "x" (kind tcp) has no "throughput" result (a probe that was not skipped has one)`},
		{"the report quoted as OLD", quoted, good,
			quoted + `: incomplete report: probes[0] "x" (kind tcp) has no "throughput" result (a probe that was not skipped has one)`},
		{"a null probe", good, file("null.json", []byte(`{"apiVersion":"netbench.kubectl.dev/v1alpha1","kind":"PathReport","appPort":[null]}`)),
			dir + `/null.json: incomplete report: appPort[0] is null`},
		{"a negative count", good, file("negative.json", []byte(`{"apiVersion":"netbench.kubectl.dev/v1alpha1","kind":"PathReport","probes":[{"name":"icmp","kind":"icmp","rtt":{"received":1,"rtt":{"count":2,"histogram":[{"count":-1}]}}}]}`)),
			dir + `/negative.json: invalid report: probes[0] "icmp" (kind icmp): rtt.rtt.histogram[0].count is -1 (want 0 or more)`},
		{"a figure beyond any measurement", good, file("far.json", []byte(`{"apiVersion":"netbench.kubectl.dev/v1alpha1","kind":"PathReport","probes":[{"name":"tcp-1","kind":"tcp","throughput":{"bitsPerSecondReceived":1e300}}]}`)),
			dir + `/far.json: invalid report: figure "tcp-1.gbps" reads 1e+291, beyond any measurement (at most 1e+15 in magnitude)`},
		{"a DNS report without its result", dns, file("dns.json", []byte(`{"apiVersion":"netbench.kubectl.dev/v1alpha1","kind":"DNSReport"}`)),
			dir + `/dns.json: incomplete report: no result`},
		{"a value of the wrong type", good, file("type.json", []byte(`{"apiVersion":"netbench.kubectl.dev/v1alpha1","kind":"PathReport","probes":{}}`)),
			dir + `/type.json: invalid report: probes holds an object where an array is wanted`},
		{"a truncated report", good, file("truncated.json", goodData[:len(goodData)/2]),
			fmt.Sprintf("%s/truncated.json: not a kubectl-netbench report: the file ends early, at byte %d (truncated?)", dir, len(bytes.TrimSpace(goodData[:len(goodData)/2])))},
		{"an empty file", good, file("empty.json", nil),
			dir + `/empty.json: not a kubectl-netbench report: the file is empty`},
		{"another apiVersion", good, file("v1.json", []byte(`{"apiVersion":"v1","kind":"Pod"}`)),
			dir + `/v1.json: not a kubectl-netbench report: apiVersion "v1", want netbench.kubectl.dev/v1alpha1`},
		{"another kind", good, file("kind.json", []byte(`{"apiVersion":"netbench.kubectl.dev/v1alpha1","kind":"DiffReport"}`)),
			dir + `/kind.json: not a kubectl-netbench report: kind "DiffReport", want PathReport, LadderReport, DNSReport or MatrixReport`},
		{"JSON nested too deep", good, file("deep.json", []byte(strings.Repeat(`{"a":`, 20000))),
			dir + `/deep.json: not a kubectl-netbench report: invalid JSON at byte 50001: invalid character '{' exceeded max depth`},
		{"YAML with NaN", good, file("nan.yaml", []byte("apiVersion: netbench.kubectl.dev/v1alpha1\nkind: PathReport\ntimeline: .nan\n")),
			dir + `/nan.yaml: invalid report: a number that is NaN (YAML .nan or .inf), which no report holds`},
		{"not a report at all", good, file("binary", []byte("\x7fELF\x02\x01\x01\x00")),
			dir + `/binary: not a kubectl-netbench report: neither JSON nor YAML (yaml: control characters are not allowed)`},
		{"a file larger than any report", good, huge,
			huge + `: larger than any report (more than 64 MiB)`},
		{"no such file", good, dir + "/missing.json",
			"open " + dir + "/missing.json: no such file or directory"},
		{"a directory", good, dir,
			"reading " + dir + ": read " + dir + ": is a directory"},
		{"two different commands", dns, good,
			"the runs are of different commands: " + dns + " is a DNSReport and " + good + " a PathReport (compare two runs of the same command)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			stdout, stderr, code := runDiff(c.old, c.new)
			if code != 1 || stdout != "" {
				t.Errorf("exit %d, stdout %q; want exit 1 and nothing", code, stdout)
			}
			if diff := cmp.Diff("error: "+c.want+"\n", stderr); diff != "" {
				t.Errorf("stderr (-want +got):\n%s", diff)
			}
		})
	}
}

// A report diffed with itself changes nothing, with each output format.
func TestDiffOfARunWithItself(t *testing.T) {
	in, _ := filepath.Abs("../../render/testdata/path-cross-zone-app-port.json")
	for _, format := range []string{"", "json", "yaml"} {
		stdout, stderr, code := runDiff(in, in, "-o", format, "--fail-if-regressed", "0")
		if code != 0 || stderr != "" || !strings.Contains(stdout, "regressions") && !strings.Contains(stdout, "0 regressed") {
			t.Errorf("-o %q: exit %d, stderr %q, stdout:\n%s", format, code, stderr, stdout)
		}
	}
}
