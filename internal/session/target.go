package session

import (
	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// Target is a workload named on the command line, resolved to one running pod.
type Target struct {
	Arg       string
	Namespace string
	Pod       *corev1.Pod
	Container string
}

// CPULimitCores is the CFS quota of the pod's cgroup, in cores, which an ephemeral container
// (it can have no resources of its own) runs under: the pod-level limit where set, else the sum
// of the containers' limits (as the scheduler sums them, sidecars included) when every container
// has one — the kubelet sets no pod quota otherwise; 0 without.
func (t *Target) CPULimitCores() float64 {
	if t == nil || t.Pod == nil {
		return 0
	}
	p := t.Pod
	if !resourcehelper.IsPodLevelResourcesSet(p) || p.Spec.Resources.Limits.Cpu().IsZero() {
		for _, c := range p.Spec.Containers {
			if c.Resources.Limits.Cpu().IsZero() {
				return 0
			}
		}
	}
	lim := resourcehelper.PodLimits(p, resourcehelper.PodResourcesOptions{})
	return lim.Cpu().AsApproximateFloat64()
}
