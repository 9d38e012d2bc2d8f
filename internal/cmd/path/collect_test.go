package path

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// A ladder client's egress probe that fails (--egress unreachable, refused, blocked) is the way
// out failing, not the server agent: it is recorded with its reason and the run goes on.
func TestEgressFailureGoesOn(t *testing.T) {
	o := &PathOptions{}
	c := &collected{Results: map[string]*agent.ProbeResult{}}
	pod := &session.Target{Namespace: "shop", Pod: &corev1.Pod{}}
	ev := agent.Event{Type: agent.EventError, Probe: agent.ProbeEgress, Message: "dial tcp 198.51.100.10:80: i/o timeout"}
	if err := o.probeError(ev, c, &session.Agent{}, pod, pod); err != nil {
		t.Fatalf("error %v: want the run to go on", err)
	}
	if f := c.Failed(); len(f) != 1 || !strings.Contains(f[0], "egress to the destination outside the cluster failed: ") || !strings.Contains(f[0], "i/o timeout") || strings.Contains(f[0], "server agent") {
		t.Errorf("failed %q: want the egress probe's failure with its reason, not the server agent's", f)
	}
}
