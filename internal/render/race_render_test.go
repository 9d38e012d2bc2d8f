package render

import (
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
)

func TestWriteRace(t *testing.T) {
	fix := probes.DNSRaceRun{Mode: probes.RaceReopen, Lookups: 500, Latency: probes.Latency{P50Micros: 400, P99Micros: 900, MaxMicros: 1200}}
	race := &probes.DNSRace{Name: "kubernetes.default.svc.cluster.local.", TimeoutSeconds: 1, Attempts: 2, Concurrency: 8,
		Measured: probes.DNSRaceRun{Mode: probes.RaceTogether, Lookups: 500, Slow: 47, Lost: 47, Latency: probes.Latency{P50Micros: 420, P99Micros: 1.0e6, MaxMicros: 1.01e6}}, Fix: &fix}
	r := &report.DNSReport{Result: &agent.DNSReport{DNSResult: &probes.DNSResult{Resolver: resolver.Glibc, Race: race}}, RaceAdvice: &report.RaceAdvice{Advice: "set options single-request-reopen", Command: "kubectl patch …"}}
	var b strings.Builder
	writeRace(&b, r)
	for _, want := range []string{
		"Race check: kubernetes.default.svc.cluster.local. asked 500 times, as the glibc resolver sends A and AAAA (together), 8 lookups at once, timeout 1 s × 2 attempts",
		"  together:              47 of 500 lookups waited out a timeout (9.4 %), 47 queries lost, 0 failed; p50 420 µs, p99 1.00 s, max 1.01 s",
		"  single-request-reopen: 0 of 500 lookups waited out a timeout (0.0 %), 0 queries lost, 0 failed; p50 400 µs",
		"  set options single-request-reopen\n  kubectl patch …\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, b.String())
		}
	}
}

// The race check's figures: for --fail-if (dns.race.slow, .slow_percent, .lost) and OpenMetrics.
func TestRaceFigures(t *testing.T) {
	if got := report.DNSPlannedFigures([]string{"x"}, true, false); got["dns.race.slow"] != report.UnitCount || got["dns.race.slow_percent"] != report.UnitPercent || got["dns.race.lost"] != report.UnitCount {
		t.Errorf("planned %v", got)
	}
	if got := report.DNSPlannedFigures([]string{"x"}, false, false); len(got) != len(report.DnsStats)+1 || got["valid"] != report.UnitCount {
		t.Errorf("planned without --race: %v", got)
	}
	r := &report.DNSReport{Result: &agent.DNSReport{DNSResult: &probes.DNSResult{Resolver: resolver.Glibc,
		Race: &probes.DNSRace{Measured: probes.DNSRaceRun{Mode: probes.RaceTogether, Lookups: 500, Slow: 47, Lost: 48}}}}}
	got := map[string]float64{}
	for _, f := range r.FigureValues() {
		got[f.Name] = f.Value
	}
	if got["dns.race.slow"] != 47 || got["dns.race.slow_percent"] != 9.4 || got["dns.race.lost"] != 48 {
		t.Errorf("figures %v", got)
	}
	var b strings.Builder
	if err := WriteDNSMetrics(&b, r); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"netbench_dns_race_slow_lookups{", "} 47.0\n", "netbench_dns_race_lost_queries{", "} 48.0\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("OpenMetrics lacks %q:\n%s", want, b.String())
		}
	}
}
