package report

import (
	"fmt"
	"io"
	"strings"
)

// PolicyCheck is what the NetworkPolicies that select the run's pods allow, worked out before
// anything was started.
type PolicyCheck struct {
	// Skipped says why no check was made (no permission to list NetworkPolicies).
	Skipped string `json:"skipped,omitempty"`
	// Policies are the policies read (namespace/name) in the run's namespaces.
	Policies []string `json:"policies,omitempty"`
	// Blocked are the flows the policies do not allow, each with the probes it stops.
	Blocked []PolicyBlock `json:"blocked,omitempty"`
	// AgentPort is the port the agents served on to fall inside a range a policy allows.
	AgentPort int `json:"agentPort,omitempty"`
	// Temporary are the NetworkPolicies --allow-policy created; Removed says they were deleted.
	Temporary []string `json:"temporary,omitempty"`
	Removed   bool     `json:"removed,omitempty"`
}

// PolicyBlock is one flow the policies block and what it stops.
type PolicyBlock struct {
	Flow     string   `json:"flow"`     // e.g. "TCP to the server agent's port"
	Policies []string `json:"policies"` // namespace/name of the policies that isolate without allowing it
	Probes   []string `json:"probes"`   // the probes it stops (skipped)
}

func (b PolicyBlock) String() string {
	return fmt.Sprintf("%s is blocked by NetworkPolicy %s: %s skipped", b.Flow, strings.Join(b.Policies, ", "), strings.Join(b.Probes, ", "))
}

// writePolicy writes the policy check's section of a human report.
func writePolicy(w io.Writer, p *PolicyCheck) {
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

// Dataplane is how Services are implemented on the cluster, as far as a user can read it.
type Dataplane struct {
	// Proxy is the Service proxy ("kube-proxy"); Mode its mode (iptables, nftables, ipvs),
	// "unknown" when it cannot be read.
	Proxy  string `json:"proxy,omitempty"`
	Mode   string `json:"mode"`
	Source string `json:"source"` // where it was read, or why it could not be
}

func (d *Dataplane) String() string {
	if d == nil {
		return "unknown"
	}
	if d.Mode == "unknown" {
		return "unknown (" + d.Source + ")"
	}
	return fmt.Sprintf("%s %s mode (%s)", d.Proxy, d.Mode, d.Source)
}
