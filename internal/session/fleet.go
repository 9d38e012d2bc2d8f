package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// RoleMesh is an agent of a fleet: it serves its peers and runs the jobs the plugin posts.
const RoleMesh Role = "mesh"

// FleetSpec says where a fleet's agents go: one per listed node, in Namespace.
type FleetSpec struct {
	Namespace string
	Nodes     []string
	// Hostnames holds each node's kubernetes.io/hostname label, which selects the nodes in one
	// term (a node field selector takes one name only); nodes without it get a term each.
	Hostnames   map[string]string
	Tolerations []corev1.Toleration
	// Port every agent listens on (its pod's own IP, so one port serves every node).
	Port int
	// Lifetime bounds every agent: each stops serving by now + Lifetime whatever happens.
	Lifetime time.Duration
	// Lease, when set, stops an agent serving unless the plugin renews it within each such
	// period; the fleet renews it every Lease/3 until the session closes.
	Lease time.Duration
	// IPFamily, 4 or 6, is the family of the members' addresses jobs aim at ("": each pod's
	// primary).
	IPFamily string
}

// Member is the fleet's agent on one node: IP its pod's address jobs aim at (of the fleet's
// family), IPs all of them.
type Member struct {
	Node, Pod, IP string
	IPs           []string
	Ready         bool
	// Problem says why the agent is not ready (the pod's waiting reason, unschedulable, …).
	Problem string
	created time.Time // the pod's creation time
}

// Fleet is a run's agents on many nodes, placed by Kubernetes: one DaemonSet whose pods serve
// their peers and run the jobs the plugin posts through the API server's pod proxy. One watch
// follows every pod; the cost in API calls grows with the nodes, never with their pairs beyond
// the one call per measured pair (and one per agent per lease renewal). Only the DaemonSet's
// own agents are members (distrust): only they are sent jobs, the token or lease renewals,
// and jobs only measure members. The session's Close deletes it.
type Fleet struct {
	s        *Session
	Spec     FleetSpec
	Name     string
	NotAfter time.Time
	// UID is the DaemonSet's, set once it is created: a member's pod names it as its controller.
	UID types.UID
	// template is the DaemonSet's pod spec: a member's pod runs its agent container unchanged.
	template corev1.PodSpec
	Members  map[string]*Member // by node
	// mu guards Members while the watch updates them and lease renewals read them.
	mu    sync.Mutex
	watch watch.Interface
}

// ErrFleetNotReady means no agent of the fleet became ready in time.
var ErrFleetNotReady = errors.New("the agents did not start")

// StartFleet creates the fleet's DaemonSet (after opening the watch on its pods, so that no
// pod goes unseen). Nothing is left behind when it fails; once it succeeds, Close owns it.
func (s *Session) StartFleet(ctx context.Context, spec FleetSpec) (*Fleet, error) {
	f := &Fleet{s: s, Spec: spec, Name: fmt.Sprintf("netbench-%s-%s", s.RunID, RoleMesh),
		NotAfter: s.Now().Add(spec.Lifetime).Truncate(time.Second).Add(time.Second), Members: map[string]*Member{}}
	for _, n := range spec.Nodes {
		f.Members[n] = &Member{Node: n, Problem: "no pod yet"}
	}
	if err := s.begin(); err != nil {
		return nil, err
	}
	defer s.creating.Done()
	if !s.DryRun {
		if err := f.rewatch(ctx); err != nil {
			return nil, err
		}
	}
	ds := f.daemonSet(f.s.trust(ctx))
	f.template = ds.Spec.Template.Spec
	created, err := s.Client.AppsV1().DaemonSets(spec.Namespace).Create(ctx, ds, metav1.CreateOptions{DryRun: s.dryRunAll()})
	if err == nil && s.DryRun {
		s.plan(VerbCreate, fmt.Sprintf("the agents on %d nodes", len(spec.Nodes)), created)
		return f, nil // no pod, no watch, no lease
	}
	if mayExist(ctx, err) && !s.DryRun {
		s.mu.Lock()
		s.fleets = append(s.fleets, f)
		s.mu.Unlock()
	}
	if err != nil {
		if f.watch != nil {
			f.watch.Stop()
		}
		return nil, access.Refusal(ctx, s.Client, err, access.Refused{Doing: fmt.Sprintf("creating DaemonSet %s/%s", spec.Namespace, f.Name),
			Need: access.Permission{Verb: "create", Resource: "daemonsets", Group: "apps"}, Namespace: spec.Namespace})
	}
	f.mu.Lock()
	f.UID = created.UID
	f.mu.Unlock()
	s.mu.Lock()
	s.fleets = append(s.fleets, f)
	s.mu.Unlock()
	f.keepLeases()
	return f, nil
}

// rewatch lists the fleet's pods (recording their state) and watches them from that list's
// version: the first time before the DaemonSet exists, again when a watch ends early.
func (f *Fleet) rewatch(ctx context.Context) error {
	pods := f.s.Client.CoreV1().Pods(f.Spec.Namespace)
	opts := metav1.ListOptions{LabelSelector: RunIDLabel + "=" + f.s.RunID + "," + RoleLabel + "=" + string(RoleMesh)}
	for {
		list, err := pods.List(ctx, opts)
		if err != nil {
			return fmt.Errorf("listing the agents' pods: %w", access.ForbiddenOr(err))
		}
		for i := range list.Items {
			f.update(&list.Items[i])
		}
		if list.Continue == "" {
			opts.ResourceVersion, opts.Continue = list.ResourceVersion, ""
			break
		}
		opts.Continue = list.Continue
	}
	if f.watch != nil {
		f.watch.Stop()
	}
	w, err := pods.Watch(ctx, opts)
	if err != nil {
		return fmt.Errorf("watching the agents' pods: %w", access.ForbiddenOr(err))
	}
	f.watch = w
	return nil
}

func (f *Fleet) daemonSet(trust []string) *appsv1.DaemonSet {
	s, port := f.s, f.Spec.Port
	labels := s.Labels(RoleMesh)
	pod := agentPod("", f.Spec.Namespace, "", labels, f.Spec.Lifetime)
	pod.Spec.RestartPolicy, pod.Spec.ActiveDeadlineSeconds = corev1.RestartPolicyAlways, nil // what a DaemonSet allows
	pod.Spec.Tolerations = f.Spec.Tolerations
	pod.Spec.ImagePullSecrets = slices.Clone(f.s.PullSecrets)
	pod.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = f.nodeTerms()
	c := &pod.Spec.Containers[0]
	c.Image, c.SecurityContext = s.Image, podContext(restrictedContext())
	c.Args = []string{"serve", "--listen", ":" + strconv.Itoa(port), "--ip", "$(POD_IPS)", "--not-after", f.NotAfter.UTC().Format(time.RFC3339),
		"--token-sha256", agent.TokenDigest(s.Token), "--jobs", "--idle-when-done", "--pod", "$(POD_NAME)", "--node", "$(NODE_NAME)"}
	if f.Spec.Lease > 0 {
		c.Args = append(c.Args, "--lease", f.Spec.Lease.String())
	}
	c.Args = append(c.Args, trust...)
	c.Env = append([]corev1.EnvVar{fieldEnv("POD_IP", "status.podIP"), fieldEnv("POD_IPS", "status.podIPs"), fieldEnv("POD_NAME", "metadata.name"), fieldEnv("NODE_NAME", "spec.nodeName")}, faultEnv()...)
	c.Ports = []corev1.ContainerPort{{Name: "netbench", ContainerPort: int32(port), Protocol: corev1.ProtocolTCP}}
	c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}},
		PeriodSeconds: 1, FailureThreshold: 1}
	SetResources(c, s.Resources)
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Name: f.Name, Namespace: f.Spec.Namespace, Labels: labels,
			Annotations: map[string]string{NotAfterAnnotation: f.NotAfter.UTC().Format(time.RFC3339)}},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{RunIDLabel: s.RunID, RoleLabel: string(RoleMesh)}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec},
		},
	}
}

// nodeTerms select exactly the fleet's nodes: one term on the hostname label for all that carry
// it, one node-name term for each that does not.
func (f *Fleet) nodeTerms() []corev1.NodeSelectorTerm {
	var hosts []string
	var terms []corev1.NodeSelectorTerm
	for _, n := range f.Spec.Nodes {
		if h := f.Spec.Hostnames[n]; h != "" {
			hosts = append(hosts, h)
			continue
		}
		terms = append(terms, corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{n}}}})
	}
	if len(hosts) > 0 {
		terms = append(terms, corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: hosts}}})
	}
	return terms
}

func fieldEnv(name, path string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: path}}}
}

// WaitReady follows the pods until every member is ready, every member not ready has a
// problem it will not recover from, or timeout passes; progress is told the count as it grows.
// It fails only when no member is ready at all.
func (f *Fleet) WaitReady(ctx context.Context, timeout time.Duration, progress func(ready, total int)) error {
	if f.s.DryRun {
		return nil // nothing runs
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	rewatches := 0
	for !f.settled() {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return f.notReady(ctx, fmt.Sprintf("after %s", timeout))
		case ev, ok := <-f.watch.ResultChan():
			if !ok || ev.Type == watch.Error {
				if rewatches++; rewatches > 5 {
					return f.notReady(ctx, "(the watch on their pods kept ending)")
				}
				if err := f.rewatch(ctx); err != nil {
					return err
				}
				continue
			}
			if p, isPod := ev.Object.(*corev1.Pod); isPod && f.apply(ev.Type, p) {
				progress(f.readyCount(), len(f.Members))
			}
		}
	}
	if f.readyCount() == 0 {
		return f.notReady(ctx, "")
	}
	return nil
}

// ErrNotAMember means a job would go to, or measure, something that is not a ready agent of
// the fleet.
var ErrNotAMember = errors.New("not a ready agent of this run")

// ErrMemberFamily means the target agent has no address of the family a probe measures.
var ErrMemberFamily = errors.New("no address of that family")

// Run posts a job to the agent on node from, aimed at the agent on node to (the job's host and
// port are set to that agent's, an IPv6 twin's (named *-v6) host to its IPv6 address, and the job
// may name no other target), and returns its results; an error event of the job becomes the
// error.
func (f *Fleet) Run(ctx context.Context, from, to string, job agent.Job) ([]*agent.ProbeResult, error) {
	src, dst := f.Members[from], f.Members[to]
	switch {
	case src == nil || !src.Ready:
		return nil, fmt.Errorf("the agent on %s: %w", from, ErrNotAMember)
	case dst == nil || !dst.Ready:
		return nil, fmt.Errorf("the agent on %s: %w", to, ErrNotAMember)
	}
	job.Host, job.Port = dst.IP, f.Spec.Port
	var probes []agent.ProbeSpec
	var dropped []string
	for _, p := range job.Probes {
		if p.Address != "" || p.URL != "" || p.Host != "" {
			return nil, fmt.Errorf("probe %s aims at %s%s%s: %w", p.Label(), p.Address, p.URL, p.Host, ErrNotAMember)
		}
		if strings.HasSuffix(p.Label(), v1alpha1.IPv6ProbeSuffix) {
			if p.Host = familyIP(dst.IPs, "6"); p.Host == "" {
				dropped = append(dropped, p.Label())
				continue // the other family's probes still run
			}
		}
		probes = append(probes, p)
	}
	var errs []error
	if len(dropped) > 0 {
		errs = append(errs, &ProbeError{Probe: strings.Join(dropped, ", "), Err: fmt.Errorf("%w: the agent on %s has no IPv6 address (it has %s)", ErrMemberFamily, to, strings.Join(dst.IPs, ", "))})
	}
	if job.Probes = probes; len(probes) == 0 {
		return nil, errors.Join(errs...)
	}
	body, err := json.Marshal(job)
	if err != nil {
		return nil, err
	}
	out, err := f.s.Request(ctx, f.Spec.Namespace, src.Pod, f.Spec.Port, "POST", agent.PathJob, body)
	if err != nil {
		return nil, fmt.Errorf("the agent on %s: %w", from, err)
	}
	results, failed := jobResults(out)
	return results, errors.Join(append(errs, failed...)...)
}

// ProbeError is one probe's failure in a fleet job (the agent's error event, or a probe the
// fleet could not aim).
type ProbeError struct {
	Probe string
	Err   error
}

func (e *ProbeError) Error() string { return e.Probe + ": " + e.Err.Error() }
func (e *ProbeError) Unwrap() error { return e.Err }

// jobResults reads a job's answer: its result events, and its error events (each a
// *ProbeError when it names its probe).
func jobResults(out []byte) ([]*agent.ProbeResult, []error) {
	var results []*agent.ProbeResult
	var errs []error
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		ev, err := agent.DecodeEvent([]byte(line))
		switch {
		case err != nil:
			return results, append(errs, fmt.Errorf("the agent's answer: %w", err))
		case ev.Type == agent.EventResult && ev.Result != nil:
			results = append(results, ev.Result)
		case ev.Type == agent.EventError && ev.Probe != "":
			errs = append(errs, &ProbeError{Probe: ev.Probe, Err: errors.New(ev.Message)})
		case ev.Type == agent.EventError:
			errs = append(errs, errors.New(ev.Message))
		}
	}
	return results, errs
}

// delete removes the DaemonSet and waits, within ctx, until its pods are gone.
func (f *Fleet) delete(ctx context.Context) error {
	if f.watch != nil {
		f.watch.Stop()
	}
	bg := metav1.DeletePropagationBackground
	err := f.s.Client.AppsV1().DaemonSets(f.Spec.Namespace).Delete(ctx, f.Name, metav1.DeleteOptions{PropagationPolicy: &bg})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting DaemonSet %s/%s (delete it with: kubectl delete daemonset -n %s %s): %w", f.Spec.Namespace, f.Name, f.Spec.Namespace, f.Name, err)
	}
	for {
		if left, err := f.agentsLeft(ctx); err == nil && !left {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the agent pods of DaemonSet %s/%s are still terminating (they go with it; check with: kubectl get pods -n %s -l %s=%s)",
				f.Spec.Namespace, f.Name, f.Spec.Namespace, RunIDLabel, f.s.RunID)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// agentsLeft says whether one of the fleet's agents is still there; pods of others that carry
// the run's labels do not hold the run up. The first page holds one pod: while agents
// terminate, that is usually one of them.
func (f *Fleet) agentsLeft(ctx context.Context) (bool, error) {
	opts := metav1.ListOptions{LabelSelector: RunIDLabel + "=" + f.s.RunID + "," + RoleLabel + "=" + string(RoleMesh), Limit: 1}
	for {
		pods, err := f.s.Client.CoreV1().Pods(f.Spec.Namespace).List(ctx, opts)
		if err != nil {
			return true, err
		}
		for i := range pods.Items {
			if f.distrust(&pods.Items[i]) == "" {
				return true, nil
			}
		}
		if pods.Continue == "" {
			return false, nil
		}
		opts.Continue, opts.Limit = pods.Continue, 500
	}
}
