package report

import (
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
)

// A patch of one dnsConfig option keeps the template's others (the list is replaced whole).
func TestDNSOptionsPatch(t *testing.T) {
	one := "1"
	got := DNSOptionsPatch("shop", "deployment/web", []DNSOption{{Name: "timeout", Value: &one}, {Name: "ndots", Value: &one}}, "single-request-reopen", "")
	want := `kubectl patch -n shop deployment/web --type=strategic -p '{"spec":{"template":{"spec":{"dnsConfig":{"options":[{"name":"timeout","value":"1"},{"name":"ndots","value":"1"},{"name":"single-request-reopen"}]}}}}}'`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if got := DNSOptionsPatch("shop", "deployment/web", []DNSOption{{Name: "ndots", Value: &one}}, "ndots", "2"); !strings.Contains(got, `"options":[{"name":"ndots","value":"2"}]`) {
		t.Errorf("an option set again is replaced, not repeated: %s", got)
	}
}

// The advice fits the resolver: single-request-reopen for glibc sending both at once (with the
// fix's measured count and a patch), nothing for Go, no option for musl.
func TestPlanRaceFix(t *testing.T) {
	run := func(m probes.RaceMode, slow int) probes.DNSRaceRun {
		return probes.DNSRaceRun{Mode: m, Lookups: 500, Slow: slow, Lost: slow}
	}
	fix := run(probes.RaceReopen, 0)
	for _, tc := range []struct {
		name    string
		k       resolver.Kind
		race    probes.DNSRace
		advice  string
		command bool
	}{
		{"glibc racing", resolver.Glibc, probes.DNSRace{Measured: run(probes.RaceTogether, 47), Fix: &fix}, "set options single-request-reopen (glibc sends AAAA after A's answer, from a new socket): measured the same way, 0 of 500 lookups waited out a timeout instead of 47 of 500", true},
		{"glibc clean", resolver.Glibc, probes.DNSRace{Measured: run(probes.RaceTogether, 0), Fix: &fix}, "no lookup waited out a timeout: nothing to fix", false},
		{"glibc with the option", resolver.Glibc, probes.DNSRace{Measured: run(probes.RaceReopen, 0)}, "single-request-reopen is set", false},
		{"musl", resolver.Musl, probes.DNSRace{Measured: run(probes.RaceTogether, 30)}, "musl sends A and AAAA at once from one socket and has no option to change that", false},
		{"go", resolver.Go, probes.DNSRace{Measured: run(probes.RaceSeparate, 0)}, "Go's resolver sends A and AAAA from separate sockets", false},
		{"use-vc", resolver.Glibc, probes.DNSRace{Measured: probes.DNSRaceRun{Mode: probes.RaceTCP}}, "asks over TCP (use-vc)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := PlanRaceFix(&probes.DNSResult{Resolver: tc.k, Race: &tc.race}, "deployment/web", "shop", nil)
			if !strings.Contains(a.Advice, tc.advice) || (a.Command != "") != tc.command {
				t.Errorf("advice %+v: want %q, a command %t", a, tc.advice, tc.command)
			}
			if tc.command && !strings.Contains(a.Command, `{"name":"single-request-reopen"}`) {
				t.Errorf("command %s", a.Command)
			}
		})
	}
	if PlanRaceFix(&probes.DNSResult{}, "", "", nil) != nil {
		t.Error("advice without a race check")
	}
}
