package cmdutil

import (
	"context"
	"fmt"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/policyplan"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// ReadPolicies reads the scope; without permission to list NetworkPolicies the check is skipped
// and says so. A namespace that cannot be read keeps the label every namespace carries. Every
// command reads its namespaces' policies before it starts anything, so this is also where the
// temporary policies a killed run left are deleted once their not-after time has passed.
func (o *CommonOptions) ReadPolicies(ctx context.Context, namespaces ...string) *policyplan.Scope {
	return policyplan.Read(ctx, o.Client, o.ErrOut, o.sweepPolicies, namespaces...)
}

// TellPolicy says up front what the policies block and what --allow-policy created.
func (o *CommonOptions) TellPolicy(blocked []report.PolicyBlock, temporary []string) {
	for _, b := range blocked {
		fmt.Fprintf(o.ErrOut, "NetworkPolicy: %s\n", b)
	}
	if len(temporary) > 0 {
		fmt.Fprintf(o.ErrOut, "NetworkPolicy: --allow-policy created %s for this run\n", strings.Join(temporary, ", "))
	}
}
