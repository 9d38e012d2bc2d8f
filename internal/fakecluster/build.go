package fakecluster

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stesting "k8s.io/client-go/testing"
)

// testPod is a running pod, valid by default; opts change it.
func NewPod(opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: "shop"},
		Spec:       corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app"}, {Name: "sidecar"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.5"},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func LabNode(name, zone string, mod ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{corev1.LabelTopologyZone: zone, corev1.LabelTopologyRegion: "r1"}},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}}}
	for _, m := range mod {
		m(n)
	}
	return n
}

// Impostor is a ready pod with the run's labels on node-00001, created after the agents.
func Impostor(f *Cluster, ds *appsv1.DaemonSet, mod func(p *corev1.Pod)) *corev1.Pod {
	p := f.readyPod("impostor", ds.Namespace, "node-00001", ds.Spec.Template.Labels)
	mod(p)
	return p
}

// CreatedDaemonSet is the DaemonSet the run created.
func CreatedDaemonSet(t *testing.T, f *Cluster) *appsv1.DaemonSet {
	t.Helper()
	for _, a := range f.Clientset.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "daemonsets" {
			return c.GetObject().(*appsv1.DaemonSet)
		}
	}
	t.Fatal("no DaemonSet created")
	return nil
}
