package probes

import (
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
)

// midWalk reports, for a query that may belong to a walk the window's opening cut, the name
// whose walk it is a later step of and the candidates from it on; nil otherwise. It applies
// only within idle of the window's start, and before that name has been seen starting a lookup of
// its own: after that, the query is the application asking the candidate itself.
func (f *lookupFolder) midWalk(name string, at time.Time) (string, []string) {
	if at.Sub(f.first) > f.idle {
		return "", nil
	}
	var bases []string
	for _, s := range f.c.Search {
		if b, ok := strings.CutSuffix(name, "."+strings.TrimSuffix(s, ".")+"."); ok {
			bases = append(bases, b)
		}
	}
	for _, b := range append(bases, strings.TrimSuffix(name, ".")) {
		if st := f.byName[b]; st != nil && st.Lookups > 0 {
			continue
		}
		cands := resolver.Candidates(f.k, f.c, b)
		for i := 1; i < len(cands); i++ {
			if cands[i] == name {
				return b, cands[i:]
			}
		}
	}
	return "", nil
}

// noteFragment records the one cut walk the window's opening may show at candidate name; a
// second lookup there is the application's own (when the name then has more lookups than
// that one, it keeps its own entry).
func (f *lookupFolder) noteFragment(name, of string) {
	if len(f.fragments) < maxObservedName {
		f.fragments[name] = of
	}
}

// mergeFragments folds a name seen only as the window's cut-off walks into the name they were
// walking, when the window also saw that name's own lookups (an application asking a later
// candidate itself, such as an absolute name, keeps it as its own).
func (f *lookupFolder) mergeFragments() {
	for name, of := range f.fragments {
		st, into := f.byName[name], f.byName[of]
		if st == nil || into == nil || st.Lookups != 1 || into.Lookups == 0 {
			// Lookups of its own at the candidate, or none of the name it was walking.
			continue
		}
		into.Lookups += st.Lookups
		into.Queries += st.Queries
		into.NXDomains += st.NXDomains
		into.Truncated += st.Truncated
		into.TCPQueries += st.TCPQueries
		if into.AnsweredBy == "" {
			into.AnsweredBy = st.AnsweredBy
		}
		delete(f.byName, name)
		delete(f.fragments, name)
	}
}
