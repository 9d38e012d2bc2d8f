package session

import corev1 "k8s.io/api/core/v1"

// Target is a workload named on the command line, resolved to one running pod.
type Target struct {
	Arg       string
	Namespace string
	Pod       *corev1.Pod
	Container string
}
