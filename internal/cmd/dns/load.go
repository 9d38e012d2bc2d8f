package dns

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// loadOptions are the capacity ramp's flags (dns --load): load on the shared cluster DNS, so it
// runs only when --load asks for it, and every other flag of it is refused without --load.
type loadOptions struct {
	On       bool
	MaxQPS   float64
	Duration time.Duration
	P99      time.Duration
	// without names a ramp flag given without --load.
	without string
}

var loadTuning = []string{"load-max-qps", "load-duration", "load-p99"}

func (l *loadOptions) addFlags(cmd *cobra.Command) {
	l.MaxQPS, l.Duration, l.P99 = probes.DefaultLoadQPS, probes.DefaultLoadBudget, probes.DefaultLoadP99
	f := cmd.Flags()
	f.BoolVar(&l.On, "load", false, "measure the cluster DNS's capacity: ramp the pod's own query mix against its nameserver and each replica until p99 or loss degrades, and convert the knee into lookups per second (puts load on a shared service: bounded by the flags below)")
	f.Float64Var(&l.MaxQPS, "load-max-qps", l.MaxQPS, "with --load: the rate the ramp never exceeds, in queries per second")
	f.DurationVar(&l.Duration, "load-duration", l.Duration, "with --load: the whole ramp's time, shared equally by the nameserver and each replica")
	f.DurationVar(&l.P99, "load-p99", l.P99, "with --load: a rate whose p99 latency exceeds this is past the knee")
}

// noteFlags remembers a ramp flag set without --load, for validate to refuse.
func (l *loadOptions) noteFlags(f *pflag.FlagSet) {
	for _, name := range loadTuning {
		if f.Changed(name) && !l.On {
			l.without = name
			return
		}
	}
}

func (l *loadOptions) validate(observe time.Duration) error {
	switch {
	case l.without != "":
		return fmt.Errorf("--%s: the capacity ramp runs only with --load (it puts load on the shared cluster DNS)", l.without)
	case !l.On:
		return nil
	case observe > 0:
		return fmt.Errorf("--load: not with --observe (the capture would count the ramp's own queries)")
	case !(l.MaxQPS >= probes.MinLoadQPS && l.MaxQPS <= probes.MaxLoadQPS):
		return fmt.Errorf("--load-max-qps %g: want %d-%d queries per second", l.MaxQPS, probes.MinLoadQPS, probes.MaxLoadQPS)
	case l.Duration < 5*time.Second || l.Duration > probes.MaxLoadBudget:
		return fmt.Errorf("--load-duration %s: want 5s-%s", l.Duration, probes.MaxLoadBudget)
	case l.P99 < 100*time.Microsecond || l.P99 > 900*time.Millisecond:
		return fmt.Errorf("--load-p99 %s: want 100µs-900ms (below the ramp's 1 s timeout)", l.P99)
	}
	return nil
}

// apply adds the ramp to the DNS probe's spec.
func (l *loadOptions) apply(spec *agent.ProbeSpec) {
	if !l.On {
		return
	}
	spec.DNSLoadSeconds, spec.DNSLoadCeilingQPS = l.Duration.Seconds(), l.MaxQPS
	spec.DNSLoadP99Millis = float64(l.P99) / float64(time.Millisecond)
}

// lifetime is the time the ramp adds to the agent's life.
func (l *loadOptions) lifetime() time.Duration {
	if !l.On {
		return 0
	}
	return l.Duration
}

// nodeLocalInUse says whether the pod's nameserver is NodeLocal DNSCache, as far as the report
// could tell.
func nodeLocalInUse(s *report.DNSService) bool {
	return s != nil && s.NodeLocalCache != nil && s.NodeLocalCache.State == report.NodeLocalInUse
}

// checkTarget refuses a ramp against anything but the cluster DNS: a pod that does not ask its
// Service (dnsPolicy Default, its own nameservers, an unreadable Service) would send the load to
// a resolver outside the cluster's, which may be rate-limited per node.
func (l *loadOptions) checkTarget(s *report.DNSService) error {
	if !l.On || s.Skipped == "" {
		return nil
	}
	return fmt.Errorf("--load: the pod's nameserver is not known to be the cluster DNS Service %s/%s (%s): refusing to load it", s.Namespace, s.Name, strings.TrimPrefix(s.Skipped, "skipped: "))
}
