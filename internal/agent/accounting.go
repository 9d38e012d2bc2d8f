package agent

import (
	"context"
	"math"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cpustat"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/internal/ifstat"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// usage is one agent's accounting at one moment: its CPU, its pod's interfaces with its own
// I/O, and the CPU of the other containers' processes it can see, by cgroup.
type usage struct {
	cpu cpustat.Sample
	net ifstat.Sample
	app map[string]cpustat.Group
}

func readUsage() usage { return usage{cpu: cpustat.Read(), net: ifstat.Read(), app: cpustat.Others()} }

// accounting holds the accounting of the client, and of the server where the probe talks to
// it, taken as a probe starts: what finish compares the end with.
type accounting struct {
	job    Job
	client usage
	server *usage
}

func startAccounting(ctx context.Context, job Job, p ProbeSpec) accounting {
	a := accounting{job: job}
	if probeUsesServer(job, p) {
		if s, err := serverSample(ctx, job); err == nil {
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
	h := headers(a.job)
	v := &v1alpha1.Validity{Valid: true, Client: cpuUse(client), ClientTraffic: traffic(end.net, a.client.net, h),
		ClientApp: appUse(end, a.client)}
	if a.server != nil {
		if srv, err := serverSample(ctx, a.job); err == nil {
			v.Server, v.ServerApp = cpuUse(srv.cpu.Since(a.server.cpu)), appUse(srv, *a.server)
			// What the client sent again crossed the server's interface too, unread where the
			// first copy had arrived (a receiver short of CPU drops behind its interface).
			srv.net.OwnBytes += end.net.Retransmitted - a.client.net.Retransmitted
			v.ServerTraffic = traffic(srv.net, a.server.net, h)
		}
	}
	res.Validity = v
}

// serverSample asks the server agent for its accounting, waiting at most 2 s.
func serverSample(ctx context.Context, job Job) (usage, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var r CPUReply
	if err := controlCall(ctx, job, http.MethodGet, PathCPU, &r); err != nil {
		return usage{}, err
	}
	return r.sample(time.Now()), nil
}

// roundedSeconds is d in seconds, rounded to the millisecond.
func roundedSeconds(d time.Duration) float64 { return math.Round(d.Seconds()*1e3) / 1e3 }

// cpuUse is the schema's form of a cpustat.Use, to the millisecond.
func cpuUse(u cpustat.Use) *v1alpha1.CPUUse {
	out := &v1alpha1.CPUUse{WallSeconds: roundedSeconds(u.Wall), CPUSeconds: roundedSeconds(u.CPU), RunQueueWaitSeconds: roundedSeconds(u.RunDelay),
		ThrottledSeconds: roundedSeconds(u.Throttled), ThrottledPeriods: u.ThrottledPeriods, LimitCores: u.LimitCores}
	if u.LimitCores > 0 {
		out.LimitFrom = v1alpha1.LimitFromCgroup
	}
	return out
}

// appUse is what the other containers' processes seen at both ends used from before to end, by
// cgroup (a process that started or ended between them counts from, or up to, what it left).
func appUse(end, before usage) []v1alpha1.AppContainer {
	wall := end.cpu.At.Sub(before.cpu.At)
	var out []v1alpha1.AppContainer
	for cg, e := range end.app {
		b, ok := before.app[cg]
		if !ok || wall <= 0 {
			continue
		}
		out = append(out, v1alpha1.AppContainer{ContainerID: e.ID, Processes: e.Processes, CPUUse: v1alpha1.CPUUse{
			WallSeconds: roundedSeconds(wall), CPUSeconds: roundedSeconds(max(0, e.CPU-b.CPU)), RunQueueWaitSeconds: roundedSeconds(max(0, e.RunDelay-b.RunDelay)),
		}})
	}
	slices.SortFunc(out, func(x, y v1alpha1.AppContainer) int { return strings.Compare(x.ContainerID, y.ContainerID) })
	return out
}

// headers is what each packet carries besides payload on the job's path (ifstat.Headers*).
func headers(job Job) int64 {
	if ip := net.ParseIP(job.Host); ip != nil && ip.To4() == nil {
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
