package matrix

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// The matrix in a namespace whose policies block its agents fails before creating anything
// and names the policy; with --allow-policy it measures behind one temporary policy that
// selects its agents only, deleted at the end; where a policy allows a port range, the agents
// move into it and ICMP, which no ported rule allows, is skipped.
func TestMatrixUnderDefaultDeny(t *testing.T) {
	f := fakecluster.NewFleet(4, 2)
	fakecluster.AddPolicies(t, f.Clientset, "netbench", 8080, 0)
	_, err := runMatrix(t, f, func(o *MatrixOptions) {})
	if err == nil || !strings.Contains(err.Error(), "netbench/default-deny") || !strings.Contains(err.Error(), "--allow-policy") {
		t.Fatalf("err %v: want the policy named and --allow-policy suggested", err)
	}
	if left := f.Remaining(); len(left) != 0 {
		t.Errorf("left %v", left)
	}

	r, err := runMatrix(t, f, func(o *MatrixOptions) { o.AllowPolicy = true })
	if err != nil {
		t.Fatal(err)
	}
	if r.Policy == nil || !slices.Equal(r.Policy.Temporary, []string{"netbench/netbench-run1-mesh"}) || !r.Policy.Removed || r.Probe != "icmp" {
		t.Errorf("policy %+v, probe %s: want one temporary policy, removed, and ICMP measured", r.Policy, r.Probe)
	}
	if left := append(f.Remaining(), fakecluster.PoliciesLeft(t, f.Clientset, "netbench")...); len(left) != 0 {
		t.Errorf("left %v", left)
	}

	g := fakecluster.NewFleet(4, 2)
	fakecluster.AddPolicies(t, g.Clientset, "netbench", 9000, 9100)
	pol, _ := g.Clientset.NetworkingV1().NetworkPolicies("netbench").Get(context.Background(), "web", metav1.GetOptions{})
	pol.Spec.PodSelector = metav1.LabelSelector{}
	_, _ = g.Clientset.NetworkingV1().NetworkPolicies("netbench").Update(context.Background(), pol, metav1.UpdateOptions{})
	r, err = runMatrix(t, g, func(o *MatrixOptions) {})
	if err != nil {
		t.Fatal(err)
	}
	if r.Policy.AgentPort != 9100 || r.Probe != agent.ProbeTCPRTT || len(r.Policy.Blocked) != 1 || r.Policy.Blocked[0].Probes[0] != "icmp" {
		t.Errorf("policy %+v, probe %s: want port 9100, ICMP blocked, tcp-rtt measured", r.Policy, r.Probe)
	}
}

// With both families, a failed IPv6 twin fails only the pair's IPv6 part; any other failure
// ends the job, so both; one family's run keeps one error.
func TestFamilyErrors(t *testing.T) {
	twin := &session.ProbeError{Probe: "tcp-rtt-v6", Err: errors.New("connection refused")}
	plain := &session.ProbeError{Probe: "tcp", Err: errors.New("timeout")}
	for _, tc := range []struct {
		name   string
		err    error
		both   bool
		v4, v6 string
	}{
		{"none", nil, true, "", ""},
		{"an IPv6 twin", errors.Join(twin), true, "", "tcp-rtt-v6: connection refused"},
		{"an IPv4 probe ends the job", errors.Join(plain), true, "tcp: timeout", "tcp: timeout"},
		{"both", errors.Join(twin, plain), true, "tcp: timeout", "tcp-rtt-v6: connection refused"},
		{"the request itself", errors.New("the agent on a: timeout"), true, "the agent on a: timeout", "the agent on a: timeout"},
		{"one family", errors.Join(plain), false, "tcp: timeout", ""},
	} {
		v4, v6 := familyErrors(tc.err, tc.both)
		if v4 != tc.v4 || v6 != tc.v6 {
			t.Errorf("%s: %q / %q, want %q / %q", tc.name, v4, v6, tc.v4, tc.v6)
		}
	}
}

// The errors of one pair's job as the fleet returns them (joined twice: the twins the fleet could
// not aim, then the agent's error events) still split by family, one line each.
func TestFamilyErrorsNested(t *testing.T) {
	agentErrs := errors.Join(&session.ProbeError{Probe: "tcp-rtt-v6", Err: errors.New("refused")}, &session.ProbeError{Probe: "tcp", Err: errors.New("timeout")})
	v4, v6 := familyErrors(errors.Join(nil, agentErrs), true)
	if v4 != "tcp: timeout" || v6 != "tcp-rtt-v6: refused" {
		t.Errorf("%q / %q", v4, v6)
	}
}

// Every job the matrix builds passes the agents' bound on a mesh job's probes.
func TestMatrixJobsWithinTheMeshBound(t *testing.T) {
	for _, fam := range []string{"", "4", "6", "both"} {
		o := &MatrixOptions{Count: 50, Interval: 10 * time.Millisecond, Throughput: 2 * time.Second, Rates: time.Second, IPFamily: fam}
		if n := len(o.job("10.0.0.2").Probes); n > agent.MaxMeshProbes {
			t.Errorf("--ip-family %q with --throughput and --rates: %d probes, the agents take %d", fam, n, agent.MaxMeshProbes)
		}
	}
}

// A rate probe's failure (either family's) is the pair's rate error, not its error: the agents
// go on after it and the pair's RTT stands.
func TestSplitRateErrors(t *testing.T) {
	crr := &session.ProbeError{Probe: "tcp-crr", Err: errors.New("no transaction completed")}
	rr6 := &session.ProbeError{Probe: "udp-rr-v6", Err: errors.New("no answer")}
	twin := &session.ProbeError{Probe: "tcp-rtt-v6", Err: errors.New("refused")}
	rates, rates6, rest := splitRateErrors(errors.Join(nil, errors.Join(crr, twin, rr6)))
	v4, v6 := familyErrors(rest, true)
	if rates != "tcp-crr: no transaction completed" || rates6 != "udp-rr-v6: no answer" || v4 != "" || v6 != "tcp-rtt-v6: refused" {
		t.Errorf("rates %q / %q, IPv4 %q, IPv6 %q", rates, rates6, v4, v6)
	}
	if rates, _, rest := splitRateErrors(errors.Join(crr)); rest != nil || rates == "" {
		t.Errorf("only a rate failed: rest %v, rates %q", rest, rates)
	}
}
