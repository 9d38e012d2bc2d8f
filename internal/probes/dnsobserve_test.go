package probes

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
)

var foldConf = resolver.ParseResolvConf("search ns.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\noptions ndots:5\n")

func foldAnswer(name, _ string) resolver.Rcode {
	switch name {
	case "example.com.", "kubernetes.default.svc.cluster.local.":
		return resolver.NoError
	}
	return resolver.NXDomain
}

// wire plays a resolver's traffic into a folder: queries and answers in time order, 1 ms
// round trips, ids counting up.
type wire struct {
	f  *lookupFolder
	at time.Time
	id uint16
}

func newWire(k resolver.Kind) *wire {
	return &wire{f: newLookupFolder(k, foldConf), at: time.Unix(1e9, 0)}
}

func (w *wire) tick(d time.Duration) { w.at = w.at.Add(d) }

// lookup walks name's candidates asking types together (glibc, Go) or one after the other
// (single-request), as the model says the resolver does.
func (w *wire) lookup(name string, types []string, together bool) {
	for _, st := range resolver.Simulate(resolver.Glibc, foldConf, name, foldAnswer).Steps {
		var asked []string
		for _, typ := range types {
			if st.Queries[resolver.TypeA]+st.Queries[resolver.TypeAAAA] == 0 {
				continue
			}
			w.id++
			w.f.Query(w.at, w.id, st.Name, typ)
			asked = append(asked, typ)
			if !together {
				w.tick(time.Millisecond)
				w.f.Answer(w.at, w.id, st.Name, typ, foldAnswer(st.Name, typ))
			}
		}
		if together {
			w.tick(time.Millisecond)
			for i, typ := range asked {
				w.f.Answer(w.at, w.id-uint16(len(asked)-1-i), st.Name, typ, foldAnswer(st.Name, typ))
			}
		}
		w.tick(100 * time.Microsecond)
	}
}

var both = []string{resolver.TypeA, resolver.TypeAAAA}

func byName(ns []DNSObservedName) map[string]DNSObservedName {
	m := map[string]DNSObservedName{}
	for _, n := range ns {
		m[n.Name] = n
	}
	return m
}

// Queries as a resolver sends them for a sequence of lookups fold back into those lookups.
func TestFoldLookups(t *testing.T) {
	w := newWire(resolver.Glibc)
	for i := 0; i < 3; i++ {
		w.lookup("example.com", both, true)
		w.lookup("kubernetes.default", both, true)
		w.lookup("missing.example.", both, true)
		w.tick(10 * time.Millisecond)
	}
	want := []DNSObservedName{
		{Name: "example.com", Lookups: 3, Queries: 24, QueriesPerLookup: 8, NXDomains: 18, AnsweredBy: "example.com.", TrailingDotQueries: 2, Ndots1Queries: 2},
		{Name: "kubernetes.default", Lookups: 3, Queries: 12, QueriesPerLookup: 4, NXDomains: 6, AnsweredBy: "kubernetes.default.svc.cluster.local.", TrailingDotQueries: 2, Ndots1Queries: 6},
		{Name: "missing.example.", Lookups: 3, Queries: 6, QueriesPerLookup: 2, NXDomains: 6, TrailingDotQueries: 2, Ndots1Queries: 2},
	}
	if diff := cmp.Diff(want, w.f.Names(), cmpopts.SortSlices(func(a, b DNSObservedName) bool { return a.Name < b.Name })); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

// Lookups that ask only some types, ask them one after the other, run alongside each other
// or retry are each counted once.
func TestFoldLookupShapes(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		play                   func(w *wire)
		wantLookups, wantQuery int
	}{
		{"ten A-only lookups, back to back", func(w *wire) {
			for i := 0; i < 10; i++ {
				w.lookup("example.com", []string{resolver.TypeA}, true)
			}
		}, 10, 40},
		{"ten A-only lookups of an absolute name", func(w *wire) {
			for i := 0; i < 10; i++ {
				w.lookup("example.com.", []string{resolver.TypeA}, true)
			}
		}, 10, 10},
		{"single-request: AAAA after the A answer", func(w *wire) {
			for i := 0; i < 5; i++ {
				w.lookup("example.com.", both, false)
			}
		}, 5, 10},
		{"two lookups walking the search list side by side", func(w *wire) {
			start := w.at
			w.lookup("example.com", both, true)
			w.at = start.Add(200 * time.Microsecond)
			w.lookup("example.com", both, true)
		}, 2, 16},
		{"a retry after the timeout stays in its lookup", func(w *wire) {
			w.f.Query(w.at, 1, "example.com.", resolver.TypeA)
			w.tick(5 * time.Second)
			w.f.Query(w.at, 2, "example.com.", resolver.TypeA)
			w.tick(time.Millisecond)
			w.f.Answer(w.at, 2, "example.com.", resolver.TypeA, resolver.NoError)
		}, 1, 2},
		{"a lookup the resolver gave up on ends by silence", func(w *wire) {
			w.f.Query(w.at, 1, "example.com.ns.svc.cluster.local.", resolver.TypeA)
			w.tick(11 * time.Second)
			w.f.Query(w.at, 2, "example.com.svc.cluster.local.", resolver.TypeA)
		}, 2, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWire(resolver.Glibc)
			tc.play(w)
			got := byName(w.f.Names())
			var lookups, queries int
			for _, n := range got {
				lookups += n.Lookups
				queries += n.Queries
			}
			if lookups != tc.wantLookups || queries != tc.wantQuery {
				t.Errorf("%d lookups with %d queries, want %d with %d: %+v", lookups, queries, tc.wantLookups, tc.wantQuery, got)
			}
		})
	}
}

// A walk the window's opening cut (its first candidates sent before the capture began) is one
// lookup of the name it walks, not lookups of its later candidates; an application asking a
// later candidate itself (an absolute name) keeps it as its own name.
func TestFoldWindowOpensMidWalk(t *testing.T) {
	cut := func(w *wire) {
		for _, name := range []string{"example.com.svc.cluster.local.", "example.com.cluster.local.", "example.com."} {
			for _, typ := range both {
				w.id++
				w.f.Query(w.at, w.id, name, typ)
				w.tick(time.Millisecond)
				w.f.Answer(w.at, w.id, name, typ, foldAnswer(name, typ))
			}
		}
		w.tick(10 * time.Millisecond)
	}
	w := newWire(resolver.Glibc)
	cut(w)
	for i := 0; i < 3; i++ {
		w.lookup("example.com", both, true)
	}
	got := byName(w.f.Names())
	if n := got["example.com"]; len(got) != 1 || n.Lookups != 4 || n.Queries != 6+24 || n.AnsweredBy != "example.com." {
		t.Errorf("a cut walk and 3 whole ones: %+v, want example.com alone with 4 lookups and 30 queries", got)
	}

	w = newWire(resolver.Glibc)
	for i := 0; i < 3; i++ {
		w.lookup("example.com.", both, true)
	}
	w.lookup("example.com", both, true)
	got = byName(w.f.Names())
	if got["example.com."].Lookups != 3 || got["example.com"].Lookups != 1 {
		t.Errorf("3 lookups of the absolute name, then one of the relative: %+v", got)
	}
}

// Whatever the traffic, the folder's memory stays bounded and what it leaves out is counted.
func TestFoldBounded(t *testing.T) {
	w := newWire(resolver.Glibc)
	const n = 3 * maxObservedName
	for i := 0; i < n; i++ {
		w.id++
		w.f.Query(w.at, w.id, fmt.Sprintf("host-%d.example.", i), resolver.TypeA) // never answered
		w.tick(time.Millisecond)
	}
	if len(w.f.byName) > maxObservedName || len(w.f.pending) > maxPending {
		t.Errorf("%d names, %d pending: over the bounds", len(w.f.byName), len(w.f.pending))
	}
	if w.f.Overflow != n-maxObservedName {
		t.Errorf("overflow %d, want %d", w.f.Overflow, n-maxObservedName)
	}
	if open := len(w.f.index); open > 2*(10000+sweepEvery) {
		t.Errorf("%d index entries after the idle lookups should have been swept", open)
	}
}

// BenchmarkFoldALookups: A-only lookups of one name, the shape that made grouping quadratic.
func BenchmarkFoldALookups(b *testing.B) {
	w := newWire(resolver.Glibc)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		w.lookup("example.com", []string{resolver.TypeA}, true)
	}
}

// Whatever the pod sends and receives, in whatever order, the folder neither panics nor grows
// past its bounds, and every query is either grouped or counted as overflow.
func FuzzFoldLookups(f *testing.F) {
	f.Add([]byte("\x00\x01a\x01\x00\x01b\x80\x02a\x81"))
	names := []string{"example.com.", "example.com.ns.svc.cluster.local.", "example.com.svc.cluster.local.", "kubernetes.default.svc.cluster.local.", "x."}
	types := []string{resolver.TypeA, resolver.TypeAAAA}
	rcodes := []resolver.Rcode{resolver.NoError, resolver.NXDomain, resolver.NoData, resolver.ServFail}
	f.Fuzz(func(t *testing.T, events []byte) {
		fold := newLookupFolder(resolver.Glibc, foldConf)
		at := time.Unix(1e9, 0)
		queries := 0
		for i := 0; i+1 < len(events); i += 2 {
			b, c := events[i], events[i+1]
			at = at.Add(time.Duration(c) * 100 * time.Millisecond)
			name, qtype, id := names[int(b)%len(names)], types[int(b>>3)%2], uint16(c%7)
			if b&0x80 == 0 {
				queries++
				fold.Query(at, id, name, qtype)
			} else {
				fold.Answer(at, id, name, qtype, rcodes[int(b>>4)%len(rcodes)])
			}
		}
		grouped := 0
		for _, n := range fold.Names() {
			grouped += n.Queries
		}
		if grouped+fold.Overflow != queries || len(fold.pending) > maxPending || fold.open > maxOpenLookups || fold.open < 0 {
			t.Fatalf("%d queries: %d grouped + %d overflow; %d pending, %d open", queries, grouped, fold.Overflow, len(fold.pending), fold.open)
		}
	})
}
