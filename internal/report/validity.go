package report

import (
	"fmt"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// When a CPU limit, not the network, decided a probe's figures (JudgeCPU): an agent under a
// limit used this share of it or more over the probe, or its threads waited for a CPU this share
// of the probe's time or more and longer than they ran, or its own cgroup was throttled this
// share of the time or more. Probes shorter than cpuMinWall are not judged: their window is
// mostly the accounting's own control calls.
const (
	cpuLimitShare     = 0.9
	cpuWaitShare      = 0.1
	cpuThrottledShare = 0.01
	cpuMinWall        = 0.5 // seconds
	cpuMaxCores       = 1024
)

// Advice for a probe a CPU limit decided, by where the limit comes from.
const (
	AdvicePodLimit   = "run with --mode pod on the same nodes to measure the path without the app's CPU limit"
	AdviceAgentLimit = "give the agent pods more CPU (--agent-resources cpu=…, or the namespace's LimitRange default)"
)

// CPULimits are the pods' CPU limits the ephemeral agents run under, in cores: 0 for an agent in
// a temporary pod (its own cgroup's quota is in its accounting) or a pod without one.
type CPULimits struct{ Client, Server float64 }

// JudgeCPU sets r.Validity's verdict from its agents' accounting: the pod's limit filled in
// where an ephemeral agent has none of its own, then each agent under a limit checked.
func JudgeCPU(r *v1alpha1.ProbeResult, lim CPULimits) {
	v := r.Validity
	if v == nil || r.Skipped != "" {
		return
	}
	v.Valid, v.Reasons, v.Advice = true, nil, ""
	for _, side := range []struct {
		role string
		use  *v1alpha1.CPUUse
		pod  float64
	}{{"client", v.Client, lim.Client}, {"server", v.Server, lim.Server}} {
		u := side.use
		if u == nil {
			continue
		}
		sanitize(u)
		if side.pod > 0 && (u.LimitCores == 0 || side.pod < u.LimitCores) {
			u.LimitCores, u.LimitFrom = side.pod, v1alpha1.LimitFromPod
		}
		if why := cpuLimited(u); why != "" {
			v.Valid = false
			v.Reasons = append(v.Reasons, side.role+" agent CPU-limited: "+why)
			if v.Advice == "" || u.LimitFrom == v1alpha1.LimitFromPod {
				v.Advice = AdviceAgentLimit
				if u.LimitFrom == v1alpha1.LimitFromPod {
					v.Advice = AdvicePodLimit
				}
			}
		}
	}
}

// sanitize drops what no kernel reports (an agent's figures are its own word): negative
// figures, and a limit beyond any machine's cores.
func sanitize(u *v1alpha1.CPUUse) {
	for _, f := range []*float64{&u.WallSeconds, &u.CPUSeconds, &u.RunQueueWaitSeconds, &u.ThrottledSeconds, &u.LimitCores} {
		if *f < 0 || *f != *f {
			*f = 0
		}
	}
	if u.ThrottledPeriods < 0 {
		u.ThrottledPeriods = 0
	}
	if u.LimitCores > cpuMaxCores {
		u.LimitCores, u.LimitFrom = 0, ""
	}
}

// cpuLimited says how the agent's limit decided its work over the probe, or "".
func cpuLimited(u *v1alpha1.CPUUse) string {
	if u.LimitCores <= 0 || u.WallSeconds < cpuMinWall {
		return ""
	}
	used, waited := u.CPUSeconds/u.WallSeconds, u.RunQueueWaitSeconds/u.WallSeconds
	starved := waited >= cpuWaitShare && u.RunQueueWaitSeconds >= u.CPUSeconds
	if used < cpuLimitShare*u.LimitCores && !starved && u.ThrottledSeconds < cpuThrottledShare*u.WallSeconds {
		return ""
	}
	whose := "its own"
	if u.LimitFrom == v1alpha1.LimitFromPod {
		whose = "the pod's"
	}
	s := fmt.Sprintf("used %.2f cores of %s %.2f-core limit; its threads waited %.2f s in all for a CPU in %.2f s", used, whose, u.LimitCores, u.RunQueueWaitSeconds, u.WallSeconds)
	if starved && used < cpuLimitShare*u.LimitCores {
		s += " (longer than they ran: the limit's throttling, or other work on the node)"
	}
	if u.ThrottledPeriods > 0 {
		s += fmt.Sprintf(", throttled %.2f s in %d periods", u.ThrottledSeconds, u.ThrottledPeriods)
	}
	return s
}

// Invalid names the results a CPU limit decided (once each, as rounds repeat them), and lists
// their reasons and advice once each.
func Invalid(results []*v1alpha1.ProbeResult) (names, lines []string) {
	seenName, seenLine := map[string]bool{}, map[string]bool{}
	for _, r := range results {
		if r == nil || r.Validity == nil || r.Validity.Valid {
			continue
		}
		if !seenName[r.Name] {
			seenName[r.Name] = true
			names = append(names, r.Name)
		}
		for _, l := range append(append([]string(nil), r.Validity.Reasons...), "→ "+r.Validity.Advice) {
			l = r.Name + ": " + l
			if !seenLine[l] {
				seenLine[l] = true
				lines = append(lines, l)
			}
		}
	}
	return names, lines
}

// Marked is the result's name, marked when a CPU limit decided its figures.
func Marked(r *v1alpha1.ProbeResult) string {
	if r.Validity != nil && !r.Validity.Valid {
		return r.Name + " [cpu-limited]"
	}
	return r.Name
}

// HasAccounting says whether any of the results carries its agents' CPU accounting.
func HasAccounting(results []*v1alpha1.ProbeResult) bool {
	for _, r := range results {
		if r != nil && r.Validity != nil {
			return true
		}
	}
	return false
}

// ValidNote is the line a human report prints when no CPU limit decided any figure.
const ValidNote = "validity: no CPU limit decided any probe's figures (the agents' CPU accounting: -o json, validity)"

// ValidityLines are what a human report prints about its probes' validity: the probes a CPU
// limit decided (what, prefixed to the first line), with reasons and advice; else ValidNote
// where there is accounting.
func ValidityLines(what string, results []*v1alpha1.ProbeResult) []string {
	names, lines := Invalid(results)
	if len(names) == 0 {
		if HasAccounting(results) {
			return []string{ValidNote}
		}
		return nil
	}
	out := []string{"NOT THE NETWORK'S" + what + ": a CPU limit decided " + strings.Join(names, ", ")}
	for _, l := range lines {
		out = append(out, "  "+l)
	}
	return out
}
