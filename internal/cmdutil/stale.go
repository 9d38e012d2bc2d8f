package cmdutil

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/internal/text"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
)

const ManagedSelector = session.ManagedByLabel + "=" + session.ManagedByValue

// CleanStale deletes temporary agent pods of earlier runs that ended StaleAfter or more ago (a
// plugin killed before its cleanup leaves them Succeeded or Failed). Pods of runs still going
// are left alone, and so is a pod that ended just now: another run beside this one may still be
// reading its results. Only in pod mode: an ephemeral-only Role may not list or delete pods it
// did not create.
func (o *CommonOptions) CleanStale(ctx context.Context, s *session.Session, namespaces ...string) []string {
	if s.Mode != session.ModePod || o.DryRun {
		return nil
	}
	var notes []string
	for _, ns := range text.Unique(namespaces) {
		pods, err := o.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: ManagedSelector})
		if err != nil {
			continue
		}
		for _, p := range pods.Items {
			if !ended(&p) || endedAt(&p).After(time.Now().Add(-StaleAfter)) {
				continue
			}
			var grace int64
			if err := o.Client.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}); err == nil {
				notes = append(notes, fmt.Sprintf("deleted agent pod %s/%s left by an earlier run (%s, %s old)", ns, p.Name, p.Status.Phase, Age(p.CreationTimestamp.Time)))
			}
		}
	}
	return notes
}

// CleanStaleServices deletes temporary Services of earlier runs whose not-after time has
// passed (a run killed before its cleanup leaves them; Services do not end by themselves).
func (o *CommonOptions) CleanStaleServices(ctx context.Context, ns string, now time.Time) []string {
	if o.DryRun {
		return nil
	}
	svcs, err := o.Client.CoreV1().Services(ns).List(ctx, metav1.ListOptions{LabelSelector: ManagedSelector})
	if err != nil {
		return nil
	}
	var notes []string
	for _, svc := range svcs.Items {
		if !expired(&svc, now) {
			continue
		}
		if err := o.Client.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{}); err == nil {
			notes = append(notes, fmt.Sprintf("deleted temporary Service %s/%s left by an earlier run (%s old)", svc.Namespace, svc.Name, Age(svc.CreationTimestamp.Time)))
		}
	}
	return notes
}

// CleanStaleDaemonSets deletes matrix DaemonSets of earlier runs whose not-after time has
// passed (a plugin killed outright leaves them; their agents have exited by then).
func (o *CommonOptions) CleanStaleDaemonSets(ctx context.Context, ns string, now time.Time) []string {
	if o.DryRun {
		return nil
	}
	list, err := o.Client.AppsV1().DaemonSets(ns).List(ctx, metav1.ListOptions{LabelSelector: ManagedSelector})
	if err != nil {
		return nil
	}
	var notes []string
	bg := metav1.DeletePropagationBackground
	for _, ds := range list.Items {
		t, err := time.Parse(time.RFC3339, ds.Annotations[session.NotAfterAnnotation])
		if err != nil || !now.After(t) {
			continue
		}
		if err := o.Client.AppsV1().DaemonSets(ns).Delete(ctx, ds.Name, metav1.DeleteOptions{PropagationPolicy: &bg}); err == nil {
			notes = append(notes, fmt.Sprintf("deleted DaemonSet %s/%s left by an earlier run (%s old)", ns, ds.Name, Age(ds.CreationTimestamp.Time)))
		}
	}
	return notes
}

// expired says whether a temporary Service's run is over for sure.
func expired(svc *corev1.Service, now time.Time) bool {
	return pastNotAfter(svc.Annotations, now)
}

// pastNotAfter says whether an object's not-after time has passed (false when it has none).
func pastNotAfter(annotations map[string]string, now time.Time) bool {
	t, err := time.Parse(time.RFC3339, annotations[session.NotAfterAnnotation])
	return err == nil && now.After(t)
}

// sweepPolicies deletes, from the policies of namespace ns just listed, the temporary ones of
// earlier runs that are over for sure — their not-after time has passed, or every agent the run
// started in ns has ended (a plugin killed before its cleanup leaves them) — saying so, and
// returns the others. Those it may not delete it names in one line and keeps (they are still
// in force).
func (o *CommonOptions) sweepPolicies(ctx context.Context, ns string, list []networkingv1.NetworkPolicy) []networkingv1.NetworkPolicy {
	now := o.ServerNow()
	over := o.runsOver(ctx, ns)
	var kept []networkingv1.NetworkPolicy
	var left []string
	var leftErr error
	for _, np := range list {
		why := sweepReason(np, now, over)
		if why == "" {
			kept = append(kept, np)
			continue
		}
		if o.DryRun { // planned as the run would find them, deleted by none
			fmt.Fprintf(o.ErrOut, "NetworkPolicy: a run would delete %s/%s left by an earlier run (%s old, %s)\n", ns, np.Name, Age(np.CreationTimestamp.Time), why)
			continue
		}
		err := o.Client.NetworkingV1().NetworkPolicies(ns).Delete(ctx, np.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			kept, left, leftErr = append(kept, np), append(left, np.Name), err
			continue
		}
		fmt.Fprintf(o.ErrOut, "NetworkPolicy: deleted %s/%s left by an earlier run (%s old, %s)\n", ns, np.Name, Age(np.CreationTimestamp.Time), why)
	}
	if len(left) > 0 {
		slices.Sort(left)
		fmt.Fprintf(o.ErrOut, "NetworkPolicy: %s in namespace %s, left by earlier runs that are over, were not deleted (%v): delete them with kubectl netbench cleanup -n %s\n",
			strings.Join(left, ", "), ns, access.StatusMessage(leftErr), ns)
	}
	return kept
}

// sweepReason says why a temporary policy's run is over ("" if it may not be).
func sweepReason(np networkingv1.NetworkPolicy, now time.Time, over map[string]bool) string {
	switch {
	case np.Labels[session.ManagedByLabel] != session.ManagedByValue:
		return ""
	case pastNotAfter(np.Annotations, now):
		return "not after " + np.Annotations[session.NotAfterAnnotation]
	case over[np.Labels[session.RunIDLabel]]:
		return "every agent of its run has ended"
	}
	return ""
}

// runsOver reads namespace ns's pods and returns the runs that are over there: every one of
// their ephemeral agents has terminated (ephemeral containers never restart, and adding one
// takes a permission a co-tenant who may only create pods lacks), at least one was seen, and
// no temporary agent pod of theirs still runs. An ended temporary pod is no evidence (anyone
// who may create pods can make one with a run's labels), a running one keeps its run alive. So
// a run whose agents are all temporary pods (--mode pod, the matrix's DaemonSet) waits for its
// not-after time.
func (o *CommonOptions) runsOver(ctx context.Context, ns string) map[string]bool {
	pods, err := o.Client.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil
	}
	over, alive := map[string]bool{}, map[string]bool{}
	for _, p := range pods.Items {
		if run := p.Labels[session.RunIDLabel]; p.Labels[session.ManagedByLabel] == session.ManagedByValue && run != "" && !ended(&p) {
			alive[run] = true
		}
		for _, ec := range p.Spec.EphemeralContainers {
			if rest, ok := strings.CutPrefix(ec.Name, "netbench-"); ok {
				run, _, _ := strings.Cut(rest, "-")
				done, seen := over[run]
				over[run] = ephemeralEnded(&p, ec.Name) && (done || !seen)
			}
		}
	}
	for run := range alive {
		over[run] = false
	}
	return over
}

// ephemeralEnded says whether the pod's ephemeral container name has terminated.
func ephemeralEnded(p *corev1.Pod, name string) bool {
	for _, st := range p.Status.EphemeralContainerStatuses {
		if st.Name == name {
			return st.State.Terminated != nil
		}
	}
	return false
}

// ended says whether a pod is done: a terminal phase, or every container terminated (the
// phase can lag behind the containers).
// StaleAfter is how long an ended agent pod is left to the run that made it (which reads the
// last of its results within a second or two of its end).
const StaleAfter = 15 * time.Second

// endedAt is when the last of a pod's containers ended, or its creation time when its statuses
// do not say.
func endedAt(p *corev1.Pod) time.Time {
	at := p.CreationTimestamp.Time
	for _, s := range p.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil && t.FinishedAt.After(at) {
			at = t.FinishedAt.Time
		}
	}
	return at
}

func ended(p *corev1.Pod) bool {
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return true
	}
	if len(p.Status.ContainerStatuses) == 0 {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.State.Terminated == nil {
			return false
		}
	}
	return true
}

// Age is how long ago t was, as kubectl says it.
func Age(t time.Time) string { return duration.HumanDuration(time.Since(t)) }
