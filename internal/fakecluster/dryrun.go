package fakecluster

import (
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// dryRun answers a create or patch sent with dryRun=All as the API server does: with the
// object it would make (a patched pod with the new ephemeral container), persisting nothing.
// It runs before every other reactor, so that no scripted side effect (pods of a DaemonSet,
// an agent that starts) follows a dry run.
func (f *Cluster) dryRun(a k8stesting.Action) (bool, runtime.Object, error) {
	switch a := a.(type) {
	case k8stesting.CreateActionImpl:
		if slices.Contains(a.CreateOptions.DryRun, metav1.DryRunAll) {
			return true, a.GetObject(), nil
		}
	case k8stesting.PatchActionImpl:
		if slices.Contains(a.PatchOptions.DryRun, metav1.DryRunAll) && a.GetResource().Resource == "pods" {
			return true, f.patchedPod(a), nil
		}
	}
	return false, nil, nil
}

// patchedPod is the pod a dry-run ephemeral-container patch would leave (nil if none).
func (f *Cluster) patchedPod(a k8stesting.PatchActionImpl) runtime.Object {
	obj, err := f.Clientset.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), a.GetNamespace(), a.GetName())
	if err != nil {
		return nil
	}
	var patch struct {
		Spec corev1.PodSpec `json:"spec"`
	}
	p := obj.(*corev1.Pod).DeepCopy()
	if json.Unmarshal(a.GetPatch(), &patch) == nil {
		p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, patch.Spec.EphemeralContainers...)
	}
	return p
}

// HonourDryRun puts the dry-run answer before every reactor added so far (New and NewFleet
// call it; a test that adds reactors of its own calls it again to keep it first).
func (f *Cluster) HonourDryRun() {
	f.Clientset.PrependReactor("*", "*", f.dryRun)
}
