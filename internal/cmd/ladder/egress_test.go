package ladder

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
)

// --egress takes a destination outside the cluster, as path's DST does; what does not fit is
// refused in one line naming the flag, before any API call.
func TestLadderEgressRefuses(t *testing.T) {
	for _, tc := range []struct {
		egress, caFile, want string
	}{
		{"deploy/web", "", `--egress "deploy/web": want a destination outside the cluster`},
		{"agent://outside:7000", "", `--egress "agent://outside:7000": want a destination outside the cluster`},
		{"ftp://outside.example/", "", "--egress: "},
		{"", "/etc/hostname", "--egress-ca-file is for --egress"},
		{"http://outside.example/", "/etc/hostname", "--egress-ca-file is for an https:// or grpcs:// --egress"},
		{"https://outside.example/", "/nonexistent/ca.pem", "--egress-ca-file /nonexistent/ca.pem: "},
	} {
		t.Run(tc.want, func(t *testing.T) {
			f := ladderCluster(t)
			o, _ := newTestLadderOptions(f)
			o.Egress, o.EgressCAFile = tc.egress, tc.caFile
			wantRefused(t, f, o.Validate(), tc.want)
		})
	}
}

// With --egress every rung's client runs the egress probe after the others, and the rung's
// budget has room for it.
func TestLadderEgressJob(t *testing.T) {
	f := ladderCluster(t)
	o, _ := newTestLadderOptions(f)
	o.Egress = "https://outside.example/"
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	specs := o.egressSpecs()
	if len(specs) != 1 || specs[0].Kind != agent.ProbeEgress || specs[0].URL != o.Egress || specs[0].Count < 1 || o.egressBudget() <= 0 {
		t.Errorf("specs %+v, budget %s: want one egress probe to %s, with a budget", specs, o.egressBudget(), o.Egress)
	}
	o.Egress = "198.51.100.10"
	if err := o.Validate(); err != nil || o.Egress != "icmp://198.51.100.10" {
		t.Errorf("an address alone: %v, --egress %q: want it pinged (icmp://198.51.100.10), as path's DST", err, o.Egress)
	}
	o.Egress = ""
	if o.egressSpecs() != nil || o.egressBudget() != 0 {
		t.Error("without --egress, an egress probe or budget")
	}
}

// The gates may name the egress figures of every rung and class, but none of a phase the
// destination has not (no TLS over plain HTTP).
func TestLadderEgressPlannedFigures(t *testing.T) {
	o, _ := newTestLadderOptions(ladderCluster(t))
	o.Egress = "http://outside.example/"
	planned := o.withoutAbsentEgress(map[string]string{"same-node.egress.connect.p50": "µs", "cross-zone.egress.tls.p50": "µs",
		"same-zone.egress.ttfb-new.p99": "µs", "same-node.icmp.p50": "µs", "egress.tls.p99": "µs"})
	var got []string
	for name := range planned {
		got = append(got, name)
	}
	slices.Sort(got)
	if want := []string{"same-node.egress.connect.p50", "same-node.icmp.p50", "same-zone.egress.ttfb-new.p99"}; !slices.Equal(got, want) {
		t.Errorf("planned %v, want %v", got, want)
	}
}

// wantRefused checks that err is one line starting with want, and that no API call came before.
func wantRefused(t *testing.T, f *fakecluster.Cluster, err error, want string) {
	t.Helper()
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %v, want one line starting %q", err, want)
	}
	if n := len(f.Clientset.Actions()); n != 0 {
		t.Errorf("%d API calls before the refusal", n)
	}
}
