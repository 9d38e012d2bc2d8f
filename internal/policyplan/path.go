package policyplan

import (
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/netpolicy"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
	corev1 "k8s.io/api/core/v1"
)

// PathPolicy is what the policy check decided for a path run.
type PathPolicy struct {
	Check *v1alpha1.PolicyCheck
	// Skip holds the probes not to run; noServer says the server agent is not started at all
	// (every agent-to-agent probe is blocked, or the API server cannot reach it).
	Skip     map[string]bool
	NoServer bool
	// SrvPort and cliPort are the agents' ports (0: a free one).
	SrvPort, CliPort int
	// InlineJob: the API server cannot hand the client agent its job, so the job (app-port
	// probes only: it holds no token) is given on its command line.
	InlineJob bool
}

// PlanPath works out which probes the policies block between the run's agents, with the server
// agent on port (0: a free port, which only port-less rules allow). addrs are DST's addresses
// the run measures, one per family (--ip-family both: the IPv6 twins' second); each probe is
// judged at the agents' addresses of its family.
func PlanPath(sc *Scope, s *session.Session, src, dst *session.Target, probes, appPort []agent.ProbeSpec, port, cliPort int, addrs []netip.Addr) *PathPolicy {
	pp := &PathPolicy{Check: &v1alpha1.PolicyCheck{Skipped: sc.Skipped, Policies: sc.Names()}, Skip: map[string]bool{}}
	if sc.Skipped != "" {
		return pp
	}
	cliPod, srvPod := policyPod(s, src, session.RoleClient), policyPod(s, dst, session.RoleServer)
	cli, srv := sc.Endpoint(cliPod), sc.Endpoint(srvPod)
	var b Blocks
	if pols := sc.FromAPIServer(srv.Pod, port); len(pols) > 0 {
		pp.NoServer = true
		for _, p := range probes {
			b.Add("the API server's pod proxy to the server agent (its lease and stop)", pols, p.Label())
		}
	}
	for _, p := range probes {
		proto, flow := FlowOf(p)
		fam := session.ProbeAddr(p.Label(), addrs)
		if v := sc.Check(sc.EndpointOf(cliPod, fam), sc.EndpointOf(srvPod, fam), proto, port); !pp.NoServer && !v.Allowed() {
			b.Add(flow, v.Blockers(), p.Label())
		}
	}
	for _, blk := range b {
		for _, p := range blk.Probes {
			pp.Skip[p] = true
		}
	}
	pp.NoServer = pp.NoServer || len(pp.Skip) == len(probes)
	for _, p := range appPort {
		// To the app itself (in pod mode not the temporary agent pod), at its address of the
		// probe's family.
		fam := session.ProbeAddr(p.Label(), addrs)
		if v := sc.Check(sc.EndpointOf(cliPod, fam), sc.EndpointOf(dst.Pod, fam), corev1.ProtocolTCP, portOf(p)); !v.Allowed() {
			b.Add(fmt.Sprintf("TCP to %s/%s port %d", dst.Namespace, dst.Pod.Name, portOf(p)), v.Blockers(), p.Label())
			pp.Skip[p.Label()] = true
		}
	}
	if pols := sc.FromAPIServer(cli.Pod, cliPort); len(pols) > 0 {
		pp.InlineJob = true
		if !pp.NoServer {
			pp.NoServer = true
			for _, p := range probes {
				if !pp.Skip[p.Label()] {
					b.Add("the API server's pod proxy to the client agent (handing it a job that holds the run's token)", pols, p.Label())
					pp.Skip[p.Label()] = true
				}
			}
		}
	}
	pp.Check.Blocked = b
	return pp
}

// portOf is the port an app-port probe connects to.
func portOf(p agent.ProbeSpec) int {
	addr := p.Address
	if addr == "" {
		addr = strings.TrimPrefix(p.URL, "http://")
		addr, _, _ = strings.Cut(addr, "/")
	}
	ap, err := netip.ParseAddrPort(addr)
	if err != nil {
		return 0
	}
	return int(ap.Port())
}

// ChoosePort puts the server agent inside a port range the policies allow from the client and
// the API server, avoiding the destination's declared ports; 0 when there is none.
func ChoosePort(sc *Scope, s *session.Session, src, dst *session.Target) int {
	return PortWithin(sc, policyPod(s, src, session.RoleClient), policyPod(s, dst, session.RoleServer), declaredPorts(dst.Pod))
}

// PortWithin is a port of 1024 or above, not taken, inside a range the policies allow over TCP
// from one pod to another and from the API server to the latter; 0 when there is none (or the
// policies were not read).
func PortWithin(sc *Scope, from, to *corev1.Pod, taken []int) int {
	if sc.Skipped != "" {
		return 0
	}
	cli, srv := sc.Endpoint(from), sc.Endpoint(to)
	for _, r := range netpolicy.AllowedRanges(sc.Policies, corev1.ProtocolTCP) {
		for p := r.Last; p >= r.First && p > r.Last-64; p-- {
			if p < 1024 || slices.Contains(taken, p) {
				continue
			}
			if sc.Check(cli, srv, corev1.ProtocolTCP, p).Allowed() && len(sc.FromAPIServer(to, p)) == 0 {
				return p
			}
		}
	}
	return 0
}

func declaredPorts(p *corev1.Pod) []int {
	var out []int
	for _, c := range p.Spec.Containers {
		for _, cp := range c.Ports {
			out = append(out, int(cp.ContainerPort))
		}
	}
	return out
}

// Runnable are the probes the policies let through.
func (pp *PathPolicy) Runnable(probes []agent.ProbeSpec) []agent.ProbeSpec {
	if pp.NoServer {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(probes), func(p agent.ProbeSpec) bool { return pp.Skip[p.Label()] })
}

// RunnableApp are the app-port probes the policies let through.
func (pp *PathPolicy) RunnableApp(appPort []agent.ProbeSpec) []agent.ProbeSpec {
	return slices.DeleteFunc(slices.Clone(appPort), func(p agent.ProbeSpec) bool { return pp.Skip[p.Label()] })
}

// Skipped are the report's lines for the probes not run.
func (pp *PathPolicy) Skipped() []string {
	var out []string
	for _, b := range pp.Check.Blocked {
		for _, p := range b.Probes {
			if pp.Skip[p] || pp.NoServer && !IsAppProbe(p) {
				out = append(out, fmt.Sprintf("%s: %s is blocked by NetworkPolicy %s", p, b.Flow, strings.Join(b.Policies, ", ")))
			}
		}
	}
	return out
}

// IsAppProbe says whether a probe measures the application (its port, or its Service) rather
// than the agent server: its failure is reported next to the results, not fatal.
func IsAppProbe(name string) bool {
	return strings.HasPrefix(name, "app-") || strings.HasPrefix(name, "svc-")
}
