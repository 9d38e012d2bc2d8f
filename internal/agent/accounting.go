package agent

import (
	"context"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cpustat"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/internal/ifstat"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// usage is one agent's accounting at one moment: its CPU, and its pod's interfaces with its
// own I/O; for a server's end of a probe, what its pod's other containers did since the start.
type usage struct {
	cpu cpustat.Sample
	net ifstat.Sample
	app appResult
}

func readUsage() usage { return usage{cpu: cpustat.Read(), net: ifstat.Read()} }

// appResult is what a pod's other containers did over a probe, as one agent scanned them; cut
// when a scan was cut short (not compared).
type appResult struct {
	groups map[string]cpustat.Group
	window time.Duration
	cut    bool
}

func appSince(end, start *cpustat.Scan) appResult {
	g, w, ok := end.Since(start)
	return appResult{groups: g, window: w, cut: !ok}
}

// accounting holds the accounting of the client, and of the server where the probe talks to
// it, taken as a probe starts: what finish compares the end with.
type accounting struct {
	job    Job
	hdr    int64  // what each packet carries besides payload on the probe's path
	key    string // names the probe to the server, which keeps its first scan by it
	client usage
	server *usage
	app    *cpustat.Scan // the client pod's other containers, where the job asks
}

// startAccounting scans the client pod's other containers (where the job asks), samples the
// server (which scans its own first), then the client; finish samples in the opposite order:
// no scan falls in either agent's window.
func startAccounting(ctx context.Context, job Job, p ProbeSpec) accounting {
	a := accounting{job: job, hdr: headers(job, p), key: strconv.FormatUint(rand.Uint64(), 36)}
	if len(job.ClientApp) > 0 {
		a.app = cpustat.ScanOthers(job.ClientApp)
	}
	if probeUsesServer(job, p) {
		if s, err := serverSample(ctx, job, appFirst, a.key); err == nil {
			a.server = &s
		}
	}
	a.client = readUsage()
	return a
}

// finish records the probe's accounting in res: CPUSeconds (the client's) and the validity
// block's CPU use and traffic, which the plugin judges (it knows the pods' limits).
func (a accounting) finish(ctx context.Context, res *ProbeResult) {
	end := readUsage()
	client := end.cpu.Since(a.client.cpu)
	res.CPUSeconds = math.Round(client.CPU.Seconds()*1e3) / 1e3
	h := a.hdr
	v := &v1alpha1.Validity{Valid: true, Client: cpuUse(client), ClientTraffic: traffic(end.net, a.client.net, h)}
	if a.server != nil {
		if srv, err := serverSample(ctx, a.job, appLast, a.key); err == nil {
			v.Server = cpuUse(srv.cpu.Since(a.server.cpu))
			v.ServerApp, v.ServerAppNotCompared = appUse(srv.app), srv.app.cut
			// What the client sent again crossed the server's interface too, unread where the
			// first copy had arrived (a receiver short of CPU drops behind its interface).
			srv.net.OwnBytes += end.net.Retransmitted - a.client.net.Retransmitted
			v.ServerTraffic = traffic(srv.net, a.server.net, h)
		}
	}
	if a.app != nil {
		app := appSince(cpustat.ScanOthers(a.job.ClientApp), a.app)
		v.ClientApp, v.ClientAppNotCompared = appUse(app), app.cut
	}
	res.Validity = v
}

// The server's scans of its pod's containers around a probe (PathCPU's query "app", with the
// containers' IDs in "ids"): the first sets the baseline and comes before the CPU sample, the
// last comes after it and answers what the containers did since the first.
const (
	appFirst = "first"
	appLast  = "last"
)

// serverSample asks the server agent for its accounting, waiting at most 2 s; where the job
// asks, with the scan of its pod's containers at this end of the probe (app) the key names. The CPU sample's
// time is the reply's arrival less how long before it the server says it sampled, at most the
// call's own time.
func serverSample(ctx context.Context, job Job, app, key string) (usage, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	path := PathCPU
	if len(job.ServerApp) > 0 && app != "" {
		path += "?" + url.Values{"app": {app}, "ids": {strings.Join(job.ServerApp, ",")}, "probe": {key}}.Encode()
	}
	sent := time.Now()
	var r CPUReply
	if err := controlCall(ctx, job, http.MethodGet, path, &r); err != nil {
		return usage{}, err
	}
	now := time.Now()
	return r.sample(now, now.Sub(sent)), nil
}

// roundedSeconds is d in seconds, rounded to the millisecond.
func roundedSeconds(d time.Duration) float64 { return math.Round(d.Seconds()*1e3) / 1e3 }

// cpuUse is the schema's form of a cpustat.Use, to the millisecond.
func cpuUse(u cpustat.Use) *v1alpha1.CPUUse {
	out := &v1alpha1.CPUUse{WallSeconds: roundedSeconds(u.Wall), CPUSeconds: roundedSeconds(u.CPU), RunQueueWaitSeconds: roundedSeconds(u.RunDelay),
		ThrottledSeconds: roundedSeconds(u.Throttled), ThrottledPeriods: u.ThrottledPeriods, LimitCores: u.LimitCores,
		NodeIdleEntries: counted(u.IdleEntries, u.IdleCounted)}
	if u.LimitCores > 0 {
		out.LimitFrom = v1alpha1.LimitFromCgroup
	}
	return out
}

// appUse is the schema's form of what the pod's other containers did over a probe, by
// container, in the order of their IDs; the window is each one's wall time.
func appUse(r appResult) []v1alpha1.AppContainer {
	if r.window <= 0 {
		return nil
	}
	var out []v1alpha1.AppContainer
	for _, g := range r.groups {
		out = append(out, v1alpha1.AppContainer{ContainerID: g.ID, Processes: g.Processes, CPUUse: v1alpha1.CPUUse{
			WallSeconds: roundedSeconds(r.window), CPUSeconds: roundedSeconds(g.CPU), RunQueueWaitSeconds: roundedSeconds(g.RunDelay),
		}})
	}
	slices.SortFunc(out, func(x, y v1alpha1.AppContainer) int { return strings.Compare(x.ContainerID, y.ContainerID) })
	return out
}

// headers is what each packet carries besides payload on the probe's path (ifstat.Headers*):
// IPv6's when the host it talks to (its own address or URL's, else the job's) is IPv6.
func headers(job Job, p ProbeSpec) int64 {
	host := job.Host
	if p.Address != "" {
		host, _, _ = net.SplitHostPort(p.Address)
	} else if u, err := url.Parse(p.URL); err == nil && p.URL != "" {
		host = u.Hostname()
	}
	if ip := net.ParseIP(host); ip != nil && ip.To4() == nil {
		return ifstat.HeadersIPv6
	}
	return ifstat.HeadersIPv4
}

// traffic is the schema's form of what the interfaces carried from before to end; nil when the
// counters could not be read.
func traffic(end, before ifstat.Sample, headers int64) *v1alpha1.Traffic {
	if fault.On(fault.TrafficOwnCounted) {
		end.OwnBytes = before.OwnBytes
	}
	u := end.Since(before, headers)
	if u.Wall <= 0 {
		return nil
	}
	return &v1alpha1.Traffic{WallSeconds: roundedSeconds(u.Wall), InterfaceBytes: u.Bytes, InterfacePackets: u.Packets,
		AgentBytes: u.OwnBytes, OtherBytes: u.OtherBytes, OtherBitsPerSecond: math.Round(u.OtherBitsPerSecond)}
}

// ptrValue is *p, 0 for nil.
func ptrValue(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

// counted is n, or nil when it was not counted.
func counted(n int64, ok bool) *int64 {
	if !ok {
		return nil
	}
	return &n
}
