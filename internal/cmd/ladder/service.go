package ladder

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/path"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/policyplan"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TopologyModeAnnotation is the topology-aware routing annotation a temporary Service copies.
const TopologyModeAnnotation = "service.kubernetes.io/topology-mode"

// serviceRun measures a Service from every rung: its ClusterIP next to the pod IP (what the
// dataplane adds), and where its new connections land (what it does with zones). The latter
// runs agents in up to --max-endpoints of its ready endpoint pods, all on one port, behind a
// temporary Service with the same selector and traffic settings.
type serviceRun struct {
	svc      *corev1.Service
	port     corev1.ServicePort
	ready    []cmdutil.Endpoint
	measured []cmdutil.Endpoint
	// pods are the measured endpoints' pods; agentPort the port their agents listen on.
	pods      []*corev1.Pod
	agentPort int
	temp      *corev1.Service
	info      *report.LadderService
}

// serviceName returns the Service the ladder measures: --service, or DST when it names one.
func (o *LadderOptions) serviceName() (ns, name string) {
	arg := o.Service
	if arg == "" {
		arg = o.DstArg
	}
	return cmdutil.ServiceTarget(arg, o.Namespace)
}

// readService reads the Service and its ready endpoints (nothing is created), and makes the
// app's port behind the Service port the pod-IP side of the comparison (with a DST) unless
// --port is given.
func (o *LadderOptions) readService(ctx context.Context, dst *session.Target, ns, name string) (*serviceRun, error) {
	svc, err := o.Client.CoreV1().Services(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("reading Service %s/%s: %w", ns, name, access.ForbiddenOr(err))
	}
	sr := &serviceRun{svc: svc}
	if sr.port, err = tcpPort(svc); err != nil {
		return nil, err
	}
	if o.Port == 0 && dst != nil {
		o.Port = targetPort(sr.port, dst.Pod)
	}
	sr.info = &report.LadderService{Namespace: ns, Name: name, ClusterIP: svc.Spec.ClusterIP, Port: int(sr.port.Port),
		TrafficDistribution: cmdutil.Deref(svc.Spec.TrafficDistribution), TopologyMode: svc.Annotations[TopologyModeAnnotation]}
	// The ClusterIPs measured: each of a dual-stack Service's, or --ip-family's alone.
	switch measured := clusterIPs(svc, o.IPFamily); {
	case len(measured) == 0 && len(clusterIPs(svc, "")) > 0:
		return nil, fmt.Errorf("--ip-family %s: Service %s/%s has no IPv%s ClusterIP (it has %s)", o.IPFamily, ns, name, o.IPFamily, strings.Join(svc.Spec.ClusterIPs, ", "))
	case len(measured) > 1:
		sr.info.ClusterIPs = svc.Spec.ClusterIPs
	case len(measured) == 1:
		sr.info.ClusterIP = measured[0].ip
	}
	if p := svc.Spec.IPFamilyPolicy; p != nil {
		sr.info.IPFamilyPolicy = string(*p)
	}
	if p := svc.Spec.InternalTrafficPolicy; p != nil {
		sr.info.InternalTrafficPolicy = string(*p)
	}
	if sr.ready, err = cmdutil.ReadyEndpoints(ctx, o.Client, ns, name); err != nil {
		return nil, err
	}
	sr.info.ReadyEndpoints, sr.info.EndpointsByZone = len(sr.ready), countZones(sr.ready)
	return sr, nil
}

// startSpread starts what measuring where connections land needs, or says why it cannot run.
func (o *LadderOptions) startSpread(ctx context.Context, sess *session.Session, sr *serviceRun, lifetime time.Duration) error {
	switch {
	case sr.info.SpreadSkipped != "":
	case sess.Mode != session.ModeEphemeral:
		sr.info.SpreadSkipped = "where connections land needs agents in the Service's own pods: ephemeral containers (--mode ephemeral or auto)"
	case len(sr.svc.Spec.Selector) == 0:
		sr.info.SpreadSkipped = "the Service has no selector: a temporary copy would have no endpoints"
	case len(sr.ready) == 0:
		sr.info.SpreadSkipped = "the Service has no ready endpoints"
	default:
		return o.startEndpoints(ctx, sess, sr, lifetime)
	}
	return nil
}

// startEndpoints starts an agent in each chosen endpoint pod on one port, then the temporary
// Service, and waits until it routes to them.
func (o *LadderOptions) startEndpoints(ctx context.Context, sess *session.Session, sr *serviceRun, lifetime time.Duration) error {
	if err := o.startEndpointAgents(ctx, sess, sr, lifetime); err != nil {
		return err
	}
	temp := sr.copyOf("netbench-"+sess.RunID, corev1.ServiceTypeClusterIP)
	var err error
	if sr.temp, err = sess.CreateService(ctx, temp, lifetime); err != nil {
		return err
	}
	sr.info.TemporaryService = sr.temp.Name
	if sess.DryRun {
		return nil // no endpoint will come
	}
	return o.waitRouted(ctx, sr)
}

// copyOf is a temporary Service of type typ with the Service's selector and traffic settings,
// its port leading to the endpoint agents' port.
func (sr *serviceRun) copyOf(name string, typ corev1.ServiceType) *corev1.Service {
	temp := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: sr.svc.Namespace},
		Spec: corev1.ServiceSpec{Type: typ, Selector: sr.svc.Spec.Selector, TrafficDistribution: sr.svc.Spec.TrafficDistribution,
			InternalTrafficPolicy: sr.svc.Spec.InternalTrafficPolicy, IPFamilies: sr.svc.Spec.IPFamilies, IPFamilyPolicy: sr.svc.Spec.IPFamilyPolicy,
			Ports: []corev1.ServicePort{{Name: "agent", Protocol: corev1.ProtocolTCP, Port: sr.port.Port, TargetPort: intstr.FromInt(sr.agentPort)}}},
	}
	if m := sr.svc.Annotations[TopologyModeAnnotation]; m != "" {
		temp.Annotations = map[string]string{TopologyModeAnnotation: m}
	}
	return temp
}

// startEndpointAgents starts an agent in each chosen endpoint pod, all on one port, and waits
// until every one is ready.
func (o *LadderOptions) startEndpointAgents(ctx context.Context, sess *session.Session, sr *serviceRun, lifetime time.Duration) error {
	if err := o.endpointPods(ctx, sr); err != nil {
		return err
	}
	if sr.agentPort == 0 {
		sr.agentPort = policyplan.FreePort(sr.pods...) // one port for the whole Service
	}
	port := sr.agentPort
	sr.info.AgentPort, sr.info.MeasuredEndpoints = port, len(sr.measured)
	var agents []*session.Agent
	for i, ep := range sr.measured {
		t := &session.Target{Namespace: sr.svc.Namespace, Pod: sr.pods[i]}
		if err := cmdutil.CheckTarget(t, "", true); err != nil {
			return err
		}
		a, err := sess.Start(ctx, session.AgentSpec{Role: session.RoleEndpoint, Target: t, Serve: true, Lifetime: lifetime, Port: port,
			Suffix: strconv.Itoa(i + 1), Identity: agent.Identity{Pod: ep.Pod, Node: ep.Node, Zone: ep.Zone}})
		if err != nil {
			return fmt.Errorf("starting the endpoint agent in %s/%s: %w", t.Namespace, t.Pod.Name, err)
		}
		agents = append(agents, a)
	}
	// All at once: each agent's lease runs from its start, and waiting for them one by one
	// could let the last one's run out before its renewals begin.
	g, gctx := errgroup.WithContext(ctx)
	for _, a := range agents {
		g.Go(func() error { return a.WaitReady(gctx) })
	}
	return g.Wait()
}

// endpointPods chooses the endpoints to measure and reads their pods (once).
func (o *LadderOptions) endpointPods(ctx context.Context, sr *serviceRun) error {
	if sr.pods != nil {
		return nil
	}
	sr.measured = chooseEndpoints(sr.ready, o.MaxEndpoints)
	for _, ep := range sr.measured {
		p, err := o.Client.CoreV1().Pods(sr.svc.Namespace).Get(ctx, ep.Pod, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("endpoint pod %s/%s: %w", sr.svc.Namespace, ep.Pod, access.ForbiddenOr(err))
		}
		sr.pods = append(sr.pods, p)
	}
	return nil
}

// waitRouted waits until the temporary Service's EndpointSlices list every ready endpoint with
// the topology hints the Service's own carry, then gives kube-proxy (or the dataplane) a moment
// to program them. Hints that do not come within hintsWait are a caveat on the spread, not an
// error: the controller may legitimately decide otherwise for the copy.
func (o *LadderOptions) waitRouted(ctx context.Context, sr *serviceRun) error {
	if err := o.waitEndpoints(ctx, sr, sr.temp); err != nil {
		return err
	}
	differ := ""
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, hintsWait, true, func(ctx context.Context) (bool, error) {
		var err error
		differ, err = o.copyHintsDiffer(ctx, sr)
		return err == nil && differ == "", err
	})
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err != nil {
		sr.info.SpreadCaveat = fmt.Sprintf("the temporary Service's EndpointSlices did not get the Service's topology hints within %s (%s): its connections may land differently", hintsWait, differ)
	}
	return settle(ctx)
}

// settle gives the nodes' dataplane ServiceSettle to route a Service whose endpoints are ready.
func settle(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(ServiceSettle):
		return nil
	}
}

// waitEndpoints waits until each family's EndpointSlices of temp list every ready endpoint.
func (o *LadderOptions) waitEndpoints(ctx context.Context, sr *serviceRun, temp *corev1.Service) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, o.StartTimeout, true, func(ctx context.Context) (bool, error) {
		for _, f := range addressTypes(temp) {
			got, err := cmdutil.ReadyEndpointsOf(ctx, o.Client, temp.Namespace, temp.Name, f)
			if err != nil || len(got) < len(sr.ready) {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("the temporary Service %s/%s has no ready endpoints within --start-timeout %s", temp.Namespace, temp.Name, o.StartTimeout)
	}
	return cmp.Or(ctx.Err(), err)
}

// copyHintsDiffer names the first endpoint whose hints in the temporary Service's
// EndpointSlices (each family's) differ from the Service's own ("" if none).
func (o *LadderOptions) copyHintsDiffer(ctx context.Context, sr *serviceRun) (string, error) {
	for _, f := range addressTypes(sr.temp) {
		eps, err := cmdutil.ReadyEndpointsOf(ctx, o.Client, sr.temp.Namespace, sr.temp.Name, f)
		if err != nil {
			return "", err
		}
		if d := hintsDiffer(sr.ready, eps); d != "" {
			return strings.TrimSpace(string(f) + " " + d), nil
		}
	}
	return "", nil
}

// hintsDiffer names the first endpoint pod whose hints in have differ from want's ("" if none).
func hintsDiffer(want, have []cmdutil.Endpoint) string {
	got := map[string]string{}
	for _, e := range have {
		got[e.Pod] = e.Hints
	}
	for _, e := range want {
		if h, ok := got[e.Pod]; ok && h != e.Hints {
			return fmt.Sprintf("endpoint %s: %q, the Service's %q", e.Pod, cmp.Or(h, "none"), cmp.Or(e.Hints, "none"))
		}
	}
	return ""
}

// hintsWait bounds the wait for a temporary Service's EndpointSlices to carry the topology hints
// of the Service it copies (a variable for tests).
var hintsWait = 15 * time.Second

// ServiceSettle is how long the ladder waits after a temporary Service has its endpoints, for
// the nodes' dataplane to route it.
const ServiceSettle = 2 * time.Second

// chooseEndpoints takes up to n endpoints, alternating over zones so that each zone is seen.
func chooseEndpoints(eps []cmdutil.Endpoint, n int) []cmdutil.Endpoint {
	byZone := map[string][]cmdutil.Endpoint{}
	var zones []string
	for _, e := range eps {
		if byZone[e.Zone] == nil {
			zones = append(zones, e.Zone)
		}
		byZone[e.Zone] = append(byZone[e.Zone], e)
	}
	sort.Strings(zones)
	var out []cmdutil.Endpoint
	for len(out) < n && len(out) < len(eps) {
		for _, z := range zones {
			if len(byZone[z]) > 0 && len(out) < n {
				out = append(out, byZone[z][0])
				byZone[z] = byZone[z][1:]
			}
		}
	}
	return out
}

func countZones(eps []cmdutil.Endpoint) map[string]int {
	m := map[string]int{}
	for _, e := range eps {
		m[e.Zone]++
	}
	return m
}

// serviceProbes measure through the Service from a rung: each of its ClusterIPs (a dual-stack
// Service's two families) on the Service port, against the app, to set beside the app-* probes
// on the pod IP, and, when endpoint agents run, where new connections to each land.
func (o *LadderOptions) serviceProbes(sr *serviceRun) []agent.ProbeSpec {
	pr := path.Profiles[o.Profile]
	port := strconv.Itoa(int(sr.port.Port))
	var out []agent.ProbeSpec
	for _, c := range clusterIPs(sr.svc, o.IPFamily) {
		addr := net.JoinHostPort(c.ip, port)
		h, nc := pr.Http, pr.HttpNewConn
		h.Name, h.URL = "svc-http"+c.suffix, "http://"+addr+o.HTTPPath
		nc.Name, nc.URL = "svc-http-new-conn"+c.suffix, "http://"+addr+o.HTTPPath
		if o.Duration > 0 {
			h.DurationSeconds, nc.DurationSeconds = o.Duration.Seconds(), o.Duration.Seconds()
		}
		out = append(out, agent.ProbeSpec{Kind: agent.ProbeTCPRTT, Name: "svc-tcp-rtt" + c.suffix, Address: addr, Count: pr.RttCount, IntervalMillis: pr.RttInterval}, h, nc)
	}
	if sr.temp != nil {
		for _, c := range clusterIPs(sr.temp, o.IPFamily) {
			out = append(out, agent.ProbeSpec{Kind: agent.ProbeSpread, Name: report.SpreadProbe + c.suffix,
				Address: net.JoinHostPort(c.ip, port), Count: o.ConnectionsPerRung, Direct: sr.direct(c.ip)})
		}
	}
	return out
}

func tcpPort(svc *corev1.Service) (corev1.ServicePort, error) {
	for _, p := range svc.Spec.Ports {
		if p.Protocol == "" || p.Protocol == corev1.ProtocolTCP {
			return p, nil
		}
	}
	return corev1.ServicePort{}, fmt.Errorf("no TCP port to measure on Service %s/%s", svc.Namespace, svc.Name)
}

// targetPort resolves a Service port's target on a pod (a number, or a named container port).
func targetPort(sp corev1.ServicePort, p *corev1.Pod) int {
	switch {
	case sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal > 0:
		return int(sp.TargetPort.IntVal)
	case sp.TargetPort.Type == intstr.String:
		for _, c := range p.Spec.Containers {
			for _, cp := range c.Ports {
				if cp.Name == sp.TargetPort.StrVal {
					return int(cp.ContainerPort)
				}
			}
		}
		return 0
	}
	return int(sp.Port)
}
