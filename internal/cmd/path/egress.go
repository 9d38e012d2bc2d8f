package path

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"
	"github.com/kubectl-netbench/kubectl-netbench/internal/egress"
	"github.com/kubectl-netbench/kubectl-netbench/internal/render"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// IsExternal says whether a DST argument is a destination outside the cluster (a URL: tcp://,
// http://, https://, grpc://, grpcs://, icmp://, or an address alone) rather than a workload.
func IsExternal(dst string) bool {
	_, bare := egress.Bare(dst)
	return bare || strings.Contains(dst, "://")
}

// egressRun is one run of path to a destination outside the cluster: one agent, beside SRC's
// application, measures what a client can with no agent on the far side (internal/egress).
type egressRun struct {
	o     *PathOptions
	rep   *report.PathReport
	timer *cmdutil.PhaseTimer
	src   *session.Target
	sess  *session.Session
	cli   *session.Agent
	res   *agent.ProbeResult
}

func (r *egressRun) FiguresBeforePlan() {}

// PlannedFigures are the egress figures the destination can have (AbsentPhase).
func (r *egressRun) PlannedFigures() map[string]string {
	planned := report.PlannedFigures([]agent.ProbeSpec{r.spec()})
	for name := range planned {
		_, stat, _ := strings.Cut(name, ".")
		phase, _, _ := strings.Cut(stat, ".")
		if AbsentPhase(phase, r.o.DstArg, r.o.Download > 0) {
			delete(planned, name)
		}
	}
	return planned
}

// AbsentPhase says whether destination dst has no figures of phase: no tls but over TLS, no
// download without --download, no icmp but for icmp:// and then no connect, no first byte for
// tcp:// and icmp://, no lookup for an address.
func AbsentPhase(phase, dst string, download bool) bool {
	scheme, host := egress.SchemeHost(dst)
	switch phase {
	case "tls":
		return !egress.OverTLS(dst)
	case "download":
		return !download
	case "icmp":
		return scheme != "icmp"
	case "connect":
		return scheme == "icmp"
	case "ttfb-new", "ttfb-reused":
		return scheme == "tcp" || scheme == "icmp"
	case "dns":
		return isAddr(host)
	}
	return false
}

// spec is the egress probe: --requests new connections, then as many on a kept-alive one.
func (r *egressRun) spec() agent.ProbeSpec {
	return agent.ProbeSpec{Kind: agent.ProbeEgress, Name: agent.ProbeEgress, URL: r.o.DstArg, Count: r.o.Requests, RootCAs: string(r.o.rootCAs),
		DurationSeconds: r.o.Download.Seconds()}
}

// Plan resolves SRC and names the destination; nothing is created.
func (r *egressRun) Plan(ctx context.Context) (err error) {
	o, rep := r.o, r.rep
	o.Progress("resolving %s", o.SrcArg)
	if err := InsideCluster(ctx, o.Client, "DST", o.DstArg); err != nil {
		return err
	}
	if r.src, err = o.Resolve(ctx, o.SrcArg, o.SrcContainer, o.AllowHostNetwork); err != nil {
		return fmt.Errorf("SRC: %w", err)
	}
	rep.Source = o.Endpoint(ctx, r.src)
	rep.Destination = report.Endpoint{External: egress.Shown(o.DstArg)}
	rep.Path = report.PathClass{Class: v1alpha1.Egress, Reason: "leaves the cluster from node " + rep.Source.Node}
	rep.Warnings = append(rep.Warnings, cmdutil.TargetWarnings(r.src)...)
	r.timer.Phase("resolve")
	return nil
}

// Open picks the agent's mode where the user may create it, and the session.
func (r *egressRun) Open(ctx context.Context) (*session.Session, error) {
	mode, note, err := r.o.ChooseMode(ctx, r.o.Mode, r.src.Namespace)
	if err == nil {
		err = r.o.CheckPullSecrets(ctx, &r.o.CommonOptions, r.src.Namespace)
	}
	if err != nil {
		return nil, err
	}
	if note != "" {
		r.rep.Warnings = append(r.rep.Warnings, note)
	}
	r.sess = r.o.NewSession(mode)
	r.rep.Mode = mode
	return r.sess, nil
}

// Start has nothing to do: the agent starts with its job, as measuring begins.
func (r *egressRun) Start(ctx context.Context) error {
	r.rep.Warnings = append(r.rep.Warnings, r.o.CleanStale(ctx, r.sess, r.src.Namespace)...)
	return nil
}

// agentSpec is the client agent beside SRC's application with the egress probe as its job.
func (r *egressRun) agentSpec() session.AgentSpec {
	job := &agent.Job{APIVersion: agent.APIVersion, Done: true, Probes: []agent.ProbeSpec{r.spec()}}
	return r.clientSpec(job, egress.MaxDuration(r.o.Requests, r.o.Download))
}

// clientSpec is the one agent of the run, beside SRC's application, with job: it stops when the
// run ends however it ends (StopsOnDone: no server agent of the run's would end it), and after
// measuring plus the start timeouts at the latest.
func (r *egressRun) clientSpec(job *agent.Job, measuring time.Duration) session.AgentSpec {
	if r.sess.Mode == session.ModeEphemeral && !r.src.HostNetwork() {
		job.ClientApp = cmdutil.AppIDs(r.src)
	}
	lifetime := measuring + 2*r.o.StartTimeout + 30*time.Second
	return session.AgentSpec{Role: session.RoleClient, Target: r.src, Job: job, Lifetime: lifetime, StopsOnDone: true}
}

// started names the run's agent in the report: its container or pod, and its address.
func (r *egressRun) started(a *session.Agent) {
	r.cli = a
	SetAgentName(&r.rep.Source, a)
	r.rep.Source.AgentIP = r.src.Pod.Status.PodIP
	if a.Temporary {
		r.rep.Source.AgentIP = a.IP
	}
}

// Rehearse sends the agent measuring would add (a dry run).
func (r *egressRun) Rehearse(ctx context.Context) error {
	_, err := r.sess.Start(ctx, r.agentSpec())
	return err
}

// Measure runs the egress probe from SRC's pod.
func (r *egressRun) Measure(ctx context.Context) (time.Duration, error) {
	since := time.Now()
	r.o.Progress("measuring %s from %s/%s", r.rep.Destination.External, r.src.Namespace, r.src.Pod.Name)
	a, res, err := cmdutil.RunOne(ctx, r.sess, r.agentSpec(), "egress probe", func(p *agent.ProbeResult) bool { return p.Egress != nil })
	if err != nil {
		return 0, err
	}
	r.started(a)
	r.res = res
	r.timer.Phase("measure")
	return time.Since(since), nil
}

// Finish puts the result in the report, judged against the client's CPU limit, says whose
// address the far side saw, and prices a NAT or egress gateway where one may be on the way.
func (r *egressRun) Finish(ctx context.Context) {
	if r.res == nil {
		return
	}
	r.rep.Probes = []*agent.ProbeResult{r.res}
	at := report.Agents{}
	if !r.cli.Temporary {
		at.Client, at.ClientInApp, at.ClientPod = r.src.CPULimitCores(), !r.src.HostNetwork(), cmdutil.AppContainers(r.src)
	} else {
		r.rep.Warnings = append(r.rep.Warnings, temporaryPodWarning)
	}
	report.Judge(r.res, at)
	whose, gateway := r.whose(ctx, r.res.Egress.SeenSource)
	r.rep.Path.Reason = whose
	if gateway {
		r.rep.EgressCost = report.NewEgressCost(r.o.EgressPricePerGB)
	}
	r.rep.Summarize()
}

// temporaryPodWarning is a one-agent run's warning when its agent ran in a temporary pod.
const temporaryPodWarning = "the agent ran in a temporary pod on SRC's node (--mode pod): its own network namespace, resolv.conf and NetworkPolicies, not SRC's"

// whose says whose address the far side saw (seen, when it echoed one): the agent's pod's own,
// its node's (the node's SNAT), or another (a NAT or egress gateway, which gateway reports).
func (r *egressRun) whose(ctx context.Context, seen string) (reason string, gateway bool) {
	node := r.rep.Source.Node
	addr, err := netip.ParseAddr(seen)
	if err != nil {
		return "leaves the cluster from node " + node + "; the far side did not echo the address it saw", true
	}
	own, who := session.PodIPs(r.src.Pod), "the pod's"
	if r.cli.Temporary {
		own, who = []string{r.cli.IP}, "the agent pod's"
	}
	hostNet := r.src.HostNetwork() && !r.cli.Temporary
	if !hostNet && slices.ContainsFunc(own, sameAddr(addr)) {
		return fmt.Sprintf("the far side saw %s own address %s (no SNAT)", who, seen), false
	}
	n, err := r.o.Client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return fmt.Sprintf("leaves the cluster from node %s; the far side saw %s (the node's addresses could not be read: %v)", node, seen, err), true
	}
	var nodeAddrs []string
	for _, a := range n.Status.Addresses {
		nodeAddrs = append(nodeAddrs, a.Address)
	}
	switch {
	case slices.ContainsFunc(nodeAddrs, sameAddr(addr)) && hostNet:
		return fmt.Sprintf("the far side saw node %s's own address %s (a hostNetwork pod: no SNAT)", node, seen), false
	case slices.ContainsFunc(nodeAddrs, sameAddr(addr)):
		return fmt.Sprintf("the far side saw node %s's address %s (SNAT on the node)", node, seen), false
	}
	return fmt.Sprintf("leaves the cluster from node %s; the far side saw %s, neither %s own address nor the node's (a NAT or egress gateway, or a node address the node object does not list)", node, seen, who), true
}

// sameAddr matches an address written any way (an IPv4-mapped IPv6 one as IPv4).
func sameAddr(a netip.Addr) func(string) bool {
	return func(s string) bool {
		b, err := netip.ParseAddr(s)
		return err == nil && b.Unmap() == a.Unmap()
	}
}

// isAddr says whether host is an IP address (no lookup).
func isAddr(host string) bool {
	_, err := netip.ParseAddr(host)
	return err == nil
}

func (r *egressRun) Closed() {}

func (r *egressRun) Output() cmdutil.RunOutput {
	return cmdutil.RunOutput{Timing: &r.rep.Timing, Timer: r.timer, Figures: r.rep.FigureValues, Checks: &r.rep.Checks,
		Write: func() error { return render.Write(r.o.Out, r.o.Output, r.rep) }, Err: r.downloadErr}
}

// errDownload is a download (--download) that failed: the report is written, the run fails.
var errDownload = errors.New("the download failed")

// downloadErr is the failed download's reason, once the report holds it.
func (r *egressRun) downloadErr() error {
	if r.res == nil || r.res.Egress == nil || r.res.Egress.Download == nil || r.res.Egress.Download.Error == "" {
		return nil
	}
	return fmt.Errorf("%w: %s", errDownload, r.res.Egress.Download.Error)
}

// readRootCAs reads --ca-file: PEM certificates the destination's chain must lead to.
func (o *PathOptions) readRootCAs() (err error) {
	o.rootCAs, err = ReadRootCAs("--ca-file", o.CAFile)
	return err
}

// ReadRootCAs reads the PEM roots of flag's file (none: nil), bounded and checked.
func ReadRootCAs(flag, file string) ([]byte, error) {
	if file == "" {
		return nil, nil
	}
	b, err := readBounded(file, egress.MaxRootsBytes)
	if err == nil {
		_, err = egress.RootCAs(b)
	}
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", flag, file, err)
	}
	return b, nil
}

// validateExternal checks DST when it is a URL, and the flags that go with one only.
func (o *PathOptions) validateExternal() error {
	if IsOutsideAgent(o.DstArg) {
		return nil // validateOutsideAgent's
	}
	if !IsExternal(o.DstArg) {
		switch {
		case o.CAFile != "":
			return fmt.Errorf("--ca-file is for a destination outside the cluster (DST https://… or grpcs://…), not %s", o.DstArg)
		case o.Requests != egress.DefaultCount:
			return fmt.Errorf("--requests is for a destination outside the cluster (DST a URL), not %s", o.DstArg)
		case o.Download != 0:
			return fmt.Errorf("--download is for a destination outside the cluster (DST http://… or https://…), not %s (throughput to a workload: --probes tcp)", o.DstArg)
		case o.EgressPricePerGB != DefaultEgressPricePerGB:
			return fmt.Errorf("--egress-price-per-gb is for a destination outside the cluster (DST a URL), not %s (cross-zone: --price-per-gb)", o.DstArg)
		}
		return nil
	}
	if err := egress.Check(o.DstArg); err != nil {
		return fmt.Errorf("DST: %w", err)
	}
	if err := egress.CheckDownload(o.DstArg, o.Download); err != nil {
		return fmt.Errorf("--download %s: %w", o.Download, err)
	}
	switch {
	case o.Requests < 1 || o.Requests > egress.MaxCount:
		return fmt.Errorf("--requests %d: want 1-%d", o.Requests, egress.MaxCount)
	case !(o.EgressPricePerGB >= 0 && o.EgressPricePerGB <= 1000):
		return fmt.Errorf("--egress-price-per-gb %g: want a price from 0 to 1000 USD", o.EgressPricePerGB)
	case o.DstContainer != "" || o.Port != 0 || o.HTTPPath != "/" || o.IPFamily != "":
		return fmt.Errorf("--dst-container, --port, --http-path and --ip-family are for a workload DST; a URL names its own port and path (DST %s)", egress.Shown(o.DstArg))
	case o.Rounds != 1:
		return fmt.Errorf("--repeat %d: a destination outside the cluster is measured once (raise --requests for more samples)", o.Rounds)
	case o.CAFile != "" && !egress.OverTLS(o.DstArg):
		return fmt.Errorf("--ca-file is for an https:// or grpcs:// destination, not %s", egress.Shown(o.DstArg))
	case !slices.Equal(o.Probes, probeGroups):
		return fmt.Errorf("--probes: a destination outside the cluster has no agent on its far side; it is measured by the egress probe alone (DST %s)", egress.Shown(o.DstArg))
	}
	return o.readRootCAs()
}

// readBounded reads file, refusing one of more than limit bytes (a device never ends).
func readBounded(file string, limit int) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err == nil && len(b) > limit {
		err = fmt.Errorf("over %d bytes", limit)
	}
	return b, err
}
