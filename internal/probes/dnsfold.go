package probes

import (
	"sort"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
)

// Bounds of the folder's memory, whatever the pod's traffic.
const (
	maxOpenLookups  = 1 << 16
	maxPending      = 1 << 16
	maxObservedName = 4096
	// otherGrace is how long a finished lookup still takes the other address type of its
	// answered name (a resolver that sends A and AAAA one after the other, or Go's two
	// goroutines racing their answers).
	otherGrace = 100 * time.Millisecond
	sweepEvery = 4096
)

// lookup is one application lookup being followed through the resolver's candidates.
type lookup struct {
	base  string
	cands []string
	pos   int
	// asked (when each type was last asked) and answered are per type at the current candidate.
	asked    map[string]time.Time
	answered map[string]bool
	done     bool      // answered, or nothing follows the current candidate
	resend   bool      // a UDP answer at the current candidate came truncated: TCP queries follow
	last     time.Time // last query or answer
	closedAt time.Time // zero while open
	keys     []string  // names under which it is indexed
}

// lookupFolder folds queries and answers seen on the wire, in time order, into the lookups
// that sent them, the way resolver kind k walks names with configuration c. Open lookups are
// indexed by the names they accept next, so each event costs O(1) whatever the traffic.
type lookupFolder struct {
	k     resolver.Kind
	c     resolver.Config
	idle  time.Duration // a lookup with no traffic for this long has ended (the resolver gave up)
	retry time.Duration // the earliest a resolver resends an unanswered query

	index   map[string][]*lookup
	open    int
	pending map[queryKey]*lookup // queries awaiting an answer
	answers map[string]resolver.Rcode
	byName  map[string]*DNSObservedName
	events  int

	// first is when the window opened (the capture's start; else the first event's time). A
	// lookup already walking then shows up within idle of it at a later candidate of its name:
	// fragments[X] names the name whose walk the lookup starting at candidate X so belongs to
	// (see mergeFragments).
	first     time.Time
	fragments map[string]string

	Overflow int
}

func newLookupFolder(k resolver.Kind, c resolver.Config) *lookupFolder {
	idle := time.Duration(max(c.TimeoutSeconds, 1)*max(c.Attempts, 1)) * time.Second
	retry := time.Duration(max(c.TimeoutSeconds, 1)) * time.Second / 2
	return &lookupFolder{k: k, c: c, idle: idle, retry: retry, index: map[string][]*lookup{},
		pending: map[queryKey]*lookup{}, answers: map[string]resolver.Rcode{}, byName: map[string]*DNSObservedName{},
		fragments: map[string]string{}}
}

type queryKey struct {
	id          uint16
	name, qtype string
}

// Query records a query the pod sent over UDP.
func (f *lookupFolder) Query(at time.Time, id uint16, name, qtype string) {
	f.query(at, id, name, qtype, false)
}

// QueryTCP records a query the pod sent over TCP (after a truncated answer, or with use-vc).
func (f *lookupFolder) QueryTCP(at time.Time, id uint16, name, qtype string) {
	f.query(at, id, name, qtype, true)
}

func (f *lookupFolder) query(at time.Time, id uint16, name, qtype string, tcp bool) {
	f.tick(at)
	l := f.find(name, qtype, at)
	if l == nil {
		if l = f.start(name, at); l == nil {
			f.Overflow++
			return
		}
	} else if l.cands[l.pos] != name {
		f.advance(l)
	}
	st := f.stat(l.base)
	if st == nil {
		f.Overflow++
		return
	}
	st.Queries++
	if tcp {
		st.TCPQueries++
	}
	l.asked[qtype] = at
	l.last = at
	if len(f.pending) >= maxPending {
		f.Overflow++
		return
	}
	f.pending[queryKey{id, name, qtype}] = l
}

// Answer records a response to the pod's query (id, name, qtype) with rcode rc.
func (f *lookupFolder) Answer(at time.Time, id uint16, name, qtype string, rc resolver.Rcode) {
	l := f.answered(at, id, name, qtype)
	if l == nil {
		return
	}
	if len(f.answers) < maxPending {
		f.answers[name+"/"+qtype] = rc
	}
	st := f.byName[l.base]
	switch rc {
	case resolver.NXDomain:
		st.NXDomains++
	case resolver.NoError:
		st.AnsweredBy = name
		l.done = true
	case resolver.NoData:
		l.done = l.done || f.k == resolver.Musl // musl ends the walk at NODATA
	}
	l.last = at
	if l.closedAt.IsZero() && l.cands[l.pos] == name && rc != resolver.ServFail {
		l.answered[qtype] = true
		f.maybeClose(l, at)
	}
}

// Truncated records a UDP answer with the TC bit: not the lookup's answer yet, the resolver
// asks again over TCP (glibc both types of the candidate).
func (f *lookupFolder) Truncated(at time.Time, id uint16, name, qtype string) {
	l := f.answered(at, id, name, qtype)
	if l == nil {
		return
	}
	f.byName[l.base].Truncated++
	l.last = at
	if l.closedAt.IsZero() && l.cands[l.pos] == name {
		l.resend = true
	}
}

// answered takes the lookup awaiting the answer to query (id, name, qtype), nil if none does.
func (f *lookupFolder) answered(at time.Time, id uint16, name, qtype string) *lookup {
	f.tick(at)
	key := queryKey{id, name, qtype}
	l := f.pending[key]
	delete(f.pending, key)
	return l
}

// maybeClose ends a lookup whose walk is over once every type it asked is answered.
func (f *lookupFolder) maybeClose(l *lookup, at time.Time) {
	if !l.done {
		return
	}
	for t := range l.asked {
		if !l.answered[t] {
			return
		}
	}
	l.closedAt = at
	f.open--
	f.reindex(l) // only the answered name stays, for otherGrace
}

// find returns the lookup that takes a query for name: an open one at that candidate or about
// to move on to it, or one just finished at that name that has not asked this type.
func (f *lookupFolder) find(name, qtype string, at time.Time) *lookup {
	for _, l := range f.index[name] {
		if !l.closedAt.IsZero() {
			if _, asked := l.asked[qtype]; !asked && at.Sub(l.closedAt) <= otherGrace && l.cands[l.pos] == name {
				l.closedAt = time.Time{}
				f.open++
				f.reindex(l)
				return l
			}
			continue
		}
		if at.Sub(l.last) <= f.idle && f.takes(l, name, qtype, at) {
			return l
		}
	}
	return nil
}

// takes reports whether an open lookup sends this query next: the first of its type at its
// candidate, a retry of an unanswered one after the resolver's timeout, or the walk moving
// on. A second query of a type within the timeout is another lookup running alongside.
func (f *lookupFolder) takes(l *lookup, name, qtype string, at time.Time) bool {
	if l.cands[l.pos] != name {
		return true // indexed under its next candidate
	}
	askedAt, asked := l.asked[qtype]
	return !asked || l.resend || (!l.answered[qtype] && at.Sub(askedAt) >= f.retry)
}

func (f *lookupFolder) start(name string, at time.Time) *lookup {
	if f.open >= maxOpenLookups {
		return nil
	}
	base := f.baseName(name)
	st := f.stat(base)
	if st == nil {
		return nil
	}
	st.Lookups++
	l := &lookup{base: base, cands: resolver.Candidates(f.k, f.c, base), asked: map[string]time.Time{}, answered: map[string]bool{}, last: at}
	if len(l.cands) == 0 || l.cands[0] != name {
		l.cands = []string{name}
	}
	if base == name && f.fragments[name] == "" {
		if of, rest := f.midWalk(name, at); rest != nil {
			l.cands = rest
			f.noteFragment(base, of)
		}
	}
	if len(l.cands) == 1 {
		l.done = true
	}
	f.open++
	f.reindex(l)
	return l
}

func (f *lookupFolder) advance(l *lookup) {
	l.pos++
	l.asked, l.answered, l.resend = map[string]time.Time{}, map[string]bool{}, false
	if l.pos == len(l.cands)-1 {
		l.done = true // the last candidate: nothing follows but its other type
	}
	f.reindex(l)
}

// reindex files l under the names it accepts now: its candidate, and the next one while the
// walk goes on; a closed lookup only under its candidate.
func (f *lookupFolder) reindex(l *lookup) {
	for _, k := range l.keys {
		f.unindex(k, l)
	}
	l.keys = l.keys[:0]
	l.keys = append(l.keys, l.cands[l.pos])
	if l.closedAt.IsZero() && !l.done && l.pos+1 < len(l.cands) {
		l.keys = append(l.keys, l.cands[l.pos+1])
	}
	for _, k := range l.keys {
		f.index[k] = append(f.index[k], l)
	}
}

func (f *lookupFolder) unindex(key string, l *lookup) {
	ls := f.index[key]
	for i, x := range ls {
		if x == l {
			ls = append(ls[:i], ls[i+1:]...)
			break
		}
	}
	if len(ls) == 0 {
		delete(f.index, key)
	} else {
		f.index[key] = ls
	}
}

// tick drops, every sweepEvery events, the lookups that have ended by silence or whose grace
// is over, and the queries that will not be answered any more.
func (f *lookupFolder) tick(at time.Time) {
	if f.first.IsZero() {
		f.first = at
	}
	if f.events++; f.events%sweepEvery != 0 {
		return
	}
	for key, ls := range f.index {
		kept := ls[:0]
		for _, l := range ls {
			if (l.closedAt.IsZero() && at.Sub(l.last) <= f.idle) || (!l.closedAt.IsZero() && at.Sub(l.closedAt) <= otherGrace) {
				kept = append(kept, l)
			} else if l.closedAt.IsZero() && l.keys[0] == key {
				l.closedAt = at
				f.open--
			}
		}
		if len(kept) == 0 {
			delete(f.index, key)
		} else {
			f.index[key] = kept
		}
	}
	for key, l := range f.pending {
		if at.Sub(l.last) > f.idle {
			delete(f.pending, key)
		}
	}
}

// baseName is the name as the application wrote it: the query's name less the search domain
// whose candidate list starts with it, or with the trailing dot unless the resolver would
// have tried it as is first anyway.
func (f *lookupFolder) baseName(name string) string {
	for _, s := range f.c.Search {
		if b, ok := strings.CutSuffix(name, "."+strings.TrimSuffix(s, ".")+"."); ok {
			if cands := resolver.Candidates(f.k, f.c, b); len(cands) > 0 && cands[0] == name {
				return b
			}
		}
	}
	if b := strings.TrimSuffix(name, "."); resolver.Candidates(f.k, f.c, b)[0] == name {
		return b
	}
	return name
}

func (f *lookupFolder) stat(base string) *DNSObservedName {
	s := f.byName[base]
	if s == nil {
		if len(f.byName) >= maxObservedName {
			return nil
		}
		s = &DNSObservedName{Name: base}
		f.byName[base] = s
	}
	return s
}

// Names returns what each name's lookups cost, most queries first, with what the model
// predicts for the same answers with a trailing dot and with ndots 1.
func (f *lookupFolder) Names() []DNSObservedName {
	answer := func(name, qtype string) resolver.Rcode {
		if rc, ok := f.answers[name+"/"+qtype]; ok {
			return rc
		}
		return resolver.NXDomain
	}
	f.mergeFragments()
	out := make([]DNSObservedName, 0, len(f.byName))
	for _, s := range f.byName {
		if s.Lookups > 0 {
			s.QueriesPerLookup = round3(float64(s.Queries) / float64(s.Lookups))
		}
		s.TrailingDotQueries = resolver.Simulate(f.k, f.c, strings.TrimSuffix(s.Name, ".")+".", answer).QueryCount()
		c1 := f.c
		c1.Ndots = 1
		s.Ndots1Queries = resolver.Simulate(f.k, c1, s.Name, answer).QueryCount()
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Queries != out[j].Queries {
			return out[i].Queries > out[j].Queries
		}
		return out[i].Name < out[j].Name
	})
	return out
}
