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
// (it can have no resources of its own) runs under: the pod-level limit where set, else the
// containers' limits combined as the kubelet does (sidecars summed, init containers' largest)
// when every container and init container has one — the kubelet sets no pod quota otherwise;
// 0 without. (A kubelet with CPU quotas turned off sets none either; the agent's wait for a CPU
// is what shows whether the quota bites.)
func (t *Target) CPULimitCores() float64 {
	if t == nil || t.Pod == nil {
		return 0
	}
	p := t.Pod
	if !resourcehelper.IsPodLevelResourcesSet(p) || p.Spec.Resources.Limits.Cpu().IsZero() {
		for _, c := range append(append([]corev1.Container(nil), p.Spec.Containers...), p.Spec.InitContainers...) {
			if c.Resources.Limits.Cpu().IsZero() {
				return 0
			}
		}
	}
	lim := resourcehelper.PodLimits(p, resourcehelper.PodResourcesOptions{})
	return lim.Cpu().AsApproximateFloat64()
}

// HostNetwork says the target pod is on its node's network namespace: an agent in it sees the
// node's interfaces, not the pod's.
func (t *Target) HostNetwork() bool { return t != nil && t.Pod != nil && t.Pod.Spec.HostNetwork }
