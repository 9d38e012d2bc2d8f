package dns

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/render"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"
	"github.com/kubectl-netbench/kubectl-netbench/internal/dnsname"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/internal/version"
)

// DNSOptions holds everything `kubectl netbench dns` needs.
type DNSOptions struct {
	cmdutil.CommonOptions

	TargetArg        string
	Names            []string
	Container        string
	Resolver         string
	Repeats          int
	WhatIfNdots      []int
	ExternalName     string
	ClusterDomain    string
	Observe          time.Duration
	AllowHostNetwork bool
	DNSService       string
	LookupsPerSecond float64
	Race             int
	// LookupFamily is what the application's lookups ask for (--lookup-family): "" both.
	LookupFamily string
	Load         loadOptions
}

// NewDNSOptions returns options with the defaults.
func NewDNSOptions(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *DNSOptions {
	return &DNSOptions{
		CommonOptions: cmdutil.NewCommonOptions(flags, streams),
		Repeats:       20, ExternalName: "example.com", ClusterDomain: "cluster.local", DNSService: DefaultDNSService,
	}
}

func NewDNSCommand(flags *genericclioptions.ConfigFlags, streams genericiooptions.IOStreams) *cobra.Command {
	o := NewDNSOptions(flags, streams)
	cmd := &cobra.Command{
		Use:   "dns TARGET [NAME...]",
		Short: "Count the DNS queries one lookup really sends from a pod, and how to cut them",
		Long: `Read the pod's own resolv.conf, model the resolver its application uses (glibc, musl or Go,
detected from the application's binary), send the queries that resolver sends for each NAME for
real from inside the pod, and report queries and NXDOMAINs per lookup, latency, what a trailing
dot or another ndots would change, and a ready-to-apply fix.

TARGET is a pod, TYPE/NAME or NAMESPACE/TYPE/NAME. Without NAMEs: kubernetes.default, the
kubernetes Service's cluster FQDN and --external-name.`,
		Example: `  kubectl netbench dns deploy/web
  kubectl netbench dns deploy/web api.example.com redis.cache --resolver musl -o json
  kubectl netbench dns deploy/web --race 500    # lookups that wait out a timeout, and the fix`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(args); err != nil {
				return err
			}
			o.Load.noteFlags(cmd.Flags())
			if err := o.Validate(); err != nil {
				return err
			}
			cmd.SilenceUsage = true
			return o.Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.Container, "container", "c", "", "the application container (default: the pod's default container)")
	f.StringVar(&o.Resolver, "resolver", "", "resolver to model: glibc, musl or go (default: detected from the application's binary)")
	f.IntVar(&o.Repeats, "repeats", o.Repeats, "warm lookups timed per name and what-if")
	f.IntSliceVar(&o.WhatIfNdots, "what-if-ndots", nil, "more ndots values to compare (1 and 2 always are)")
	f.StringVar(&o.ExternalName, "external-name", o.ExternalName, "the external name looked up by default")
	f.StringVar(&o.ClusterDomain, "cluster-domain", o.ClusterDomain, "the cluster's DNS domain")
	f.BoolVar(&o.AllowHostNetwork, "allow-host-network", false, "measure from a hostNetwork pod (it resolves with the node's resolv.conf)")
	f.StringVar(&o.DNSService, "dns-service", o.DNSService, "NAMESPACE/NAME of the cluster DNS Service whose replicas are asked one by one")
	f.Float64Var(&o.LookupsPerSecond, "lookups-per-second", 0, "the application's lookups per second of the first name, to project the queries per second that cross a zone")
	f.IntVar(&o.Race, "race", 0, "race check: this many lookups done exactly as the resolver sends A and AAAA, counting those that wait out a timeout (the conntrack race), with the fix measured the same way")
	f.StringVar(&o.LookupFamily, "lookup-family", "both", "what the application's lookups ask for: both (A and AAAA: getaddrinfo AF_UNSPEC, Go's ip/tcp), 4 (A only: AF_INET, or AI_ADDRCONFIG in a pod without IPv6; Go's ip4/tcp4) or 6 (AAAA only)")
	o.Load.addFlags(cmd)
	o.AddFlags(cmd)
	o.Gates.AddFlags(cmd, "'dns.kubernetes.default.queries > 2'")
	f.DurationVar(&o.Observe, "observe", 0, "first capture the pod's own DNS traffic for this long (needs NET_RAW; skipped with the reason where the namespace forbids it)")
	_ = cmd.RegisterFlagCompletionFunc("resolver", cmdutil.FixedCompletion("glibc", "musl", "go"))
	return cmd
}

// Complete resolves the namespace and the clients.
func (o *DNSOptions) Complete(args []string) error {
	o.TargetArg, o.Names = args[0], args[1:]
	if len(o.Names) == 0 {
		o.Names = []string{"kubernetes.default", "kubernetes.default.svc." + o.ClusterDomain, o.ExternalName}
	}
	return o.CompleteFlags()
}

// Validate checks the flags.
func (o *DNSOptions) Validate() error {
	if o.Resolver != "" {
		if _, err := resolver.ParseKind(o.Resolver); err != nil {
			return fmt.Errorf("--resolver: %w", err)
		}
	}
	if o.Observe < 0 || o.Observe > 10*time.Minute {
		return fmt.Errorf("--observe %s: want up to 10m", o.Observe)
	}
	if o.Repeats < 1 || o.Repeats > 1000 {
		return fmt.Errorf("--repeats %d: want 1-1000", o.Repeats)
	}
	for _, n := range o.WhatIfNdots {
		if n < 0 || n > 15 {
			return fmt.Errorf("--what-if-ndots %d: want 0-15", n)
		}
	}
	if err := dnsname.CheckFlag(o.ExternalName, "--external-name"); err != nil {
		return err
	}
	if err := dnsname.CheckFlag(o.ClusterDomain, "--cluster-domain"); err != nil {
		return err
	}
	if ns, name, ok := strings.Cut(o.DNSService, "/"); !ok || len(validation.IsDNS1123Label(ns)) > 0 || len(validation.IsDNS1035Label(name)) > 0 {
		return fmt.Errorf("--dns-service %q: want NAMESPACE/NAME of a Service", o.DNSService)
	}
	if o.Race < 0 || o.Race > probes.MaxRaceLookups {
		return fmt.Errorf("--race %d: want 0-%d lookups", o.Race, probes.MaxRaceLookups)
	}
	if err := o.checkLookupFamily(); err != nil {
		return err
	}
	if err := o.Load.validate(o.Observe); err != nil {
		return err
	}
	if !(o.LookupsPerSecond >= 0 && o.LookupsPerSecond <= 1e6) {
		return fmt.Errorf("--lookups-per-second %g: want 0-1e+06", o.LookupsPerSecond)
	}
	for i, n := range o.Names {
		ascii, note, err := dnsname.Check(n)
		if err != nil {
			return err
		}
		if note != "" {
			o.Progress("%s", note)
		}
		o.Names[i] = ascii
	}
	return o.ValidateFlags()
}

// Run adds the agent to the pod, measures and prints the report.
func (o *DNSOptions) Run(ctx context.Context) error {
	start := time.Now()
	rep := &report.DNSReport{APIVersion: report.APIVersion, Kind: "DNSReport", ToolVersion: version.Version, StartTime: start.UTC()}
	return o.Execute(ctx, start, &dnsRun{o: o, rep: rep})
}

// dnsRun is one run of dns: the runner's steps (runner.go) and what they share.
type dnsRun struct {
	o        *DNSOptions
	rep      *report.DNSReport
	t        *session.Target
	svcView  *report.DNSService
	replicas []probes.DNSReplica
	sess     *session.Session
}

func (r *dnsRun) FiguresBeforePlan() {}

func (r *dnsRun) PlannedFigures() map[string]string {
	return report.DNSPlannedFigures(r.o.Names, r.o.Race > 0, r.o.Load.On)
}

// Plan resolves the pod, checks that the user may add an ephemeral container to it, reads the
// cluster DNS Service and its replicas, and checks what NetworkPolicies let the agent ask.
func (r *dnsRun) Plan(ctx context.Context) (err error) {
	o, rep := r.o, r.rep
	o.Progress("resolving %s", o.TargetArg)
	if r.t, err = o.Resolve(ctx, o.TargetArg, o.Container, o.AllowHostNetwork); err != nil {
		return err
	}
	t := r.t
	rep.Target = report.Endpoint{Namespace: t.Namespace, Pod: t.Pod.Name, Container: t.Container, PodIP: t.Pod.Status.PodIP, Node: t.Pod.Spec.NodeName}
	rep.Owner = o.owner(ctx, t.Pod)
	rep.Warnings = append(rep.Warnings, cmdutil.TargetWarnings(t)...)
	if _, _, err := o.ChooseMode(ctx, session.ModeEphemeral, t.Namespace); err != nil {
		return err
	}
	r.svcView, r.replicas = o.nameserverService(ctx, t)
	if err := o.Load.checkTarget(r.svcView); err != nil {
		return err
	}
	return o.checkDNSPolicy(ctx, t, r.svcView, r.replicas)
}

func (r *dnsRun) Open(context.Context) (*session.Session, error) {
	r.sess = r.o.NewSession(session.ModeEphemeral)
	return r.sess, nil
}

// Start has nothing to do: the agent starts with its job, as measuring begins.
func (r *dnsRun) Start(context.Context) error { return nil }

// Measure runs the DNS probe in an ephemeral container of the pod, then the passive capture
// when asked.
func (r *dnsRun) Measure(ctx context.Context) (time.Duration, error) {
	o, rep, t := r.o, r.rep, r.t
	since := time.Now()
	o.Progress("adding the agent to %s/%s", t.Namespace, t.Pod.Name)
	a, full, err := cmdutil.RunOne(ctx, r.sess, r.agentSpec(), "dns probe", isDNS)
	if err != nil {
		return 0, err
	}
	res := full.DNS
	rep.Result = res
	if full.Validity != nil {
		report.Judge(full, report.Agents{Client: t.CPULimitCores(), ClientInApp: !t.HostNetwork(), ClientPod: cmdutil.AppContainers(t)}) // the agent is in the pod, under its limit
		rep.Validity = full.Validity
	}
	rep.Target.AgentContainer = a.Container
	o.finishNameserverView(ctx, r.svcView, t, res.DNSResult)
	rep.NameserverService = r.svcView
	if o.Observe > 0 {
		o.observe(ctx, r.sess, t, res)
	}
	return time.Since(since), nil
}

// agentSpec is the agent that measures: in the pod, with the DNS probe as its job.
func (r *dnsRun) agentSpec() session.AgentSpec {
	o := r.o
	spec := agent.ProbeSpec{Kind: agent.ProbeDNS, Names: o.Names, Resolver: o.Resolver, Repeats: o.Repeats, WhatIfNdots: o.WhatIfNdots, DNSReplicas: r.replicas, DNSRace: o.Race,
		LookupFamily: o.LookupFamily, WhatIfLookupFamily: whatIfFamily(o.LookupFamily, session.PodIPs(r.t.Pod))}
	o.Load.apply(&spec)
	job := dnsJob(spec)
	if !r.t.HostNetwork() { // the agent is an ephemeral container in the application's pod
		job.ClientApp = cmdutil.AppIDs(r.t)
	}
	return session.AgentSpec{Role: session.RoleDNS, Target: r.t, Lifetime: o.agentLifetime(), Job: job, StopsOnDone: o.Load.On}
}

// captureSpec is the agent that captures the pod's own DNS traffic for --observe, told the
// resolver the first agent found.
func (o *DNSOptions) captureSpec(t *session.Target, resolver string) session.AgentSpec {
	spec := agent.ProbeSpec{Kind: agent.ProbeDNS, Names: o.Names, Resolver: resolver, ObserveSeconds: o.Observe.Seconds(), LookupFamily: o.LookupFamily}
	return session.AgentSpec{Role: session.RoleCapture, Target: t, Capture: true, Lifetime: 5*time.Minute + o.Observe, Job: dnsJob(spec)}
}

func dnsJob(spec agent.ProbeSpec) *agent.Job {
	return &agent.Job{APIVersion: agent.APIVersion, Probes: []agent.ProbeSpec{spec}}
}

// Rehearse sends the agents measuring would add (a dry run): the capture names the resolver
// of --resolver, since none was detected.
func (r *dnsRun) Rehearse(ctx context.Context) error {
	if _, err := r.sess.Start(ctx, r.agentSpec()); err != nil {
		return fmt.Errorf("the agent: %w", err)
	}
	if r.o.Observe == 0 {
		return nil
	}
	if _, err := r.sess.Start(ctx, r.o.captureSpec(r.t, r.o.Resolver)); err != nil {
		// As in a real run, a refused capture leaves the active report standing.
		fmt.Fprintf(r.o.ErrOut, "the passive capture would be skipped (the active report stands): %v\n", err)
	}
	return nil
}

// Finish plans the fixes from what the agent measured.
func (r *dnsRun) Finish(context.Context) {
	rep := r.rep
	opts := podDNSOptions(r.t.Pod)
	rep.Fixes, rep.Patch = report.PlanDNSFixes(rep.Result.DNSResult, rep.Owner, r.t.Namespace, opts)
	rep.RaceAdvice = report.PlanRaceFix(rep.Result.DNSResult, rep.Owner, r.t.Namespace, opts)
	rep.Capacity = report.PlanDNSCapacity(rep.Result.DNSResult, rep.Fixes, rep.Patch, nodeLocalInUse(rep.NameserverService))
}

func (r *dnsRun) Closed() {}

func (r *dnsRun) Output() cmdutil.RunOutput {
	return cmdutil.RunOutput{Timing: &r.rep.Timing, Figures: r.rep.FigureValues, Checks: &r.rep.Checks,
		Write: func() error { return render.WriteDNS(r.o.Out, r.o.Output, r.rep) }}
}

// observe captures the pod's own DNS traffic in a second, short-lived agent. It comes second,
// knowing the resolver, so that the active queries are not in it. It needs root with NET_RAW;
// where Pod Security or another admission step refuses that, the capture is skipped with the
// reason and the active report stands.
func (o *DNSOptions) observe(ctx context.Context, sess *session.Session, t *session.Target, res *agent.DNSReport) {
	o.Progress("capturing the pod's DNS traffic for %s", o.Observe)
	_, full, err := cmdutil.RunOne(ctx, sess, o.captureSpec(t, string(res.Resolver)), "dns probe", isDNS)
	switch {
	case errors.Is(err, access.ErrPodSecurity):
		res.ObserveSkipped = "passive capture skipped: it needs NET_RAW as root, which the Pod Security level of namespace " + t.Namespace + " forbids; the active report is below"
	case errors.Is(err, access.ErrAdmission):
		res.ObserveSkipped = "passive capture skipped: " + err.Error()
	case err != nil:
		res.ObserveSkipped = "passive capture failed: " + err.Error()
	default:
		res.Observed, res.ObserveSkipped = full.DNS.Observed, full.DNS.ObserveSkipped
	}
}

// owner finds the workload whose pod template shapes this pod (deployment/x, statefulset/x …).
// agentLifetime bounds the agent's life: the measurement, and the race check's two series.
func (o *DNSOptions) agentLifetime() time.Duration {
	if o.Race > 0 {
		return 5*time.Minute + 2*probes.RaceBudget + o.Load.lifetime()
	}
	return 5*time.Minute + o.Load.lifetime()
}

// podDNSOptions are the pod's own dnsConfig options (its template's), which a patch must keep.
func podDNSOptions(p *corev1.Pod) []report.DNSOption {
	if p.Spec.DNSConfig == nil {
		return nil
	}
	var out []report.DNSOption
	for _, o := range p.Spec.DNSConfig.Options {
		out = append(out, report.DNSOption{Name: o.Name, Value: o.Value})
	}
	return out
}

func (o *DNSOptions) owner(ctx context.Context, p *corev1.Pod) string {
	for _, ref := range p.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		switch ref.Kind {
		case "ReplicaSet":
			rs, err := o.Client.AppsV1().ReplicaSets(p.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				return ""
			}
			for _, r := range rs.OwnerReferences {
				if r.Kind == "Deployment" {
					return "deployment/" + r.Name
				}
			}
			return "replicaset/" + ref.Name
		case "StatefulSet", "DaemonSet", "Job":
			return strings.ToLower(ref.Kind) + "/" + ref.Name
		}
	}
	return ""
}

// isDNS keeps a DNS probe's result.
func isDNS(r *agent.ProbeResult) bool { return r.DNS != nil }
