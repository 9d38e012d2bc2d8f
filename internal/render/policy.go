package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// writePolicy writes the policy check's section of a human report.
func writePolicy(w io.Writer, p *report.PolicyCheck) {
	if p == nil {
		return
	}
	switch {
	case p.Skipped != "":
		fmt.Fprintf(w, "\nNetworkPolicy: not checked: %s\n", p.Skipped)
		return
	case len(p.Policies) == 0:
		fmt.Fprintln(w, "\nNetworkPolicy: none in the run's namespaces")
	default:
		fmt.Fprintf(w, "\nNetworkPolicy: %d in the run's namespaces (%s)\n", len(p.Policies), strings.Join(p.Policies, ", "))
	}
	for _, b := range p.Blocked {
		fmt.Fprintf(w, "  blocked: %s\n", b)
	}
	if p.AgentPort != 0 {
		fmt.Fprintf(w, "  the agents served on port %d, inside a range a policy allows\n", p.AgentPort)
	}
	if len(p.Temporary) > 0 {
		state := "not yet removed"
		if p.Removed {
			state = "removed at the end of the run"
		}
		fmt.Fprintf(w, "  --allow-policy created %s (%s)\n", strings.Join(p.Temporary, ", "), state)
	}
}
