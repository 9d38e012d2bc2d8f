package plugin

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/netpolicy"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// policyScope is what the policy check reads before a run starts anything: the
// NetworkPolicies of the run's namespaces, those namespaces' labels, and the API server's
// addresses (the pod proxy, which hands agents their jobs and renews leases, connects from them).
type policyScope struct {
	policies  []networkingv1.NetworkPolicy
	nsLabels  map[string]map[string]string
	apiServer []netip.Addr
	skipped   string
}

// readPolicies reads the scope; without permission to list NetworkPolicies the check is skipped
// and says so. A namespace that cannot be read keeps the label every namespace carries. Every
// command reads its namespaces' policies before it starts anything, so this is also where the
// temporary policies a killed run left are deleted once their not-after time has passed.
func (o *commonOptions) readPolicies(ctx context.Context, namespaces ...string) *policyScope {
	sc := &policyScope{nsLabels: map[string]map[string]string{}}
	for _, ns := range unique(namespaces) {
		list, err := o.client.NetworkingV1().NetworkPolicies(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			sc.skipped = fmt.Sprintf("listing networkpolicies in namespace %q failed (%v): blocked probes were not predicted", ns, forbiddenOr(err))
			return sc
		}
		sc.policies = append(sc.policies, o.sweepPolicies(ctx, ns, list.Items)...)
		sc.nsLabels[ns] = map[string]string{}
		if n, err := o.client.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); err == nil {
			maps.Copy(sc.nsLabels[ns], n.Labels)
		}
		sc.nsLabels[ns][corev1.LabelMetadataName] = ns // set by the API server on every namespace
	}
	sc.apiServer = apiServerAddrs(ctx, o.client)
	return sc
}

// apiServerAddrs are the addresses of the API server's own EndpointSlice (default/kubernetes,
// which only the API server writes, read by name: a slice another writer labelled for the
// Service is not taken), or none.
func apiServerAddrs(ctx context.Context, client kubernetes.Interface) []netip.Addr {
	slice, err := client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	var out []netip.Addr
	for _, e := range slice.Endpoints {
		for _, a := range e.Addresses {
			if ip, err := netip.ParseAddr(a); err == nil {
				out = append(out, ip)
			}
		}
	}
	return out
}

// names lists the policies read, namespace/name.
func (sc *policyScope) names() []string {
	var n []string
	for _, p := range sc.policies {
		n = append(n, p.Namespace+"/"+p.Name)
	}
	return n
}

// endpoint is a pod as the policies see it.
func (sc *policyScope) endpoint(p *corev1.Pod) netpolicy.Endpoint {
	ip, _ := netip.ParseAddr(p.Status.PodIP)
	return netpolicy.Endpoint{Pod: p, NamespaceLabels: sc.nsLabels[p.Namespace], IP: ip}
}

// policyPod is what the policies see of an agent: the target pod itself (ephemeral containers
// share its network and labels) or a temporary pod of the run in its namespace.
func policyPod(s *Session, t *Target, r Role) *corev1.Pod {
	if s.Mode != ModePod {
		return t.Pod
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: s.name(AgentSpec{Role: r}), Labels: s.labels(r)}}
}

// check evaluates a flow; from the API server, any of its addresses must be allowed.
func (sc *policyScope) check(from, to netpolicy.Endpoint, proto corev1.Protocol, port int) netpolicy.Verdict {
	return netpolicy.Check(sc.policies, netpolicy.Flow{From: from, To: to, Protocol: proto, Port: port})
}

// fromAPIServer says which policies stop the API server reaching pod's port (none: allowed,
// or the API server's addresses are unknown and it is assumed allowed).
func (sc *policyScope) fromAPIServer(pod *corev1.Pod, port int) []string {
	for _, ip := range sc.apiServer {
		v := sc.check(netpolicy.Endpoint{IP: ip}, sc.endpoint(pod), corev1.ProtocolTCP, port)
		if !v.Allowed() {
			return unique(v.Blockers())
		}
	}
	return nil
}

// flowOf is the protocol a probe of the agents uses to the server agent.
func flowOf(p agent.ProbeSpec) (corev1.Protocol, string) {
	switch p.Kind {
	case agent.ProbeICMP:
		return netpolicy.ICMP, "ICMP echo"
	case agent.ProbeUDP, agent.ProbePMTU:
		return corev1.ProtocolUDP, "UDP to the server agent's port"
	}
	return corev1.ProtocolTCP, "TCP to the server agent's port"
}

// blocks groups blocked probes by flow, in the order first seen.
type blocks []report.PolicyBlock

func (b *blocks) add(flow string, policies []string, probe string) {
	for i := range *b {
		if (*b)[i].Flow == flow {
			(*b)[i].Probes = append((*b)[i].Probes, probe)
			return
		}
	}
	*b = append(*b, report.PolicyBlock{Flow: flow, Policies: unique(policies), Probes: []string{probe}})
}

// pathPolicy is what the policy check decided for a path run.
type pathPolicy struct {
	check *report.PolicyCheck
	// skip holds the probes not to run; noServer says the server agent is not started at all
	// (every agent-to-agent probe is blocked, or the API server cannot reach it).
	skip     map[string]bool
	noServer bool
	// srvPort and cliPort are the agents' ports (0: a free one).
	srvPort, cliPort int
	// inlineJob: the API server cannot hand the client agent its job, so the job (app-port
	// probes only: it holds no token) is given on its command line.
	inlineJob bool
}

// planPath works out which probes the policies block between the run's agents, with the server
// agent on port (0: a free port, which only port-less rules allow).
func planPath(sc *policyScope, s *Session, src, dst *Target, probes, appPort []agent.ProbeSpec, port, cliPort int) *pathPolicy {
	pp := &pathPolicy{check: &report.PolicyCheck{Skipped: sc.skipped, Policies: sc.names()}, skip: map[string]bool{}}
	if sc.skipped != "" {
		return pp
	}
	cli, srv := sc.endpoint(policyPod(s, src, RoleClient)), sc.endpoint(policyPod(s, dst, RoleServer))
	var b blocks
	if pols := sc.fromAPIServer(srv.Pod, port); len(pols) > 0 {
		pp.noServer = true
		for _, p := range probes {
			b.add("the API server's pod proxy to the server agent (its lease and stop)", pols, p.Label())
		}
	}
	for _, p := range probes {
		proto, flow := flowOf(p)
		if v := sc.check(cli, srv, proto, port); !pp.noServer && !v.Allowed() {
			b.add(flow, v.Blockers(), p.Label())
		}
	}
	for _, blk := range b {
		for _, p := range blk.Probes {
			pp.skip[p] = true
		}
	}
	pp.noServer = pp.noServer || len(pp.skip) == len(probes)
	app := sc.endpoint(dst.Pod)
	if s.Mode == ModePod {
		app = sc.endpoint(dst.Pod) // the app itself, not the temporary agent pod
	}
	for _, p := range appPort {
		if v := sc.check(cli, app, corev1.ProtocolTCP, portOf(p)); !v.Allowed() {
			b.add(fmt.Sprintf("TCP to %s/%s port %d", dst.Namespace, dst.Pod.Name, portOf(p)), v.Blockers(), p.Label())
			pp.skip[p.Label()] = true
		}
	}
	if pols := sc.fromAPIServer(cli.Pod, cliPort); len(pols) > 0 {
		pp.inlineJob = true
		if !pp.noServer {
			pp.noServer = true
			for _, p := range probes {
				if !pp.skip[p.Label()] {
					b.add("the API server's pod proxy to the client agent (handing it a job that holds the run's token)", pols, p.Label())
					pp.skip[p.Label()] = true
				}
			}
		}
	}
	pp.check.Blocked = b
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

// choosePort puts the server agent inside a port range the policies allow from the client and
// the API server, avoiding the destination's declared ports; 0 when there is none.
func choosePort(sc *policyScope, s *Session, src, dst *Target) int {
	return portWithin(sc, policyPod(s, src, RoleClient), policyPod(s, dst, RoleServer), declaredPorts(dst.Pod))
}

// portWithin is a port of 1024 or above, not taken, inside a range the policies allow over TCP
// from one pod to another and from the API server to the latter; 0 when there is none (or the
// policies were not read).
func portWithin(sc *policyScope, from, to *corev1.Pod, taken []int) int {
	if sc.skipped != "" {
		return 0
	}
	cli, srv := sc.endpoint(from), sc.endpoint(to)
	for _, r := range netpolicy.AllowedRanges(sc.policies, corev1.ProtocolTCP) {
		for p := r.Last; p >= r.First && p > r.Last-64; p-- {
			if p < 1024 || slices.Contains(taken, p) {
				continue
			}
			if sc.check(cli, srv, corev1.ProtocolTCP, p).Allowed() && len(sc.fromAPIServer(to, p)) == 0 {
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

// planPolicy works out from the policies read what they block between SRC and DST, tells the user,
// and, with --allow-policy, creates the temporary policies that let this run's agents through
// (the session deletes them). Bad input fails before anything is created.
func (o *PathOptions) planPolicy(ctx context.Context, s *Session, sc *policyScope, src, dst *Target, probes, appPort []agent.ProbeSpec, lifetime time.Duration) (*pathPolicy, error) {
	if o.AllowPolicy {
		if err := checkPolicyPermissions(ctx, o.client, src.Namespace, dst.Namespace); err != nil {
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
func (o *PathOptions) allow(ctx context.Context, s *Session, sc *policyScope, al *allowance, lifetime time.Duration) ([]string, error) {
	ops, err := al.policies()
	if err != nil {
		return nil, err
	}
	return o.createPolicies(ctx, s, sc, ops, lifetime)
}

// runnable are the probes the policies let through.
func (pp *pathPolicy) runnable(probes []agent.ProbeSpec) []agent.ProbeSpec {
	if pp.noServer {
		return nil
	}
	return slices.DeleteFunc(slices.Clone(probes), func(p agent.ProbeSpec) bool { return pp.skip[p.Label()] })
}

// runnableApp are the app-port probes the policies let through.
func (pp *pathPolicy) runnableApp(appPort []agent.ProbeSpec) []agent.ProbeSpec {
	return slices.DeleteFunc(slices.Clone(appPort), func(p agent.ProbeSpec) bool { return pp.skip[p.Label()] })
}

// skipped are the report's lines for the probes not run.
func (pp *pathPolicy) skipped() []string {
	var out []string
	for _, b := range pp.check.Blocked {
		for _, p := range b.Probes {
			if pp.skip[p] || pp.noServer && !isAppProbe(p) {
				out = append(out, fmt.Sprintf("%s: %s is blocked by NetworkPolicy %s", p, b.Flow, strings.Join(b.Policies, ", ")))
			}
		}
	}
	return out
}

// tellPolicy says up front what the policies block and what --allow-policy created.
func (o *commonOptions) tellPolicy(blocked []report.PolicyBlock, temporary []string) {
	for _, b := range blocked {
		fmt.Fprintf(o.ErrOut, "NetworkPolicy: %s\n", b)
	}
	if len(temporary) > 0 {
		fmt.Fprintf(o.ErrOut, "NetworkPolicy: --allow-policy created %s for this run\n", strings.Join(temporary, ", "))
	}
}
