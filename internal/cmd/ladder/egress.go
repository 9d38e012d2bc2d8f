package ladder

import (
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/path"
	"github.com/kubectl-netbench/kubectl-netbench/internal/egress"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// egressSpecs is the probe each rung's client also runs with --egress (none without it): the
// egress probe of `path SRC URL`, from the rung's node, so that the way out is priced per node
// and zone beside the way to DST (a zone whose traffic leaves through another zone's NAT
// gateway pays for the crossing).
func (o *LadderOptions) egressSpecs() []agent.ProbeSpec {
	if o.Egress == "" {
		return nil
	}
	return []agent.ProbeSpec{{Kind: agent.ProbeEgress, Name: agent.ProbeEgress, URL: o.Egress, Count: egress.DefaultCount, RootCAs: string(o.egressRoots)}}
}

// egressBudget is the longest the egress probe may take on a rung (none without --egress).
func (o *LadderOptions) egressBudget() time.Duration {
	if o.Egress == "" {
		return 0
	}
	return egress.MaxDuration(egress.DefaultCount, 0)
}

// withoutAbsentEgress drops from planned the egress figures --egress's destination has not
// (a phase it has no part in: TLS over plain HTTP, a first byte over tcp://, …), under any
// rung's or class's name.
func (o *LadderOptions) withoutAbsentEgress(planned map[string]string) map[string]string {
	for name := range planned {
		_, rest, found := strings.Cut("."+name, "."+agent.ProbeEgress+".")
		phase, _, _ := strings.Cut(rest, ".")
		if found && path.AbsentPhase(phase, o.Egress, false) {
			delete(planned, name)
		}
	}
	return planned
}

// podRungs are the rungs whose clients run --egress: all but the host-network rung, whose job
// is the agents' own probes alone.
func podRungs(rungs []report.LadderRung) []report.LadderRung {
	var out []report.LadderRung
	for _, r := range rungs {
		if r.Class != HostNetworkClass {
			out = append(out, r)
		}
	}
	return out
}

// validateEgress checks --egress (an address alone is pinged, as path's DST) and
// --egress-ca-file, and reads the roots.
func (o *LadderOptions) validateEgress() (err error) {
	if u, bare := egress.Bare(o.Egress); bare {
		o.Egress = u
	}
	switch {
	case o.Egress == "" && o.EgressCAFile != "":
		return fmt.Errorf("--egress-ca-file is for --egress (an https:// or grpcs:// destination outside the cluster)")
	case o.Egress == "":
		return nil
	case !path.IsExternal(o.Egress) || path.IsOutsideAgent(o.Egress):
		return fmt.Errorf("--egress %q: want a destination outside the cluster: tcp://HOST:PORT, http(s)://…, grpc(s)://HOST:PORT, icmp://HOST or an address", egress.Shown(o.Egress))
	}
	if err := egress.Check(o.Egress); err != nil {
		return fmt.Errorf("--egress: %w", err)
	}
	if o.EgressCAFile != "" && !egress.OverTLS(o.Egress) {
		return fmt.Errorf("--egress-ca-file is for an https:// or grpcs:// --egress, not %s", egress.Shown(o.Egress))
	}
	o.egressRoots, err = path.ReadRootCAs("--egress-ca-file", o.EgressCAFile)
	return err
}
