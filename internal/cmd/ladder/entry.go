package ladder

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"
	"github.com/kubectl-netbench/kubectl-netbench/internal/placement"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/render"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/internal/version"
	"github.com/kubectl-netbench/kubectl-netbench/internal/wayin"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// The ways in --via takes besides "pod": from this machine through each node's NodePort, or
// through the Service's load balancer address.
const (
	ViaNodePort     = report.ViaNodePort
	ViaLoadBalancer = report.ViaLoadBalancer
)

// entryPolicies are the externalTrafficPolicy values each entry node is measured with, in order.
var entryPolicies = []corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal}

// entryPerConnection bounds a way in's time per connection it opens (beside entryRungBase):
// a rung whose connections go unanswered ends when its budget does, not after a timeout each.
const (
	entryPerConnection = 20 * time.Millisecond
	entryRungBase      = 10 * time.Second
	// entryOvershoot: the last connection a budget lets start may take its whole timeout.
	entryOvershoot = time.Second
)

// entryNode is a node to enter by: its address of the family measured (--via loadbalancer has
// one, with no name: the load balancer, whose address is each copy's).
type entryNode struct {
	name, zone, addr string
}

// entryRun is one run of `ladder svc/NAME --via nodeport|loadbalancer`: agents in the
// Service's endpoints, a temporary NodePort (or LoadBalancer) copy of the Service per
// externalTrafficPolicy, and this process entering through every node's address (or the copy's
// load balancer address) with each, round after round.
type entryRun struct {
	o       *LadderOptions
	rep     *report.EntryReport
	timer   *cmdutil.PhaseTimer
	sr      *serviceRun
	family  string // "4" or "6"
	nodes   []entryNode
	nodeOf  report.NodeAddrs // every node's addresses
	sess    *session.Session
	copies  []*corev1.Service // by entryPolicies
	lbAddr  []string          // each copy's load balancer address (--via loadbalancer)
	lbNodes []string          // every node's name (--via loadbalancer: each may be sent some)
	// rounds holds each rung's results, at rungIndex.
	rounds  [][]*probes.EntryResult
	perRung time.Duration
	life    time.Duration
}

// entryFlags are the ladder's own flags that --via nodeport and loadbalancer use; they refuse the
// others.
var entryFlags = map[string]bool{"via": true, "connections-per-rung": true, "max-endpoints": true, "nodes": true, "zones": true,
	"repeat": true, "ip-family": true, "mode": true, "output": true, "dry-run": true, "start-timeout": true, "image": true,
	"image-pull-secret": true, "agent-resources": true, "fail-if": true, "help": true}

// noteViaFlags remembers the first of the command's own flags set that --via nodeport or
// loadbalancer does not use, for validateVia to refuse.
func (o *LadderOptions) noteViaFlags(f *pflag.FlagSet) {
	f.VisitAll(func(fl *pflag.Flag) { // in cobra's LocalFlags() set, Visit sees none set
		if fl.Changed && !entryFlags[fl.Name] && o.viaIgnored == "" {
			o.viaIgnored = fl.Name
		}
	})
}

// entering says whether --via enters from this machine (nodeport or loadbalancer).
func (o *LadderOptions) entering() bool {
	return o.Via == ViaNodePort || o.Via == ViaLoadBalancer
}

// validateVia checks --via and what it allows.
func (o *LadderOptions) validateVia() error {
	switch {
	case o.Via == "pod" || o.Via == "":
		return nil
	case o.Via != ViaNodePort && o.Via != ViaLoadBalancer:
		return fmt.Errorf("--via %q: want pod, nodeport or loadbalancer", o.Via)
	case o.viaIgnored != "":
		return fmt.Errorf("--%s: not with --via %s, whose client is this machine entering from outside (it takes --connections-per-rung, --max-endpoints, --repeat, --ip-family, and with nodeport --nodes and --zones)", o.viaIgnored, o.Via)
	case o.Service != "":
		return fmt.Errorf("--service: not with --via %s, whose DST is the Service (svc/NAME)", o.Via)
	case o.HostBaseline:
		return fmt.Errorf("--host-baseline: not with --via %s (its client is this machine, not a node)", o.Via)
	case o.IPFamily == "both":
		return fmt.Errorf("--ip-family both: --via %s enters by one family at a time (4 or 6; run it once for each)", o.Via)
	case o.Mode == session.ModePod:
		return fmt.Errorf("--mode pod: --via %s needs agents in the Service's own pods (ephemeral containers: --mode ephemeral or auto)", o.Via)
	case o.Output == "html" || o.Output == render.FormatOpenMetrics:
		return fmt.Errorf("-o %s: not with --via %s (text, json, yaml or junit)", o.Output, o.Via)
	case o.Via == ViaLoadBalancer && o.NodeSelector != "":
		return fmt.Errorf("--nodes: not with --via loadbalancer, whose load balancer chooses the nodes")
	case o.Via == ViaLoadBalancer && len(o.Zones) > 0:
		return fmt.Errorf("--zones: not with --via loadbalancer, whose load balancer chooses the nodes")
	}
	if _, name := o.serviceName(); name == "" {
		return fmt.Errorf("--via %s: DST %q must be a Service (svc/NAME or NAMESPACE/svc/NAME)", o.Via, o.DstArg)
	}
	return nil
}

func (o *LadderOptions) runEntry(ctx context.Context, start time.Time) error {
	r := &entryRun{o: o, rep: &report.EntryReport{APIVersion: report.APIVersion, Kind: v1alpha1.KindEntry, ToolVersion: version.Version,
		StartTime: start.UTC(), Via: o.Via, Rounds: o.Rounds}}
	r.timer = cmdutil.NewPhaseTimer(&r.rep.Timing, start)
	return o.Execute(ctx, start, r)
}

// Plan reads the Service, its endpoints and the nodes to enter by; it creates nothing.
func (r *entryRun) Plan(ctx context.Context) (err error) {
	o := r.o
	ns, name := o.serviceName()
	if err := access.CheckPermissions(ctx, o.Client, []string{ns}, access.ServicePermissions); err != nil {
		return err
	}
	o.Progress("reading Service %s/%s", ns, name)
	if r.sr, err = o.readService(ctx, nil, ns, name); err != nil {
		return err
	}
	if len(r.sr.svc.Spec.Selector) == 0 {
		return fmt.Errorf("--via %s: Service %s/%s has no selector: a temporary copy would have no endpoints", o.Via, ns, name)
	}
	if o.Via == ViaLoadBalancer {
		if err := wayin.CopyableLoadBalancer(r.sr.svc); err != nil {
			return fmt.Errorf("--via loadbalancer: %w", err)
		}
	}
	switch n := len(r.sr.ready); {
	case n == 0:
		return fmt.Errorf("--via %s: Service %s/%s has no ready endpoints", o.Via, ns, name)
	case n > o.MaxEndpoints:
		// An endpoint without an agent refuses its connections, and a node whose only
		// endpoints have none would read as one that drops the way in.
		return fmt.Errorf("--max-endpoints %d: --via %s needs an agent in every ready endpoint of Service %s/%s (%d)", o.MaxEndpoints, o.Via, ns, name, n)
	}
	r.rep.Service = r.sr.info
	r.family = entryFamily(o.IPFamily, r.sr.svc)
	r.rep.IPFamily = "IPv" + r.family
	if err := r.planNodes(ctx); err != nil {
		return err
	}
	r.timer.Phase("plan")
	return nil
}

// entryFamily is --ip-family's, else the Service's first family ("4" or "6").
func entryFamily(flag string, svc *corev1.Service) string {
	switch {
	case flag == "4" || flag == "6":
		return flag
	case len(svc.Spec.IPFamilies) > 0 && svc.Spec.IPFamilies[0] == corev1.IPv6Protocol:
		return "6"
	case len(svc.Spec.IPFamilies) == 0 && strings.Contains(svc.Spec.ClusterIP, ":"):
		return "6"
	}
	return "4"
}

// planNodes lists the nodes to enter by (ready, kept by --nodes and --zones, with an address
// of the family: an ExternalIP before an InternalIP; --via loadbalancer: the load balancer)
// and every node's addresses.
func (r *entryRun) planNodes(ctx context.Context) error {
	list, err := r.o.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes to enter by (--via %s needs list on nodes, cluster-wide): %w", r.o.Via, access.ForbiddenOr(err))
	}
	r.nodeOf = wayin.NodeAddrs(list.Items)
	for i := range list.Items {
		n := &list.Items[i]
		if r.o.Via == ViaLoadBalancer {
			r.lbNodes = append(r.lbNodes, n.Name)
			continue
		}
		p := placement.NodeFrom(n)
		why := r.o.filter.Excludes(p)
		addr := wayin.NodeAddress(n, r.family)
		switch {
		case why != "":
		case len(r.o.Zones) > 0 && !slices.Contains(r.o.Zones, p.Zone):
			why = "not in --zones " + strings.Join(r.o.Zones, ",")
		case !p.Ready:
			why = "not Ready"
		case addr == "":
			why = "no IPv" + r.family + " ExternalIP or InternalIP"
		default:
			r.nodes = append(r.nodes, entryNode{name: n.Name, zone: p.Zone, addr: addr})
			continue
		}
		r.rep.Warnings = append(r.rep.Warnings, fmt.Sprintf("node %s left out: %s", n.Name, why))
	}
	if r.o.Via == ViaLoadBalancer {
		r.nodes = []entryNode{{}}
	}
	if len(r.nodes) == 0 {
		return fmt.Errorf("--via nodeport: no node to enter by (%d nodes, none ready and kept by --nodes and --zones with an IPv%s address)", len(list.Items), r.family)
	}
	return nil
}

// PlannedFigures names the figures of every entry node, for --fail-if.
func (r *entryRun) PlannedFigures() map[string]string {
	var names []string
	for _, n := range r.nodes {
		if n.name != "" {
			names = append(names, n.name)
		}
	}
	if r.o.Via == ViaLoadBalancer {
		names = r.lbNodes // any node the load balancer may send connections to
	}
	return report.EntryPlannedFigures(r.o.Via, names)
}

// Open checks the permissions the endpoint agents and the copies need and opens the session.
func (r *entryRun) Open(ctx context.Context) (*session.Session, error) {
	o, ns := r.o, r.sr.svc.Namespace
	mode, _, err := o.ChooseMode(ctx, o.Mode, ns)
	if err != nil {
		return nil, err
	}
	if mode != session.ModeEphemeral {
		return nil, fmt.Errorf("--via %s needs agents in the Service's own pods: ephemeral containers, which are not allowed here", o.Via)
	}
	if err := o.CheckPullSecrets(ctx, &o.CommonOptions, ns); err != nil {
		return nil, err
	}
	r.sess = o.NewSession(mode)
	r.rep.Warnings = append(r.rep.Warnings, o.CleanStale(ctx, r.sess, ns)...)
	r.rep.Warnings = append(r.rep.Warnings, o.CleanStaleServices(ctx, ns, o.ServerNow())...)
	return r.sess, nil
}

// Start runs an agent in each endpoint, makes one NodePort (LoadBalancer) copy per policy, and
// waits until each node's port of the Cluster copy (each copy's load balancer) answers.
func (r *entryRun) Start(ctx context.Context) error {
	o := r.o
	r.perRung = entryRungBase + time.Duration(o.ConnectionsPerRung)*entryPerConnection + entryOvershoot
	// The waits before measuring, each up to --start-timeout: the copies' endpoints, then each
	// node's port, or each copy's address and its first answer.
	waits := len(entryPolicies) + len(r.nodes)
	if o.Via == ViaLoadBalancer {
		waits = 3 * len(entryPolicies)
	}
	r.life = time.Duration(o.Rounds*len(r.nodes)*len(entryPolicies))*r.perRung + time.Duration(waits+1)*o.StartTimeout + 60*time.Second
	o.Progress("starting agents in %s/%s's endpoints", r.sr.svc.Namespace, r.sr.svc.Name)
	if err := o.startEndpointAgents(ctx, r.sess, r.sr, r.life); err != nil {
		return err
	}
	if err := r.makeCopies(ctx); err != nil || r.sess.DryRun {
		return err
	}
	for _, c := range r.copies {
		if err := o.waitEndpoints(ctx, r.sr, c); err != nil {
			return err
		}
	}
	if err := r.waitLoadBalancers(ctx); err != nil {
		return err
	}
	if err := settle(ctx); err != nil {
		return err
	}
	r.waitWaysIn(ctx)
	r.timer.Phase("start-endpoints")
	return nil
}

// address is node n's way in through copy k (--via loadbalancer: copy k's address and port).
func (r *entryRun) address(n entryNode, k int) string {
	if r.o.Via == ViaLoadBalancer {
		return net.JoinHostPort(r.lbAddr[k], strconv.Itoa(int(r.copies[k].Spec.Ports[0].Port)))
	}
	return net.JoinHostPort(n.addr, strconv.Itoa(int(r.copies[k].Spec.Ports[0].NodePort)))
}

// Measure enters through every node with each policy in turn, round after round; a rung's
// connections run one after the other within its budget.
func (r *entryRun) Measure(ctx context.Context) (time.Duration, error) {
	began := time.Now()
	o := r.o
	r.rounds = make([][]*probes.EntryResult, len(r.nodes)*len(entryPolicies))
	for round := 1; round <= o.Rounds; round++ {
		for i, n := range r.nodes {
			for k := range r.copies {
				addr := r.address(n, k)
				o.Progress("round %d/%d: entering by %s (%s), externalTrafficPolicy %s", round, o.Rounds, n.label(), addr, entryPolicies[k])
				res, err := probes.Enter(ctx, probes.EntrySpec{Address: addr, Path: agent.PathWhoAmI, Token: r.sess.Token,
					Connections: o.ConnectionsPerRung, Budget: r.perRung - entryOvershoot})
				if err != nil {
					return 0, fmt.Errorf("entering by %s (%s): %w", n.label(), addr, err)
				}
				r.rounds[rungIndex(i, k)] = append(r.rounds[rungIndex(i, k)], res)
			}
		}
	}
	r.timer.Phase("measure")
	return time.Since(began), nil
}

// rungIndex is the place in entryRun.rounds of entry node i with policy k.
func rungIndex(i, k int) int { return i*len(entryPolicies) + k }

// Finish sums every rung's rounds.
func (r *entryRun) Finish(context.Context) {
	local := map[string]int{}
	for _, ep := range r.sr.measured {
		local[ep.Node]++
	}
	for i, n := range r.nodes {
		for k, pol := range entryPolicies {
			g := report.EntryRung{Policy: string(pol), Node: n.name, Zone: n.zone, LocalEndpoints: local[n.name], Address: r.address(n, k)}
			rounds := r.rounds[rungIndex(i, k)]
			for _, res := range rounds {
				report.AddEntry(&g, res, r.nodeOf)
				r.addClient(res)
			}
			report.SummarizeEntry(&g, rounds, r.nodeOf)
			if pol == corev1.ServiceExternalTrafficPolicyLocal && g.ConnectOtherNode != nil {
				r.rep.Warnings = append(r.rep.Warnings, fmt.Sprintf("Local via %s: %d connections answered on another node, which Local never forwards to: something on the way relays them", n.label(), g.ConnectOtherNode.Count))
			}
			r.rep.Rungs = append(r.rep.Rungs, g)
		}
	}
	r.rep.Summarize()
}

// addClient records the addresses this machine connected from.
func (r *entryRun) addClient(res *probes.EntryResult) {
	for _, c := range res.Answered {
		if c.Local != "" && !slices.Contains(r.rep.Client, c.Local) {
			r.rep.Client = append(r.rep.Client, c.Local)
		}
	}
}

func (r *entryRun) Closed() {}

func (r *entryRun) Output() cmdutil.RunOutput {
	return cmdutil.RunOutput{Timing: &r.rep.Timing, Timer: r.timer, Figures: r.rep.FigureValues, Checks: &r.rep.Checks,
		Write: func() error { return render.WriteEntry(r.o.Out, r.o.Output, r.rep) }, Err: r.rep.Answered}
}
