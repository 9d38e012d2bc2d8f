package report

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// When a CPU limit, not the network, decided a probe's figures (Judge): an agent under a
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

// When the application's own traffic decided a probe's figures (judgeTraffic): a throughput
// figure (tcp) whose pod interfaces carried traffic besides the agents' of at least this share
// of the agents' own bytes. Any probe during which others moved this many bits per second or
// more on an agent's pod interfaces is named in Traffic's lines, valid or not.
const (
	trafficShare             = 0.05
	trafficNoteBitsPerSecond = 1e6
	trafficMaxBitsPerSecond  = 1.6e12 // beyond any interface's line rate, both directions
)

// AdviceTraffic is the advice for a throughput figure the application's traffic took a share of.
const AdviceTraffic = "measure when the application is quiet, or with --mode pod on the same nodes (the probe then shares the nodes' links, not the pod's interface)"

// Agents is where a probe's agents ran, as the plugin knows it. Client and Server are the CPU
// limits of the pods the ephemeral agents run under, in cores: 0 for an agent in a temporary pod
// (its own cgroup's quota is in its accounting) or a pod without one. ClientInApp and
// ServerInApp say the agent shares an application pod's network namespace (an ephemeral
// container in a pod without hostNetwork): only there is the other traffic on its interfaces
// the application's, and only there is it kept.
type Agents struct {
	Client, Server           float64
	ClientInApp, ServerInApp bool
	// ClientPod and ServerPod are the containers of the application pods the ephemeral agents
	// run in: what names the containers whose processes they saw.
	ClientPod, ServerPod []Container
}

// Judge sets r.Validity's verdict from its agents' accounting: the pod's limit filled in
// where an ephemeral agent has none of its own, then each agent under a limit checked, then the
// traffic besides the agents' on their pods' interfaces (judgeTraffic).
func Judge(r *v1alpha1.ProbeResult, at Agents) {
	v := r.Validity
	if v == nil || r.Skipped != "" {
		return
	}
	v.Valid, v.Reasons, v.Advice, v.Causes = true, nil, "", nil
	var cDropped, sDropped bool
	v.ClientApp, cDropped = judgeApp(v.ClientApp, at.ClientInApp, at.ClientPod, wallOf(v.Client))
	v.ServerApp, sDropped = judgeApp(v.ServerApp, at.ServerInApp, at.ServerPod, wallOf(v.Server))
	v.ClientAppNotCompared = (v.ClientAppNotCompared || cDropped) && at.ClientInApp && v.ClientApp == nil
	v.ServerAppNotCompared = (v.ServerAppNotCompared || sDropped) && at.ServerInApp && v.ServerApp == nil
	for _, side := range []struct {
		role string
		use  *v1alpha1.CPUUse
		pod  float64
		app  []v1alpha1.AppContainer
	}{{"client", v.Client, at.Client, v.ClientApp}, {"server", v.Server, at.Server, v.ServerApp}} {
		u := side.use
		if u == nil {
			continue
		}
		sanitize(u)
		if side.pod > 0 && (u.LimitCores == 0 || side.pod < u.LimitCores) {
			u.LimitCores, u.LimitFrom = side.pod, v1alpha1.LimitFromPod
		}
		if why := cpuLimited(u); why != "" {
			if u.LimitFrom == v1alpha1.LimitFromPod {
				why += beside(side.app)
			}
			v.Reasons = append(v.Reasons, side.role+" agent CPU-limited: "+why)
			v.Causes = addCause(v.Causes, v1alpha1.CauseCPULimit)
			if v.Advice == "" || u.LimitFrom == v1alpha1.LimitFromPod {
				v.Advice = AdviceAgentLimit
				if u.LimitFrom == v1alpha1.LimitFromPod {
					v.Advice = AdvicePodLimit
				}
			}
		}
	}
	v.ClientTraffic = sanitizeTraffic(v.ClientTraffic, at.ClientInApp)
	v.ServerTraffic = sanitizeTraffic(v.ServerTraffic, at.ServerInApp)
	judgeTraffic(r)
	v.Valid = len(v.Causes) == 0
}

// wallOf is an agent's wall time over a probe; 0 without its accounting.
func wallOf(u *v1alpha1.CPUUse) float64 {
	if u == nil || u.WallSeconds != u.WallSeconds {
		return 0
	}
	return u.WallSeconds
}

func addCause(causes []string, c string) []string {
	if slices.Contains(causes, c) {
		return causes
	}
	return append(causes, c)
}

// sanitizeTraffic keeps an agent's traffic figures only where they are the application's (the
// agent shares its pod's network namespace) and what a kernel could count (an agent's figures are
// its own word): none negative, the other bytes within the interface's, at most
// trafficMaxBitsPerSecond; the rate is computed again from the bytes.
func sanitizeTraffic(t *v1alpha1.Traffic, inApp bool) *v1alpha1.Traffic {
	if t == nil || !inApp || t.WallSeconds <= 0 || t.WallSeconds != t.WallSeconds || t.InterfaceBytes < 0 || t.InterfacePackets < 0 ||
		t.AgentBytes < 0 || t.OtherBytes < 0 || t.OtherBytes > t.InterfaceBytes ||
		float64(t.InterfaceBytes)*8 > trafficMaxBitsPerSecond*t.WallSeconds {
		return nil
	}
	t.OtherBitsPerSecond = math.Round(float64(t.OtherBytes) * 8 / t.WallSeconds)
	return t
}

// judgeTraffic marks a throughput figure (tcp) not valid when its pods' interfaces carried other
// traffic of trafficShare of the agents' own bytes or more: the application took a share of the
// bandwidth the probe measures. (The other probes' figures are latencies and rates that a
// CPU, not a link, bounds here; TrafficLines name the traffic beside them.)
func judgeTraffic(r *v1alpha1.ProbeResult) {
	v := r.Validity
	if r.Kind != v1alpha1.ProbeTCP {
		return
	}
	for _, side := range []struct {
		role string
		t    *v1alpha1.Traffic
	}{{"client", v.ClientTraffic}, {"server", v.ServerTraffic}} {
		t := side.t
		if t == nil || t.WallSeconds < cpuMinWall || t.OtherBytes <= 0 || t.AgentBytes <= 0 || float64(t.OtherBytes) < trafficShare*float64(t.AgentBytes) {
			continue
		}
		v.Reasons = append(v.Reasons, fmt.Sprintf("%s pod interface shared: %s of other traffic, %.0f %% of the agent's own %s",
			side.role, trafficAmount(t), 100*float64(t.OtherBytes)/float64(t.AgentBytes), BytesText(t.AgentBytes)))
		v.Causes = addCause(v.Causes, v1alpha1.CauseSharedInterface)
		if v.Advice == "" {
			v.Advice = AdviceTraffic
		}
	}
}

// trafficAmount is "37.5 MB (100.0 Mbit/s over 3.00 s)".
func trafficAmount(t *v1alpha1.Traffic) string {
	return fmt.Sprintf("%s (%.1f Mbit/s over %.2f s)", BytesText(t.OtherBytes), t.OtherBitsPerSecond/1e6, t.WallSeconds)
}

// BytesText is a byte count as a human reads it: "6.00 GB", "37.5 MB", "4096 B".
func BytesText(b int64) string {
	switch {
	case b >= 1e9:
		return fmt.Sprintf("%.2f GB", float64(b)/1e9)
	case b >= 1e6:
		return fmt.Sprintf("%.1f MB", float64(b)/1e6)
	default:
		return fmt.Sprintf("%d B", b)
	}
}

// TrafficLines name the probes (of at least cpuMinWall) during which others moved
// trafficNoteBitsPerSecond or more on an agent's pod interfaces, each line once (what, e.g. " on
// rung same-zone", in the first line).
func TrafficLines(what string, results []*v1alpha1.ProbeResult) []string {
	var lines []string
	seen := map[string]bool{}
	for _, r := range results {
		if r == nil || r.Validity == nil || r.Skipped != "" {
			continue
		}
		for _, side := range []struct {
			role string
			t    *v1alpha1.Traffic
		}{{"client", r.Validity.ClientTraffic}, {"server", r.Validity.ServerTraffic}} {
			if t := side.t; t != nil && t.WallSeconds >= cpuMinWall && t.OtherBitsPerSecond >= trafficNoteBitsPerSecond {
				l := fmt.Sprintf("  %s: the %s pod's interfaces carried %s besides the agents'", r.Name, side.role, trafficAmount(t))
				if !seen[l] {
					seen[l] = true
					lines = append(lines, l)
				}
			}
		}
	}
	if len(lines) == 0 {
		return nil
	}
	return append([]string{"competing traffic" + what + ": the application's own, beside the probes (-o json: validity.clientTraffic, serverTraffic)"}, lines...)
}

// maxIdleEntriesPerCoreSecond is more idle entries than a CPU can make in a second (each one
// an entry and an exit, a µs at the very least).
const maxIdleEntriesPerCoreSecond = 1e6

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
	if n := u.NodeIdleEntries; n != nil && (*n < 0 || float64(*n) > maxIdleEntriesPerCoreSecond*cpuMaxCores*max(1, u.WallSeconds)) {
		u.NodeIdleEntries = nil
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

// Invalid names the results a CPU limit or the application's traffic decided (once each, as rounds repeat them), and lists
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

// Marked is the result's name, marked when a CPU limit ([cpu-limited]) or the application's
// traffic on the pod's interface ([shared]) decided its figures.
func Marked(r *v1alpha1.ProbeResult) string {
	if r.Validity == nil || r.Validity.Valid {
		return r.Name
	}
	var marks []string
	for _, c := range r.Validity.Causes {
		switch c {
		case v1alpha1.CauseCPULimit:
			marks = append(marks, "cpu-limited")
		case v1alpha1.CauseSharedInterface:
			marks = append(marks, "shared")
		}
	}
	if len(marks) == 0 {
		marks = []string{"not valid"}
	}
	return r.Name + " [" + strings.Join(marks, ", ") + "]"
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

// ValidNote is the line a human report prints when neither a CPU limit nor the application's
// traffic decided any figure.
const ValidNote = "validity: no CPU limit decided any probe's figures, nor the application's traffic a transfer's (the agents' accounting: -o json, validity)"

// decidedBy says what decided the results not valid: "a CPU limit", "the application's
// traffic" or both.
func decidedBy(results []*v1alpha1.ProbeResult) string {
	cpu, traffic := false, false
	for _, r := range results {
		if r == nil || r.Validity == nil || r.Validity.Valid {
			continue
		}
		cpu = cpu || slices.Contains(r.Validity.Causes, v1alpha1.CauseCPULimit)
		traffic = traffic || slices.Contains(r.Validity.Causes, v1alpha1.CauseSharedInterface)
	}
	switch {
	case cpu && traffic:
		return "a CPU limit and the application's traffic"
	case traffic:
		return "the application's traffic"
	}
	return "a CPU limit"
}

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
	out := []string{"NOT THE NETWORK'S" + what + ": " + decidedBy(results) + " decided " + strings.Join(names, ", ")}
	for _, l := range lines {
		out = append(out, "  "+l)
	}
	return out
}
