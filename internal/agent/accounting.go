package agent

import (
	"context"
	"math"
	"net/http"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cpustat"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// accounting holds the CPU accounting of the client, and of the server where the probe talks
// to it, taken as a probe starts: what finish compares the end with.
type accounting struct {
	job    Job
	client cpustat.Sample
	server *cpustat.Sample
}

func startAccounting(ctx context.Context, job Job, p ProbeSpec) accounting {
	a := accounting{job: job}
	if probeUsesServer(job, p) {
		if s, err := serverSample(ctx, job); err == nil {
			a.server = &s
		}
	}
	a.client = cpustat.Read()
	return a
}

// finish records the probe's CPU use in res: CPUSeconds (the client's) and the validity block's
// accounting, which the plugin judges (it knows the pods' limits).
func (a accounting) finish(ctx context.Context, res *ProbeResult) {
	client := cpustat.Read().Since(a.client)
	res.CPUSeconds = math.Round(client.CPU.Seconds()*1e3) / 1e3
	v := &v1alpha1.Validity{Valid: true, Client: cpuUse(client)}
	if a.server != nil {
		if end, err := serverSample(ctx, a.job); err == nil {
			v.Server = cpuUse(end.Since(*a.server))
		}
	}
	res.Validity = v
}

// serverSample asks the server agent for its CPU accounting, waiting at most 2 s.
func serverSample(ctx context.Context, job Job) (cpustat.Sample, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	var r CPUReply
	if err := controlCall(ctx, job, http.MethodGet, PathCPU, &r); err != nil {
		return cpustat.Sample{}, err
	}
	return r.sample(time.Now()), nil
}

// cpuUse is the schema's form of a cpustat.Use, to the millisecond.
func cpuUse(u cpustat.Use) *v1alpha1.CPUUse {
	ms := func(d time.Duration) float64 { return math.Round(d.Seconds()*1e3) / 1e3 }
	out := &v1alpha1.CPUUse{WallSeconds: ms(u.Wall), CPUSeconds: ms(u.CPU), RunQueueWaitSeconds: ms(u.RunDelay),
		ThrottledSeconds: ms(u.Throttled), ThrottledPeriods: u.ThrottledPeriods, LimitCores: u.LimitCores}
	if u.LimitCores > 0 {
		out.LimitFrom = v1alpha1.LimitFromCgroup
	}
	return out
}
