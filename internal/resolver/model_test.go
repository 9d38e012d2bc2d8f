package resolver

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func external(name, _ string) Rcode {
	if strings.HasSuffix(name, ".cluster.local.") || strings.HasSuffix(name, ".compute.internal.") {
		return NXDomain
	}
	return NoError
}

var k8s = ParseResolvConf(`search default.svc.cluster.local svc.cluster.local cluster.local lab-region-1.compute.internal
nameserver 10.96.0.10
options ndots:5`)

func TestParseResolvConf(t *testing.T) {
	want := Config{Nameservers: []string{"10.96.0.10"}, Search: []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local", "lab-region-1.compute.internal"},
		Ndots: 5, Attempts: 2, TimeoutSeconds: 5}
	if diff := cmp.Diff(want, k8s); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	got := ParseResolvConf("domain a.example # comment\nnameserver 1.1.1.1\nnameserver 2.2.2.2\noptions timeout:2 attempts:3 single-request rotate ndots:99\n")
	want = Config{Nameservers: []string{"1.1.1.1", "2.2.2.2"}, Search: []string{"a.example"}, Ndots: 15, Attempts: 3, TimeoutSeconds: 2, SingleRequest: true, Rotate: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if again := ParseResolvConf(got.String()); !cmp.Equal(got, again) {
		t.Errorf("String does not round-trip: %+v", again)
	}
}

// The Kubernetes default: one external name with ndots:5 and four search domains is ten queries,
// eight of them NXDOMAIN, for every resolver; a trailing dot makes it two.
func TestKubernetesAmplification(t *testing.T) {
	for _, k := range Kinds {
		w := Simulate(k, k8s, "example.com", external)
		if w.QueryCount() != 10 || w.NXDomainCount() != 8 || w.Answered != "example.com." {
			t.Errorf("%s: %d queries, %d NXDOMAIN, answered by %q; want 10, 8, example.com.", k, w.QueryCount(), w.NXDomainCount(), w.Answered)
		}
		w = Simulate(k, k8s, "example.com.", external)
		if w.QueryCount() != 2 || w.NXDomainCount() != 0 {
			t.Errorf("%s with a trailing dot: %d queries, %d NXDOMAIN; want 2, 0", k, w.QueryCount(), w.NXDomainCount())
		}
	}
}

func TestCandidates(t *testing.T) {
	c := Config{Search: []string{"a", "b"}, Ndots: 2}
	tests := []struct {
		kind Kind
		name string
		want []string
	}{
		{Glibc, "x", []string{"x.a.", "x.b.", "x."}},
		{Glibc, "x.y.z", []string{"x.y.z.", "x.y.z.a.", "x.y.z.b."}},
		{Glibc, "x.y.z.", []string{"x.y.z."}},
		{Musl, "x", []string{"x.a.", "x.b.", "x."}},
		{Musl, "x.y.z", []string{"x.y.z."}}, // musl never searches a name with enough dots
		{Go, "x.y.z", []string{"x.y.z.", "x.y.z.a.", "x.y.z.b."}},
		{Go, "x.", []string{"x."}},
	}
	for _, tc := range tests {
		if diff := cmp.Diff(tc.want, Candidates(tc.kind, c, tc.name)); diff != "" {
			t.Errorf("%s %q (-want +got):\n%s", tc.kind, tc.name, diff)
		}
	}
}

// musl stops at NODATA, glibc and Go go on to the next candidate.
func TestNoDataStopsOnlyMusl(t *testing.T) {
	c := Config{Search: []string{"a", "b"}, Ndots: 5, Attempts: 2}
	nodataFirst := func(name, _ string) Rcode {
		if name == "svc.a." {
			return NoData
		}
		return NXDomain
	}
	for k, want := range map[Kind]int{Glibc: 3, Go: 3, Musl: 1} {
		if got := len(Simulate(k, c, "svc", nodataFirst).Steps); got != want {
			t.Errorf("%s: %d candidates tried, want %d", k, got, want)
		}
	}
}

// A lookup of one family sends one query per candidate, of that type only; where the name has
// no address of that family (NODATA), glibc and Go walk on and musl stops, as for A and AAAA.
func TestLookupOfOneFamily(t *testing.T) {
	for _, f := range []string{"4", "6"} {
		c := k8s
		c.LookupFamily = f
		want := map[string]string{"4": "A", "6": "AAAA"}[f]
		for _, k := range Kinds {
			w := Simulate(k, c, "example.com", external)
			if w.QueryCount() != 5 || w.NXDomainCount() != 4 || w.Answered != "example.com." {
				t.Errorf("%s, family %s: %d queries, %d NXDOMAIN, answered by %q; want 5, 4, example.com.", k, f, w.QueryCount(), w.NXDomainCount(), w.Answered)
			}
			for _, st := range w.Steps {
				if len(st.Queries) != 1 || st.Queries[want] != 1 {
					t.Errorf("%s, family %s: %s asked %v, want one %s", k, f, st.Name, st.Queries, want)
				}
			}
		}
	}
	ipv4Only := func(name, qtype string) Rcode {
		if name == "svc.a." {
			return map[string]Rcode{"A": NoError, "AAAA": NoData}[qtype]
		}
		return NXDomain
	}
	c := Config{Search: []string{"a", "b"}, Ndots: 5, Attempts: 2, LookupFamily: "6"}
	for k, want := range map[Kind]int{Glibc: 3, Go: 3, Musl: 1} {
		if w := Simulate(k, c, "svc", ipv4Only); len(w.Steps) != want || w.Answered != "" {
			t.Errorf("%s, AAAA only of an IPv4-only name: %d candidates, answered %q; want %d, none", k, len(w.Steps), w.Answered, want)
		}
	}
}
