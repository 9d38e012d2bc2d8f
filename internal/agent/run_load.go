package agent

import (
	"context"
	"errors"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
)

// runUnderLoad runs one of the probes that load the agent server at addr (the rate probes,
// loaded-rtt) into res; those that need UDP are skipped where no datagram gets through
// (udpBlocked).
func runUnderLoad(ctx context.Context, job Job, p ProbeSpec, addr string, res *ProbeResult) (string, error) {
	spec := probes.RateSpec{Address: addr, Token: job.Token, Key: probes.UDPKey(job.Token), Connections: p.Connections,
		Duration: seconds(p.DurationSeconds), RequestBytes: p.Size, ResponseBytes: p.ResponseSize, MaxTransactions: int64(p.Count)}
	if job.mesh {
		spec.PodTimeWaitCeiling = MeshTimeWaitCeiling
	}
	var err error
	switch p.Kind {
	case ProbeTCPRR:
		res.Rate, err = probes.TCPRR(ctx, spec)
		return "", err
	case ProbeTCPCRR:
		res.Rate, err = probes.TCPCRR(ctx, spec)
		if errors.Is(err, probes.ErrStoppedFirst) {
			return err.Error(), nil
		}
		return "", err
	case ProbeUDPRR:
		res.Rate, err = probes.UDPRR(ctx, spec)
	case ProbeLoadedRTT:
		res.Loaded, err = probes.LoadedRTT(ctx, probes.LoadedSpec{
			UDP:  probes.UDPSpec{RTTSpec: probes.RTTSpec{Target: addr, Interval: time.Duration(p.IntervalMillis * float64(time.Millisecond))}, Size: max(p.Size, loadedUDPSize), Key: spec.Key},
			Load: probes.ThroughputSpec{Address: addr, Token: job.Token, Streams: p.Streams, Duration: spec.Duration},
		})
	}
	return udpBlocked(ctx, err)
}

// loadedUDPSize is a loaded-rtt probe's datagram size unless its spec gives one: the udp
// probe's.
const loadedUDPSize = 100
