package matrix

import (
	"errors"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/path"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// familyErrors splits a job's error into what failed its IPv4 (or only) family and what failed
// its IPv6 twins (probes named *-v6) when the run measures both, each a line per failure: an
// IPv6 twin's failure fails only IPv6; any other ends the job, so the twins after it were not
// measured either.
func familyErrors(err error, both bool) (v4, v6 string) {
	if err == nil {
		return "", ""
	}
	if !both {
		return err.Error(), ""
	}
	var four, six []string
	for _, e := range flatten(err) {
		var pe *session.ProbeError
		if errors.As(e, &pe) && strings.HasSuffix(pe.Probe, path.V6Suffix) {
			six = append(six, e.Error())
		} else {
			four = append(four, e.Error())
		}
	}
	if len(four) > 0 && len(six) == 0 {
		six = four
	}
	return strings.Join(four, "; "), strings.Join(six, "; ")
}

// splitRateErrors takes the rate probes' failures out of a job's error, IPv4's (or the only
// family's) and the IPv6 twins' apart: the agents go on after them, so the pair's other
// figures stand.
func splitRateErrors(err error) (v4, v6 string, rest error) {
	if err == nil {
		return "", "", nil
	}
	var others []error
	var four, six []string
	for _, e := range flatten(err) {
		var pe *session.ProbeError
		switch {
		case !errors.As(e, &pe) || !agent.IsRateProbe(strings.TrimSuffix(pe.Probe, path.V6Suffix)):
			others = append(others, e)
		case strings.HasSuffix(pe.Probe, path.V6Suffix):
			six = append(six, e.Error())
		default:
			four = append(four, e.Error())
		}
	}
	return strings.Join(four, "; "), strings.Join(six, "; "), errors.Join(others...)
}

// flatten lists the errors err joins, however deep (errors.Join nests).
func flatten(err error) []error {
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var out []error
	for _, e := range j.Unwrap() {
		out = append(out, flatten(e)...)
	}
	return out
}
