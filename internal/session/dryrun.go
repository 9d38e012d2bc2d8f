package session

import (
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// Verbs of a planned object.
const (
	VerbCreate = "create"
	// VerbPatchEphemeral adds an ephemeral container to a running pod: the object is the body of
	// the strategic merge patch sent to the pod's ephemeralcontainers subresource.
	VerbPatchEphemeral = "patch pods/ephemeralcontainers"
)

// Planned is an object a dry run sent to the API server with dryRun=All: admitted, validated and
// defaulted there, and persisted nowhere. Object is the server's answer with the fields only a
// stored object has removed (status, uid, resourceVersion, creation time, managed fields).
type Planned struct {
	Verb   string
	What   string // what the object is for, in words ("the server agent")
	Object runtime.Object
}

// dryRun holds what a dry-run session sent; it is only written while Start, CreateService,
// CreatePolicy and StartFleet run.
type dryRun struct {
	mu      sync.Mutex
	planned []Planned
}

// dryRunAll is the DryRun option of every create and patch of a dry-run session.
func (s *Session) dryRunAll() []string {
	if s.DryRun {
		return []string{metav1.DryRunAll}
	}
	return nil
}

// plan records the API server's answer to a dry-run create or patch.
func (s *Session) plan(verb, what string, answer runtime.Object) {
	obj := answer.DeepCopyObject()
	if gvks, _, err := scheme.Scheme.ObjectKinds(obj); err == nil && len(gvks) > 0 {
		obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	}
	if m, err := meta.Accessor(obj); err == nil {
		m.SetUID("")
		m.SetResourceVersion("")
		m.SetCreationTimestamp(metav1.Time{})
		m.SetManagedFields(nil)
		m.SetGeneration(0)
	}
	clearStatus(obj)
	s.dry.mu.Lock()
	s.dry.planned = append(s.dry.planned, Planned{Verb: verb, What: what, Object: obj})
	s.dry.mu.Unlock()
}

// clearStatus removes what a dry-run answer carries that the run does not send: the status (a
// pod's Pending phase), a Service's cluster IPs (allocated for the dry run only).
func clearStatus(obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.Pod:
		o.Status = corev1.PodStatus{}
	case *corev1.Service:
		o.Status = corev1.ServiceStatus{}
		o.Spec.ClusterIP, o.Spec.ClusterIPs = "", nil // allocated for the dry run only; a run sends none
	case *appsv1.DaemonSet:
		o.Status = appsv1.DaemonSetStatus{}
	}
}

// Planned returns what a dry-run session sent, in order.
func (s *Session) Planned() []Planned {
	s.dry.mu.Lock()
	defer s.dry.mu.Unlock()
	return append([]Planned(nil), s.dry.planned...)
}

// ephemeralPatch is the part of a dry-run patch answer the run sent: the pod's name and the one
// ephemeral container, as the API server defaulted it (ec itself when the answer lacks it).
func ephemeralPatch(answer *corev1.Pod, namespace, pod string, ec corev1.EphemeralContainer) *corev1.Pod {
	out := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: namespace}}
	if answer != nil {
		for _, c := range answer.Spec.EphemeralContainers {
			if c.Name == ec.Name {
				ec = c
			}
		}
	}
	out.Spec.EphemeralContainers = []corev1.EphemeralContainer{ec}
	return out
}
