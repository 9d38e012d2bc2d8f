package session

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"unicode"

	"github.com/kubectl-netbench/kubectl-netbench/internal/text"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// apply records a watch event of a pod; it says whether a member's readiness changed.
func (f *Fleet) apply(t watch.EventType, p *corev1.Pod) bool {
	if t == watch.Deleted {
		return f.forget(p)
	}
	return f.update(p)
}

// update records the state of one of the fleet's agents (trusted) on its node's member; it
// says whether the member's readiness changed. Other pods, whatever their labels, are ignored,
// and a member whose pod stops being trusted is cleared. Of two agents on one node the older
// stays the member, as the DaemonSet controller keeps the older and deletes the other.
func (f *Fleet) update(p *corev1.Pod) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.Members[p.Spec.NodeName]
	if m == nil {
		return false
	}
	if why := f.distrust(p); why != "" {
		return f.reject(m, p, why)
	}
	if m.Pod != "" && m.Pod != p.Name && p.CreationTimestamp.After(m.created) {
		return false
	}
	was := m.Ready
	m.Pod, m.IPs, m.created = p.Name, PodIPs(p), p.CreationTimestamp.Time
	m.IP, m.Problem = familyIP(m.IPs, f.Spec.IPFamily), podProblem(p)
	if m.IP == "" && len(m.IPs) > 0 && m.Problem == "" {
		m.Problem = fmt.Sprintf("its pod %s has no IPv%s address (it has %s)", p.Name, f.Spec.IPFamily, strings.Join(m.IPs, ", "))
	}
	m.Ready = podReady(p) && m.IP != ""
	return m.Ready != was
}

// familyIP is the first of ips of family ("4" or "6"; "": the first of all).
func familyIP(ips []string, family string) string {
	for _, ip := range ips {
		if family == "" || strings.Contains(ip, ":") == (family == "6") {
			return ip
		}
	}
	return ""
}

// reject notes why a pod the DaemonSet controls is not trusted, on a member without an agent
// yet (a pod of someone else's is ignored silently), and clears a member whose own pod it is.
func (f *Fleet) reject(m *Member, p *corev1.Pod, why string) bool {
	switch {
	case m.Pod == p.Name:
		was := m.Ready
		*m = Member{Node: m.Node, Problem: fmt.Sprintf("its pod %s is no longer trusted: %s", p.Name, why)}
		return was
	case m.Pod == "" && f.owns(p):
		m.Problem = fmt.Sprintf("pod %s is not trusted: %s", p.Name, why)
	}
	return false
}

// forget clears the member whose pod was deleted, until the DaemonSet's next pod there.
func (f *Fleet) forget(p *corev1.Pod) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.Members[p.Spec.NodeName]
	if m == nil || m.Pod != p.Name {
		return false
	}
	was := m.Ready
	*m = Member{Node: m.Node, Problem: "its pod was deleted"}
	return was
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// fatalWaiting are the waiting reasons an agent does not recover from within a run.
var fatalWaiting = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true,
	"CreateContainerConfigError": true, "CreateContainerError": true, "CrashLoopBackOff": true}

// podProblem is why a pod's agent is not ready, "fatal: …" when it will not be.
func podProblem(p *corev1.Pod) string {
	for _, c := range p.Status.ContainerStatuses {
		if w := c.State.Waiting; w != nil && fatalWaiting[w.Reason] {
			return "fatal: " + w.Reason + ": " + clusterText(w.Message)
		}
		if t := c.State.Terminated; t != nil {
			return fmt.Sprintf("fatal: the agent exited (%s, code %d): %s", clusterText(t.Reason), t.ExitCode, clusterText(t.Message))
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return "not scheduled: " + clusterText(c.Message)
		}
	}
	if podReady(p) {
		return ""
	}
	return "starting (" + string(p.Status.Phase) + ")"
}

// maxClusterText bounds a message from the cluster (an event's, a container's) in our output.
const maxClusterText = 300

// clusterText makes a message from the cluster safe to print on one line: whoever may create
// events or set a container's termination message in the namespace writes it, so control and
// bidirectional-formatting characters go and it is cut at maxClusterText characters.
func clusterText(s string) string {
	s = strings.TrimSpace(text.Sanitize(strings.Map(func(r rune) rune {
		if unicode.Is(unicode.Cf, r) {
			return -1
		}
		return r
	}, s)))
	if r := []rune(s); len(r) > maxClusterText {
		return string(r[:maxClusterText]) + "…"
	}
	return s
}

func (f *Fleet) settled() bool {
	for _, m := range f.Members {
		if !m.Ready && !strings.HasPrefix(m.Problem, "fatal: ") {
			return false
		}
	}
	return true
}

func (f *Fleet) readyCount() int {
	n := 0
	for _, m := range f.Members {
		if m.Ready {
			n++
		}
	}
	return n
}

// notReady is the error when no agent is ready, or nil when some are (the others' pairs are
// reported as not measured). With no pod at all it names what the DaemonSet controller said.
func (f *Fleet) notReady(ctx context.Context, when string) error {
	if f.readyCount() > 0 {
		return nil
	}
	byProblem := map[string][]string{} // nodes by what keeps their agent back
	for _, n := range f.Spec.Nodes {
		if m := f.Members[n]; m.Pod != "" {
			p := strings.TrimPrefix(m.Problem, "fatal: ")
			byProblem[p] = append(byProblem[p], n)
		}
	}
	var problems []string
	for p, nodes := range byProblem {
		problems = append(problems, p+" (on "+nodeList(nodes)+")")
	}
	if len(problems) == 0 {
		problems = append(problems, f.controllerSays(ctx))
	}
	sort.Strings(problems)
	if len(problems) > 3 {
		problems = append(problems[:3], fmt.Sprintf("and %d other reasons", len(problems)-3))
	}
	if when != "" {
		when = " " + when
	}
	return fmt.Errorf("%w%s: %s", ErrFleetNotReady, when, strings.Join(problems, "; "))
}

// nodeList names up to three nodes, then how many more.
func nodeList(nodes []string) string {
	if len(nodes) <= 3 {
		return strings.Join(nodes, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(nodes[:3], ", "), len(nodes)-3)
}

// controllerSays is the DaemonSet controller's last word on creating the pods (FailedCreate:
// a Pod Security level, a quota), from the DaemonSet's events.
func (f *Fleet) controllerSays(ctx context.Context) string {
	evs, err := f.s.Client.CoreV1().Events(f.Spec.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + f.Name})
	if err == nil {
		for i := len(evs.Items) - 1; i >= 0; i-- {
			if e := evs.Items[i]; e.Type == corev1.EventTypeWarning {
				return "the DaemonSet created no pod: " + clusterText(e.Reason) + ": " + clusterText(e.Message)
			}
		}
	}
	return "the DaemonSet created no pod (see kubectl describe daemonset -n " + f.Spec.Namespace + " " + f.Name + ")"
}
