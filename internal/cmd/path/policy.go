package path

import (
	"context"
	"fmt"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/policyplan"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// PlanPolicy works out from the policies read what they block between SRC and DST, tells the user,
// and, with --allow-policy, creates the temporary policies that let this run's agents through
// (the session deletes them). Bad input fails before anything is created.
func (o *PathOptions) PlanPolicy(ctx context.Context, s *session.Session, sc *policyplan.Scope, src, dst *session.Target, probes, appPort []agent.ProbeSpec, lifetime time.Duration) (*policyplan.PathPolicy, error) {
	if o.AllowPolicy {
		if err := access.CheckPolicyPermissions(ctx, o.Client, src.Namespace, dst.Namespace); err != nil {
			return &policyplan.PathPolicy{Check: &report.PolicyCheck{Skipped: sc.Skipped}}, err
		}
	}
	if o.AllowPolicy && sc.Skipped != "" {
		return &policyplan.PathPolicy{Check: &report.PolicyCheck{Skipped: sc.Skipped}}, fmt.Errorf("--allow-policy: %s", sc.Skipped)
	}
	srvPort, cliPort := policyplan.ChoosePort(sc, s, src, dst), 0
	addrs, _ := DstAddrs(o.IPFamily, dst) // checked before: a pod without the family was refused
	var temporary []string
	if o.AllowPolicy {
		before := policyplan.PlanPath(sc, s, src, dst, probes, appPort, srvPort, 0, addrs)
		if len(before.Check.Blocked) > 0 {
			al := policyplan.NewAllowance(s, sc, src, dst)
			srvPort, cliPort = al.SrvPort, al.CliPort
			names, err := o.allow(ctx, s, sc, al, lifetime)
			temporary = names
			if err != nil {
				before.Check.Temporary = names
				return before, err
			}
		}
	}
	pp := policyplan.PlanPath(sc, s, src, dst, probes, appPort, srvPort, cliPort, addrs)
	pp.SrvPort, pp.CliPort = srvPort, cliPort
	if srvPort != 0 && len(temporary) == 0 {
		pp.Check.AgentPort = srvPort
	}
	pp.Check.Temporary = temporary
	o.TellPolicy(pp.Check.Blocked, temporary)
	if len(pp.Runnable(probes)) == 0 && len(pp.RunnableApp(appPort)) == 0 {
		return pp, fmt.Errorf("NetworkPolicies block every probe of the agents and there is no --port to measure: nothing was measured (allow them for this run with --allow-policy, or measure the app's port with --port)")
	}
	return pp, nil
}

// allow creates the allowance's temporary policies.
func (o *PathOptions) allow(ctx context.Context, s *session.Session, sc *policyplan.Scope, al *policyplan.Allowance, lifetime time.Duration) ([]string, error) {
	ops, err := al.Policies()
	if err != nil {
		return nil, err
	}
	return sc.Create(ctx, s, ops, lifetime)
}
