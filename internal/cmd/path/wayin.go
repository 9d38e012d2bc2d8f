package path

import (
	"cmp"
	"context"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/http/httpproxy"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/internal/policyplan"
	"github.com/kubectl-netbench/kubectl-netbench/internal/render"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/internal/wayin"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// Here is SRC for this machine, outside the cluster (path here DST --via …).
const Here = "here"

// The ways in --via takes.
const (
	ViaNodePort     = report.ViaNodePort
	ViaLoadBalancer = report.ViaLoadBalancer
)

// wayInRun is one run of `path here DST --via nodeport|loadbalancer`: a server agent in DST's
// pod behind a temporary NodePort (or LoadBalancer) Service whose one endpoint it is, and this
// process, outside the cluster, running the client's probes through the way in.
type wayInRun struct {
	o      *PathOptions
	rep    *report.PathReport
	timer  *cmdutil.PhaseTimer
	dst    *session.Target
	family string // "4" or "6"
	podIP  string // DST's address of the family
	entry  string // the node entered by (--via nodeport)
	nodeOf report.NodeAddrs
	sess   *session.Session
	srv    *session.Agent
	svc    *corev1.Service
	orig   *corev1.Service // --via loadbalancer: DST, a Service of type LoadBalancer
	host   string          // the address entered (node or load balancer)
	port   int
	probes []agent.ProbeSpec
	col    *collected
}

// PlannedFigures are the probes' figures.
func (r *wayInRun) PlannedFigures() map[string]string {
	return report.PlannedFigures(r.o.wayInProbes())
}

// wayInProbes are the probes of the way in: as to a pod, less ICMP, which ends at the node or
// load balancer entered, not at the pod (validateWayIn refuses loaded-rtt, whose ICMP would).
func (o *PathOptions) wayInProbes() []agent.ProbeSpec {
	probes, _ := o.ProbeSpecs("")
	return slices.DeleteFunc(probes, func(p agent.ProbeSpec) bool { return p.Kind == agent.ProbeICMP })
}

// Plan resolves DST, its address of the family and the node to enter by; nothing is created.
func (r *wayInRun) Plan(ctx context.Context) (err error) {
	o := r.o
	o.Progress("resolving %s", o.DstArg)
	if r.dst, err = o.Resolve(ctx, o.DstArg, o.DstContainer, false); err != nil {
		return fmt.Errorf("DST: %w", err)
	}
	r.rep.Destination = o.Endpoint(ctx, r.dst)
	addrs, err := DstAddrs(o.IPFamily, r.dst)
	if err != nil {
		return err
	}
	r.podIP, r.family = addrs[0].String(), map[bool]string{true: "4", false: "6"}[addrs[0].Is4()]
	r.rep.IPFamily = "IPv" + r.family
	r.rep.Source = report.Endpoint{External: "this machine"}
	if err := r.planNodes(ctx); err != nil {
		return err
	}
	if err := r.readLoadBalancer(ctx); err != nil {
		return err
	}
	r.rep.Warnings = append(r.rep.Warnings, cmdutil.TargetWarnings(r.dst)...)
	r.timer.Phase("resolve")
	return nil
}

// readLoadBalancer reads DST's Service for --via loadbalancer: only a Service of type
// LoadBalancer, whose load balancer the temporary one copies (class, source ranges, scheme and
// kind), so that it is reached as the original is; a new load balancer for anything else could
// be open to whoever the cloud's defaults admit.
func (r *wayInRun) readLoadBalancer(ctx context.Context) (err error) {
	o := r.o
	if o.Via != ViaLoadBalancer {
		return nil
	}
	ns, name := cmdutil.ServiceTarget(o.DstArg, o.Namespace)
	if name == "" {
		return fmt.Errorf("--via loadbalancer: DST %s must be a Service of type LoadBalancer (svc/NAME), whose load balancer's kind and source ranges the temporary one takes", o.DstArg)
	}
	if r.orig, err = o.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
		return fmt.Errorf("reading Service %s/%s: %w", ns, name, access.ForbiddenOr(err))
	}
	if err := wayin.CopyableLoadBalancer(r.orig); err != nil {
		return fmt.Errorf("--via loadbalancer: %w", err)
	}
	return nil
}

// planNodes reads every node's addresses (to say whose address the pod saw), and with --via
// nodeport the node to enter by: --entry-node, else DST's own.
func (r *wayInRun) planNodes(ctx context.Context) error {
	o := r.o
	list, err := o.Client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing nodes (path here needs list on nodes, cluster-wide: the node to enter by, and whose address the pod saw): %w", access.ForbiddenOr(err))
	}
	r.nodeOf = wayin.NodeAddrs(list.Items)
	r.entry = cmp.Or(o.EntryNode, r.dst.Pod.Spec.NodeName)
	enter := r.entry
	if fault.On(fault.WayInEntryIgnored) {
		enter = r.dst.Pod.Spec.NodeName
	}
	var entry *corev1.Node
	for i := range list.Items {
		if list.Items[i].Name == enter {
			entry = &list.Items[i]
		}
	}
	r.rep.Path = report.PathClass{Class: v1alpha1.Ingress, Reason: fmt.Sprintf("from this machine, outside the cluster, through a temporary LoadBalancer Service's address (externalTrafficPolicy %s)", o.ExternalTrafficPolicy)}
	if o.Via == ViaLoadBalancer {
		r.entry = ""
		return nil
	}
	switch {
	case entry == nil:
		return fmt.Errorf("--entry-node %s: no such node", r.entry)
	case o.ExternalTrafficPolicy == string(corev1.ServiceExternalTrafficPolicyLocal) && r.entry != r.dst.Pod.Spec.NodeName:
		return fmt.Errorf("--entry-node %s with --external-traffic-policy Local: a NodePort with Local reaches only endpoints on the node entered, and DST %s/%s runs on %s (enter by it, or use Cluster to measure the extra hop)",
			r.entry, r.dst.Namespace, r.dst.Pod.Name, r.dst.Pod.Spec.NodeName)
	}
	if r.host = wayin.NodeAddress(entry, r.family); r.host == "" {
		return fmt.Errorf("node %s has no IPv%s ExternalIP or InternalIP to enter by", r.entry, r.family)
	}
	r.rep.Path.Reason = fmt.Sprintf("from this machine, outside the cluster, through node %s's NodePort (externalTrafficPolicy %s)", r.entry, o.ExternalTrafficPolicy)
	return grpcProxied(o.wayInProbes(), r.host)
}

// Open checks that the server agent can join DST's pod (an ephemeral container) and opens the
// session.
func (r *wayInRun) Open(ctx context.Context) (*session.Session, error) {
	o, ns := r.o, r.dst.Namespace
	mode, _, err := o.ChooseMode(ctx, session.ModeEphemeral, ns)
	if err == nil {
		err = access.CheckPermissions(ctx, o.Client, []string{ns}, access.WayInPermissions)
	}
	if err == nil {
		err = o.CheckPullSecrets(ctx, &o.CommonOptions, ns)
	}
	if err != nil {
		return nil, err
	}
	r.sess = o.NewSession(mode)
	r.rep.Mode = mode
	r.rep.Warnings = append(r.rep.Warnings, o.CleanStale(ctx, r.sess, ns)...)
	r.rep.Warnings = append(r.rep.Warnings, o.CleanStaleServices(ctx, ns, o.ServerNow())...)
	return r.sess, nil
}

// lifetime bounds the run's agent and Service: measuring, and the waits before it, each up to
// --start-timeout (the agent, the Service's endpoints or load balancer, its first answer).
func (r *wayInRun) lifetime() time.Duration {
	measuring := time.Duration(ExpectedSeconds(r.o.wayInProbes()) * float64(r.o.Rounds) * float64(time.Second))
	return measuring + 4*r.o.StartTimeout + 30*time.Second
}

// Start runs the server agent in DST's pod, the temporary Service in front of it, and waits
// until the way in answers.
func (r *wayInRun) Start(ctx context.Context) (err error) {
	o := r.o
	o.Progress("starting the server agent next to %s/%s", r.dst.Namespace, r.dst.Pod.Name)
	// Its identity is what it answers on agent.PathWhoAmI: the way in's first answer names it.
	id := agent.Identity{Pod: r.dst.Pod.Name, Node: r.dst.Pod.Spec.NodeName, Zone: r.rep.Destination.Zone}
	spec := session.AgentSpec{Role: session.RoleServer, Target: r.dst, Serve: true, Lifetime: r.lifetime(), Identity: id}
	if r.sess.DryRun { // no agent to choose a free port and say it: the Service needs one
		spec.Port = policyplan.FreePort(r.dst.Pod)
	}
	if r.srv, err = r.sess.Start(ctx, spec); err != nil {
		return fmt.Errorf("starting the server agent: %w", err)
	}
	if err := r.srv.WaitReady(ctx); err != nil {
		return err
	}
	if err := r.samePod(ctx); err != nil {
		return err
	}
	SetAgentName(&r.rep.Destination, r.srv)
	r.rep.Destination.AgentIP = r.podIP
	r.timer.Phase("start-server")
	if err := r.makeService(ctx); err != nil || r.sess.DryRun {
		return err
	}
	if err := r.waitWayIn(ctx); err != nil {
		return err
	}
	r.timer.Phase("start-way-in")
	return nil
}

// Rehearse: a dry run sends the server agent, the Service and its endpoints in Start; the
// client runs in this process and creates nothing.
func (r *wayInRun) Rehearse(context.Context) error { return nil }

// Measure runs the client's probes in this process, through the way in.
func (r *wayInRun) Measure(ctx context.Context) (time.Duration, error) {
	since := time.Now()
	o := r.o
	r.probes = o.wayInProbes()
	job := agent.Job{APIVersion: agent.APIVersion, Done: true, Host: r.host, Port: r.port, Token: r.sess.Token, Probes: RepeatProbes(r.probes, o.Rounds)}
	if !r.dst.HostNetwork() {
		job.ServerApp = cmdutil.AppIDs(r.dst)
	}
	o.Progress("measuring from this machine through %s to %s/%s", r.rep.WayIn.Address, r.dst.Namespace, r.dst.Pod.Name)
	col, err := o.collect(ctx, runHere(job), r.srv, nil, r.dst)
	if err == nil {
		err = col.Missing(RepeatProbes(r.probes, o.Rounds), hereClient{})
	}
	if err != nil {
		return 0, err
	}
	r.col = col
	r.timer.Phase("measure")
	return time.Since(since), nil
}

// Finish puts the results in the report, judged against DST's CPU limit (the client is this
// machine, whose load the run does not know).
func (r *wayInRun) Finish(context.Context) {
	if r.col == nil {
		return
	}
	o := r.o
	o.fillResults(r.rep, r.probes, nil, r.col)
	fillRounds(o, r.rep, r.col, &session.Agent{Pod: "this machine"}, r.probes, nil)
	// The client is this process: its footprint would be the plugin's whole, not a probe's.
	delete(r.rep.AgentFootprint, "client")
	at := report.Agents{ServerInApp: !r.dst.HostNetwork(), ServerPod: cmdutil.AppContainers(r.dst), Server: r.dst.CPULimitCores()}
	for _, res := range allResults(r.rep) {
		report.Judge(res, at)
		res.IPFamily = "IPv" + r.family
	}
	r.rep.Summarize()
	if slices.Contains(o.Probes, "rtt") {
		r.rep.Skipped = append(r.rep.Skipped, "icmp: an echo ends at the address entered (a node's or the load balancer's), not at the pod")
	}
}

// samePod reads DST's pod again once its agent is ready: the pod the agent joined must be the
// one planned (same UID), and the endpoint its address now.
func (r *wayInRun) samePod(ctx context.Context) error {
	p, err := r.o.Client.CoreV1().Pods(r.dst.Namespace).Get(ctx, r.dst.Pod.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading pod %s/%s again: %w", r.dst.Namespace, r.dst.Pod.Name, access.ForbiddenOr(err))
	}
	if p.UID != r.dst.Pod.UID || !slices.Contains(session.PodIPs(p), r.podIP) {
		return fmt.Errorf("pod %s/%s was replaced or readdressed while its agent started (%s, now %v): run again", r.dst.Namespace, r.dst.Pod.Name, r.podIP, session.PodIPs(p))
	}
	return nil
}

func (r *wayInRun) Closed() {}

func (r *wayInRun) Output() cmdutil.RunOutput {
	return cmdutil.RunOutput{Timing: &r.rep.Timing, Timer: r.timer, Figures: r.rep.FigureValues, Checks: &r.rep.Checks,
		Write: func() error { return render.Write(r.o.Out, r.o.Output, r.rep) }}
}

// IsHere says whether SRC is this machine.
func IsHere(src string) bool { return strings.EqualFold(src, Here) }

// grpcProxied refuses the grpc probe when gRPC, in this process, would reach host through a
// proxy of the environment (HTTPS_PROXY without host in NO_PROXY): the proxy's path would be
// measured, with the run's token handed to it.
func grpcProxied(probes []agent.ProbeSpec, host string) error {
	if !slices.ContainsFunc(probes, func(p agent.ProbeSpec) bool { return p.Kind == agent.ProbeGRPC }) {
		return nil
	}
	addr := host
	if strings.Contains(host, ":") {
		addr = "[" + host + "]"
	}
	proxy, err := httpproxy.FromEnvironment().ProxyFunc()(&url.URL{Scheme: "https", Host: addr})
	if err != nil || proxy == nil {
		return nil
	}
	return fmt.Errorf("--probes grpc: gRPC from this machine to %s would go through the proxy %s (HTTPS_PROXY): add that address to NO_PROXY, or leave grpc out of --probes", addr, proxy.Redacted())
}
