package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
)

// Run executes every probe of the job in order, emitting progress and result events, and an
// error event (returning the error) on the first probe that fails, but for a probe of the
// application's own port and a mesh job's IPv6 twin (an error event, and the job goes on). A probe that cannot run for
// lack of permission (ICMP) yields a result marked Skipped instead.
func Run(ctx context.Context, job Job, em *Emitter) (err error) {
	if err := job.Validate(); err != nil {
		em.Emit(Event{Type: EventError, Message: err.Error()})
		return err
	}
	if job.ServerOutside {
		if job.Host, err = pinHost(ctx, job.Host, em); err != nil {
			em.Emit(Event{Type: EventError, Message: err.Error()})
			return err
		}
	}
	if job.Done && job.Host != "" {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		go watchServer(ctx, job, cancel)
		defer func() {
			if err == nil {
				em.Emit(Event{Type: EventFootprint, Footprints: footprints(job)})
			}
			if derr := postDone(job); derr != nil && err == nil {
				em.Emit(Event{Type: EventProgress, Message: "telling the server to stop: " + derr.Error()})
			}
		}()
	}
	if usesServer(job) {
		err = introduce(ctx, job)
	}
	// The IPv6 twins' server address too: its first burst then comes from a known source.
	for _, host := range twinHosts(job) {
		if err == nil {
			err = introduce(ctx, job.forProbe(ProbeSpec{Host: host}))
		}
	}
	if err != nil {
		em.Emit(Event{Type: EventError, Message: err.Error(), Reason: ReasonUnauthorized})
		return err
	}
	for i, p := range job.Probes {
		em.Emit(Event{Type: EventProgress, Probe: p.Label(), Message: fmt.Sprintf("probe %d/%d starting", i+1, len(job.Probes))})
		pj := job.forProbe(p)
		acct := startAccounting(ctx, pj, p)
		res, err := runProbe(ctx, pj, p)
		if res != nil {
			acct.finish(ctx, res)
		}
		if cause := context.Cause(ctx); cause != nil && errors.Is(cause, ErrServerGone) {
			err = cause
		}
		if err != nil {
			em.Emit(Event{Type: EventError, Probe: p.Label(), Message: err.Error(), Reason: reason(err)})
			if (p.Address != "" || p.URL != "" || (job.mesh && (p.Host != "" || IsRateProbe(p.Kind)))) && ctx.Err() == nil {
				continue // a probe of the application's own port, a mesh job's IPv6 twin or rate probe: the others still run
			}
			return fmt.Errorf("probe %s: %w", p.Label(), err)
		}
		em.Emit(Event{Type: EventResult, Probe: p.Label(), Result: res})
	}
	return nil
}

// forProbe is the job as probe p sees it: the server at p's own address when it has one (the
// server's address of the other IP family).
func (j Job) forProbe(p ProbeSpec) Job {
	if p.Host != "" {
		j.Host = p.Host
	}
	return j
}

func (j Job) agentAddr() string { return net.JoinHostPort(j.Host, strconv.Itoa(j.Port)) }

// ErrServerGone means the agent server this job measures against stopped answering: its run
// ended or the plugin that started it is gone.
var ErrServerGone = errors.New("the server agent stopped answering: its run is over")

// twinHosts are the server's other addresses the job's probes use (their Host), each once.
func twinHosts(job Job) []string {
	var out []string
	for _, p := range job.Probes {
		if p.Host != "" && p.Host != job.Host && !slices.Contains(out, p.Host) {
			out = append(out, p.Host)
		}
	}
	return out
}

// usesServer says whether a probe of the job talks to the server agent at job.Host.
func usesServer(job Job) bool {
	for _, p := range job.Probes {
		if probeUsesServer(job, p) {
			return true
		}
	}
	return false
}

// probeUsesServer says whether the probe talks to the server agent at job.Host.
func probeUsesServer(job Job, p ProbeSpec) bool {
	return job.Host != "" && p.Address == "" && p.URL == "" && p.Kind != ProbeDNS && p.Kind != ProbeICMP
}

// watchServer checks every second that the server still answers its lease; after two misses in
// a row (once it answered at least once) it cancels the job.
func watchServer(ctx context.Context, job Job, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	seen, misses := false, 0
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if err := controlCall(ctx, job, http.MethodGet, PathLease, nil); err != nil {
			misses++
		} else {
			seen, misses = true, 0
		}
		if seen && misses >= 2 && ctx.Err() == nil {
			cancel(ErrServerGone)
			return
		}
	}
}

// pmtuTimeout is how long the path-MTU probe waits for each answer.
const pmtuTimeout = 200 * time.Millisecond

// udpBlocked turns "no UDP datagram came back at all" into a skipped probe: TCP reached the same
// agent, so UDP is filtered on the way (a NetworkPolicy or firewall that allows only TCP), and the
// TCP probes still run.
func udpBlocked(ctx context.Context, err error) (string, error) {
	if err != nil && ctx.Err() == nil && errors.Is(err, os.ErrDeadlineExceeded) {
		return err.Error() + "; a NetworkPolicy or firewall on the way may allow only TCP to the agent's port", nil
	}
	return "", err
}

// icmpRTT pings addr's host; a pod without the permission to gets a skip, not an error.
func icmpRTT(ctx context.Context, addr string, rtt probes.RTTSpec) (*probes.RTTResult, string, error) {
	host, _, splitErr := net.SplitHostPort(addr)
	if splitErr != nil {
		host = addr
	}
	rtt.Target = host
	r, err := probes.ICMPRTT(ctx, rtt)
	if errors.Is(err, probes.ErrICMPNotPermitted) {
		return nil, err.Error(), nil
	}
	return r, "", err
}

// runProbe runs one probe; a panic in a probe engine becomes its error.
func runProbe(ctx context.Context, job Job, p ProbeSpec) (res *ProbeResult, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("the %s probe failed inside the agent (panic: %v)", p.Label(), r)
		}
	}()
	res = &ProbeResult{Name: p.Label(), Kind: p.Kind}
	addr, token := job.agentAddr(), job.Token
	if p.Address != "" {
		addr, token = p.Address, ""
	}
	rtt := probes.RTTSpec{Count: p.Count, Interval: time.Duration(p.IntervalMillis * float64(time.Millisecond))}
	headers := http.Header{}
	if token != "" {
		headers.Set(TokenHeader, token)
	}
	url := "http://" + addr + "/"
	if p.URL != "" {
		url, headers = p.URL, nil
	}
	switch p.Kind {
	case ProbeICMP:
		res.RTT, res.Skipped, err = icmpRTT(ctx, addr, rtt)
	case ProbeTCPRTT:
		rtt.Target = addr
		res.RTT, err = probes.TCPConnectRTT(ctx, rtt)
	case ProbeHTTP, ProbeHTTPNewConn, ProbeHTTPMax:
		mode := map[string]string{ProbeHTTP: probes.HTTPKeepAlive, ProbeHTTPNewConn: probes.HTTPNewConn, ProbeHTTPMax: probes.HTTPClosedLoop}[p.Kind]
		res.HTTP, err = probes.HTTPLatency(ctx, probes.HTTPSpec{
			URL: url, Mode: mode, QPS: p.QPS, Connections: p.Connections,
			Duration: seconds(p.DurationSeconds), Headers: headers,
		})
	case ProbeGRPC:
		md := map[string]string{}
		if token != "" {
			md[TokenMetadata] = token
		}
		res.GRPC, err = probes.GRPCLatency(ctx, probes.GRPCSpec{
			Address: addr, QPS: p.QPS, Connections: p.Connections,
			Duration: seconds(p.DurationSeconds), Metadata: md,
		})
	case ProbeTCP:
		spec := probes.ThroughputSpec{
			Address: addr, Token: token, Streams: p.Streams,
			Duration: seconds(p.DurationSeconds), Interval: seconds(p.ReportIntervalSeconds),
		}
		if p.Address == "" {
			spec.ServerCPU = func(ctx context.Context) (time.Duration, error) { return serverCPU(ctx, job) }
		}
		res.Throughput, err = probes.Throughput(ctx, spec)
	case ProbeTCPRR, ProbeTCPCRR, ProbeUDPRR, ProbeLoadedRTT:
		res.Skipped, err = runUnderLoad(ctx, job, p, addr, res)
	case ProbeDNS:
		res.DNS, err = runDNS(ctx, p)
	case ProbeUDP:
		rtt.Target = addr
		res.RTT, err = probes.UDPRTT(ctx, probes.UDPSpec{RTTSpec: rtt, Size: p.Size, Key: probes.UDPKey(job.Token)})
		res.Skipped, err = udpBlocked(ctx, err)
	case ProbePMTU:
		res.PMTU, err = probes.PathMTU(ctx, addr, probes.UDPKey(job.Token), pmtuTimeout)
		res.Skipped, err = udpBlocked(ctx, err)
	case ProbeEgress:
		res.Egress, err = runEgress(ctx, p)
	case ProbeSpread:
		// Whichever pod the Service picks answers: it gets a proof of the token, never the token.
		res.Spread, err = probes.Spread(ctx, spreadSpec(p, &job))
	default:
		err = fmt.Errorf("unknown probe kind %q", p.Kind)
	}
	if err != nil {
		return nil, err
	}
	return res, nil
}

// footprints are this runner's footprint and its server's (when it answers).
func footprints(job Job) map[string]Footprint {
	out := map[string]Footprint{"client": OwnFootprint()}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var r CPUReply
	if err := controlCall(ctx, job, http.MethodGet, PathCPU, &r); err == nil && r.PeakRSSBytes > 0 {
		out["server"] = Footprint{CPUSeconds: time.Duration(r.CPUNanos).Seconds(), PeakRSSBytes: r.PeakRSSBytes}
	}
	return out
}

func serverCPU(ctx context.Context, job Job) (time.Duration, error) {
	s, err := serverSample(ctx, job, "", "")
	if err != nil {
		return 0, err
	}
	return s.cpu.CPU, nil
}

// postDone tells the agent server to exit. It uses its own short timeout so that it runs even
// after the job's context was cancelled.
func postDone(job Job) error {
	if job.Host == "" || job.Port == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	return controlCall(ctx, job, http.MethodPost, PathDone, nil)
}

func runDNS(ctx context.Context, p ProbeSpec) (*DNSReport, error) {
	path := p.ResolvConf
	if path == "" {
		path = appResolvConf()
	}
	b, err := readSmallFile(path, 64<<10)
	if err != nil {
		return nil, fmt.Errorf("reading the pod's resolv.conf: %w", err)
	}
	cfg := resolver.ParseResolvConf(string(b))
	cfg.LookupFamily = p.LookupFamily // the application's call, not resolv.conf's
	if h, err := os.Hostname(); err == nil {
		if _, dom, ok := strings.Cut(h, "."); ok {
			cfg.LocalDomain = dom
		}
	}
	rep := &DNSReport{ResolvConf: string(b), ResolvConfPath: path}
	var kind resolver.Kind
	if p.Resolver == "" {
		kind, rep.Detection = DetectResolver("/proc")
	} else {
		if kind, err = resolver.ParseKind(p.Resolver); err != nil {
			return nil, err
		}
		rep.Detection = "chosen with --resolver"
	}
	if p.ObserveSeconds > 0 {
		rep.Observed, err = probes.ObserveDNS(ctx, seconds(p.ObserveSeconds), kind, cfg)
		if errors.Is(err, probes.ErrCaptureNotPermitted) {
			rep.ObserveSkipped, err = "passive capture skipped: "+err.Error(), nil
		}
		return rep, err
	}
	rep.DNSResult, err = probes.DNSAmplification(ctx, probes.DNSSpec{
		Names: p.Names, Resolver: kind, Config: cfg, Repeats: p.Repeats, WhatIfNdots: p.WhatIfNdots, Replicas: p.DNSReplicas, Race: p.DNSRace,
		WhatIfLookupFamily: p.WhatIfLookupFamily,
	})
	if err != nil {
		return nil, err
	}
	if p.DNSLoadSeconds > 0 {
		if rep.Load, err = probes.RunDNSLoad(ctx, dnsLoadSpec(p, rep.DNSResult)); err != nil {
			rep.Load, err = &probes.DNSLoad{Skipped: err.Error()}, nil // the measurement above stands
		}
	}
	return rep, ctx.Err()
}

// appResolvConf is the application container's own view of /etc/resolv.conf where the agent may
// read it (through /proc/<pid>/root), and the pod's file, which the kubelet gives every
// container, otherwise.
func appResolvConf() string {
	if pid, err := appPID("/proc"); err == nil {
		p := filepath.Join("/proc", strconv.Itoa(pid), "root", "etc", "resolv.conf")
		if f, err := os.Open(p); err == nil {
			f.Close()
			return p
		}
	}
	return "/etc/resolv.conf"
}

// spreadSpec is a spread probe's spec: the endpoint agents' own addresses and, when the job
// has an agent, DST's, for the handshakes straight to them.
func spreadSpec(p ProbeSpec, job *Job) probes.SpreadSpec {
	spec := probes.SpreadSpec{Address: p.Address, Path: PathWhoAmI, Connections: p.Count, Token: job.Token, Direct: p.Direct}
	if len(p.Direct) > 0 && job.Host != "" {
		spec.DST = job.agentAddr()
	}
	return spec
}
