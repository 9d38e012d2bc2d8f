package cmdutil

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A pod's sidecar (a restartable init container), its containers and its ephemeral containers,
// each with the ID from its status and its own CPU limit; a finished init container is not one.
// The agent sees its target's processes, and every container's where the pod shares them.
func TestAppContainers(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	limit := func(cpu string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}
	}
	p := &corev1.Pod{
		Spec: corev1.PodSpec{
			InitContainers:      []corev1.Container{{Name: "setup"}, {Name: "proxy", RestartPolicy: &always, Resources: limit("100m")}},
			Containers:          []corev1.Container{{Name: "app", Resources: limit("200m")}, {Name: "burner", Resources: limit("1500m")}},
			EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "netbench-x"}}},
		},
		Status: corev1.PodStatus{
			InitContainerStatuses:      []corev1.ContainerStatus{{Name: "setup", ContainerID: "containerd://s0"}, {Name: "proxy", ContainerID: "containerd://p0"}},
			ContainerStatuses:          []corev1.ContainerStatus{{Name: "burner", ContainerID: "cri-o://b0"}, {Name: "app", ContainerID: "containerd://a0"}},
			EphemeralContainerStatuses: []corev1.ContainerStatus{{Name: "netbench-x", ContainerID: "containerd://e0"}},
		},
	}
	want := []report.Container{
		{Name: "proxy", ID: "p0", LimitCores: 0.1},
		{Name: "app", ID: "a0", LimitCores: 0.2, Visible: true},
		{Name: "burner", ID: "b0", LimitCores: 1.5},
		{Name: "netbench-x", ID: "e0", Ephemeral: true},
	}
	if diff := cmp.Diff(want, AppContainers(&session.Target{Pod: p, Container: "app"})); diff != "" {
		t.Errorf("AppContainers (-want +got):\n%s", diff)
	}
	shared := true
	p.Spec.ShareProcessNamespace = &shared
	for i := range want {
		want[i].Visible = true
	}
	if diff := cmp.Diff(want, AppContainers(&session.Target{Pod: p, Container: "app"})); diff != "" {
		t.Errorf("AppContainers of a pod sharing its process namespace (-want +got):\n%s", diff)
	}
	if got := AppIDs(&session.Target{Pod: p, Container: "app"}); !cmp.Equal(got, []string{"p0", "a0", "b0"}) {
		t.Errorf("AppIDs = %q, want the application's containers, not the agents'", got)
	}
	if got := AppContainers(nil); got != nil {
		t.Errorf("no target: %v", got)
	}
}
