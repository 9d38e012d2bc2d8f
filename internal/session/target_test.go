package session

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestCPULimitCores(t *testing.T) {
	limited := func(cpu string) corev1.Container {
		return corev1.Container{Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}
	}
	always := corev1.ContainerRestartPolicyAlways
	sidecar := limited("100m")
	sidecar.RestartPolicy = &always
	for _, tc := range []struct {
		name string
		spec corev1.PodSpec
		want float64
	}{
		{"one container with a limit", corev1.PodSpec{Containers: []corev1.Container{limited("200m")}}, 0.2},
		{"two containers: the sum", corev1.PodSpec{Containers: []corev1.Container{limited("200m"), limited("1")}}, 1.2},
		{"one without a limit: no pod quota", corev1.PodSpec{Containers: []corev1.Container{limited("200m"), {}}}, 0},
		{"a sidecar counts", corev1.PodSpec{Containers: []corev1.Container{limited("200m")}, InitContainers: []corev1.Container{sidecar}}, 0.3},
		{"an init container without a limit: no pod quota", corev1.PodSpec{Containers: []corev1.Container{limited("200m")}, InitContainers: []corev1.Container{{}}}, 0},
		{"pod-level limit", corev1.PodSpec{Containers: []corev1.Container{{}}, Resources: &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}}, 0.5},
	} {
		target := &Target{Pod: &corev1.Pod{Spec: tc.spec}}
		if got := target.CPULimitCores(); got != tc.want {
			t.Errorf("%s: %v cores, want %v", tc.name, got, tc.want)
		}
	}
}
