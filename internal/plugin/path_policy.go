package plugin

import (
	"context"
	"fmt"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/report"
)

// planPolicy works out from the policies read what they block between SRC and DST, tells the user,
// and, with --allow-policy, creates the temporary policies that let this run's agents through
// (the session deletes them). Bad input fails before anything is created.
func (o *PathOptions) planPolicy(ctx context.Context, s *session.Session, sc *policyScope, src, dst *session.Target, probes, appPort []agent.ProbeSpec, lifetime time.Duration) (*pathPolicy, error) {
	if o.AllowPolicy {
		if err := access.CheckPolicyPermissions(ctx, o.client, src.Namespace, dst.Namespace); err != nil {
			return &pathPolicy{check: &report.PolicyCheck{Skipped: sc.skipped}}, err
		}
	}
	if o.AllowPolicy && sc.skipped != "" {
		return &pathPolicy{check: &report.PolicyCheck{Skipped: sc.skipped}}, fmt.Errorf("--allow-policy: %s", sc.skipped)
	}
	srvPort, cliPort := choosePort(sc, s, src, dst), 0
	var temporary []string
	if o.AllowPolicy {
		before := planPath(sc, s, src, dst, probes, appPort, srvPort, 0)
		if len(before.check.Blocked) > 0 {
			al := newAllowance(s, sc, src, dst)
			srvPort, cliPort = al.srvPort, al.cliPort
			names, err := o.allow(ctx, s, sc, al, lifetime)
			temporary = names
			if err != nil {
				before.check.Temporary = names
				return before, err
			}
		}
	}
	pp := planPath(sc, s, src, dst, probes, appPort, srvPort, cliPort)
	pp.srvPort, pp.cliPort = srvPort, cliPort
	if srvPort != 0 && len(temporary) == 0 {
		pp.check.AgentPort = srvPort
	}
	pp.check.Temporary = temporary
	o.tellPolicy(pp.check.Blocked, temporary)
	if len(pp.runnable(probes)) == 0 && len(pp.runnableApp(appPort)) == 0 {
		return pp, fmt.Errorf("NetworkPolicies block every probe of the agents and there is no --port to measure: nothing was measured (allow them for this run with --allow-policy, or measure the app's port with --port)")
	}
	return pp, nil
}

// allow creates the allowance's temporary policies.
func (o *PathOptions) allow(ctx context.Context, s *session.Session, sc *policyScope, al *allowance, lifetime time.Duration) ([]string, error) {
	ops, err := al.policies()
	if err != nil {
		return nil, err
	}
	return o.createPolicies(ctx, s, sc, ops, lifetime)
}
