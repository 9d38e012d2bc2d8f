package agent

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
)

// checkDNSProbe checks a DNS probe's names, replicas, race check, lookup families and capacity
// ramp.
func checkDNSProbe(p ProbeSpec) error {
	if len(p.Names) == 0 {
		return fmt.Errorf("no names")
	}
	if err := checkReplicas(p.DNSReplicas); err != nil {
		return err
	}
	if p.DNSRace < 0 || p.DNSRace > probes.MaxRaceLookups {
		return fmt.Errorf("race check of %d lookups: want 0-%d", p.DNSRace, probes.MaxRaceLookups)
	}
	if err := checkLookupFamilies(p); err != nil {
		return err
	}
	return checkDNSLoad(p)
}

func checkReplicas(rs []probes.DNSReplica) error {
	if len(rs) > probes.MaxDNSReplicas {
		return fmt.Errorf("%d DNS replicas: at most %d", len(rs), probes.MaxDNSReplicas)
	}
	seen := map[netip.Addr]bool{}
	for _, r := range rs {
		a, err := netip.ParseAddr(r.Address)
		switch {
		case err != nil:
			return fmt.Errorf("DNS replica %q: not an IP address", r.Address)
		case !a.IsGlobalUnicast():
			return fmt.Errorf("DNS replica %s: not a unicast address", r.Address)
		case seen[a.Unmap()]:
			return fmt.Errorf("DNS replica %s: twice", r.Address)
		}
		seen[a.Unmap()] = true
	}
	return nil
}

// checkDNSLoad bounds the capacity ramp: all three set, or none.
func checkDNSLoad(p ProbeSpec) error {
	if p.DNSLoadSeconds == 0 && p.DNSLoadCeilingQPS == 0 && p.DNSLoadP99Millis == 0 {
		return nil
	}
	switch {
	case !(p.DNSLoadSeconds >= 1 && p.DNSLoadSeconds <= probes.MaxLoadBudget.Seconds()):
		return fmt.Errorf("dns load of %gs: want 1-%g s", p.DNSLoadSeconds, probes.MaxLoadBudget.Seconds())
	case !(p.DNSLoadCeilingQPS >= probes.MinLoadQPS && p.DNSLoadCeilingQPS <= probes.MaxLoadQPS):
		return fmt.Errorf("dns load ceiling %g queries/s: want %d-%d", p.DNSLoadCeilingQPS, probes.MinLoadQPS, probes.MaxLoadQPS)
	case !(p.DNSLoadP99Millis >= 0.1 && p.DNSLoadP99Millis <= 900):
		return fmt.Errorf("dns load p99 budget %g ms: want 0.1-900 ms (below the 1 s timeout)", p.DNSLoadP99Millis)
	case p.ObserveSeconds > 0:
		return fmt.Errorf("dns load: not with a passive capture")
	}
	return nil
}

// dnsLoadSpec is the capacity ramp of a DNS probe: the UDP queries of each name's cold lookup as
// the mix, the pod's nameserver and then the replicas given as the servers.
func dnsLoadSpec(p ProbeSpec, res *probes.DNSResult) probes.DNSLoadSpec {
	spec := probes.DNSLoadSpec{Lookups: len(res.Names), Ceiling: p.DNSLoadCeilingQPS, Budget: seconds(p.DNSLoadSeconds),
		P99: time.Duration(p.DNSLoadP99Millis * float64(time.Millisecond))}
	spec.Lookups = 0
	for _, n := range res.Names {
		var qs []probes.DNSLoadQuery
		for _, q := range n.Timeline {
			if q.Transport == "" {
				qs = append(qs, probes.DNSLoadQuery{Name: q.Name, Type: q.Type})
			}
		}
		if len(spec.Mix)+len(qs) > probes.MaxLoadMix {
			break // whole lookups only, so that the mix's queries per lookup are the pod's
		}
		spec.Mix, spec.Lookups = append(spec.Mix, qs...), spec.Lookups+1
	}
	spec.Servers = append([]probes.DNSReplica{{Address: res.Config.Nameservers[0]}}, p.DNSReplicas...)
	return spec
}
