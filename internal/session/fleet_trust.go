package session

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// distrust says why a pod is not one of the fleet's agents, or "" when it is one. An agent's pod
// is controlled by the fleet's DaemonSet (its UID in the pod's controller reference) and runs
// the DaemonSet's agent container unchanged and alone: the same image, command, arguments and
// environment, no volume, no other container, no namespace shared with the host or between
// containers. Labels prove nothing, nor does the controller reference alone: the DaemonSet
// adopts any pod without a controller that carries its labels, whoever created it; such a pod
// could run anything. A pod that passes runs the run's own agent, which never shows the token.
func (f *Fleet) distrust(p *corev1.Pod) string {
	if !f.owns(p) {
		return "not controlled by DaemonSet " + f.Name
	}
	sp, want := &p.Spec, &f.template
	switch {
	case len(sp.Containers) != 1 || len(sp.InitContainers) != 0 || len(sp.EphemeralContainers) != 0:
		return "it runs other containers than the agent"
	case sp.HostNetwork || sp.HostPID || sp.HostIPC || (sp.ShareProcessNamespace != nil && *sp.ShareProcessNamespace):
		return "it shares a namespace with the node or between containers"
	}
	return containerDiffers(&sp.Containers[0], &want.Containers[0])
}

// owns says whether the fleet's DaemonSet is the pod's controller.
func (f *Fleet) owns(p *corev1.Pod) bool {
	ref := metav1.GetControllerOfNoCopy(p)
	return f.UID != "" && ref != nil && ref.UID == f.UID && ref.Kind == "DaemonSet"
}

// containerDiffers says how a pod's container differs from the agent container of the
// template in what decides what runs, or "".
func containerDiffers(c, want *corev1.Container) string {
	switch {
	case !sameImage(c.Image, want.Image):
		return "it runs image " + c.Image + ", not " + want.Image
	case !slices.Equal(c.Command, want.Command) || !slices.Equal(c.Args, want.Args):
		return "it runs other arguments than the agent's"
	case len(c.VolumeMounts) != 0 || len(c.VolumeDevices) != 0 || len(c.EnvFrom) != 0:
		return "it mounts volumes or takes its environment from elsewhere"
	case !slices.EqualFunc(c.Env, want.Env, sameEnv):
		return "its environment is not the agent's"
	}
	return ""
}

// sameImage says whether image is want, possibly pinned to a digest by an admission webhook
// (repo:tag@sha256:…, or repo@sha256:…).
func sameImage(image, want string) bool {
	if image == want || strings.HasPrefix(image, want+"@") {
		return true
	}
	repo := want
	if i := strings.LastIndexByte(want, ':'); i > strings.LastIndexByte(want, '/') {
		repo = want[:i]
	}
	return strings.HasPrefix(image, repo+"@sha256:")
}

// sameEnv compares environment variables by name, value and field reference.
func sameEnv(a, b corev1.EnvVar) bool {
	path := func(e corev1.EnvVar) string {
		if e.ValueFrom == nil || e.ValueFrom.FieldRef == nil {
			return ""
		}
		return e.ValueFrom.FieldRef.FieldPath
	}
	return a.Name == b.Name && a.Value == b.Value && path(a) == path(b) && (a.ValueFrom == nil) == (b.ValueFrom == nil)
}
