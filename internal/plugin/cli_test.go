package plugin

import (
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Temporary agents get requests, a memory limit and no CPU limit by default; a memory limit
// below the agent's own heap limit brings GOMEMLIMIT down with it; "none" leaves it all to the
// namespace's LimitRange.
func TestAgentResources(t *testing.T) {
	tests := []struct {
		flag, wantRequests, wantLimits, wantGoMemLimit string
	}{
		{"", "cpu=100m memory=64Mi", "memory=128Mi", ""},
		{"none", "", "", ""},
		{"cpu=200m,memory=64Mi", "cpu=200m memory=64Mi", "cpu=200m memory=64Mi", "50331648"},
		{"memory=1Gi", "memory=1Gi", "memory=1Gi", ""},
	}
	for _, tc := range tests {
		t.Run(tc.flag, func(t *testing.T) {
			o := NewPathOptions(nil, genericiooptions.NewTestIOStreamsDiscard())
			o.AgentResources = tc.flag
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			var c corev1.Container
			session.SetResources(&c, o.resources)
			var goMem string
			for _, e := range c.Env {
				if e.Name == "GOMEMLIMIT" {
					goMem = e.Value
				}
			}
			if got := list(c.Resources.Requests); got != tc.wantRequests {
				t.Errorf("requests %q, want %q", got, tc.wantRequests)
			}
			if got := list(c.Resources.Limits); got != tc.wantLimits {
				t.Errorf("limits %q, want %q", got, tc.wantLimits)
			}
			if goMem != tc.wantGoMemLimit {
				t.Errorf("GOMEMLIMIT %q, want %q", goMem, tc.wantGoMemLimit)
			}
		})
	}
}

func list(r corev1.ResourceList) string {
	var out []string
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := r[n]; ok {
			out = append(out, string(n)+"="+q.String())
		}
	}
	return strings.Join(out, " ")
}
