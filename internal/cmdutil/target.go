package cmdutil

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/resource"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/polymorphichelpers"
	"k8s.io/kubectl/pkg/scheme"
)

// SplitTarget parses NAME, TYPE/NAME or NS/TYPE/NAME.
func SplitTarget(arg, defaultNS string) (ns, resourceArg string, err error) {
	parts := strings.Split(arg, "/")
	switch {
	case arg == "" || len(parts) > 3:
		return "", "", fmt.Errorf("target %q: want POD, TYPE/NAME or NAMESPACE/TYPE/NAME", arg)
	case len(parts) == 3:
		if parts[0] == "" || parts[1] == "" || parts[2] == "" {
			return "", "", fmt.Errorf("target %q: want NAMESPACE/TYPE/NAME", arg)
		}
		return parts[0], parts[1] + "/" + parts[2], nil
	case len(parts) == 2:
		if parts[0] == "" || parts[1] == "" {
			return "", "", fmt.Errorf("target %q: want TYPE/NAME", arg)
		}
		return defaultNS, arg, nil
	default:
		return defaultNS, "pods/" + arg, nil
	}
}

// resolveTarget finds the running pod behind arg, as kubectl exec does.
func resolveTarget(ctx context.Context, getter genericclioptions.RESTClientGetter, client kubernetes.Interface, podFor polymorphichelpers.AttachablePodForObjectFunc, arg, defaultNS, container string, allowHostNetwork bool) (*session.Target, error) {
	ns, res, err := SplitTarget(arg, defaultNS)
	if err != nil {
		return nil, err
	}
	obj, err := resource.NewBuilder(getter).
		WithScheme(scheme.Scheme, scheme.Scheme.PrioritizedVersionsAllGroups()...).
		NamespaceParam(ns).DefaultNamespace().
		ResourceTypeOrNameArgs(true, res).
		SingleResourceType().
		Do().Object()
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("%s not found in namespace %q (check the name, or give NAMESPACE/TYPE/NAME or -n)", res, ns)
		}
		if apierrors.IsForbidden(err) {
			return nil, access.Forbidden(err)
		}
		return nil, fmt.Errorf("resolving %s: %w", arg, err)
	}
	if meta.IsListType(obj) {
		return nil, fmt.Errorf("target %s names several objects; name one", arg)
	}
	if err := hasRunningPod(ctx, client, obj, res, ns); err != nil {
		return nil, err
	}
	pod, err := podFor(getter, obj, 10*time.Second)
	if err != nil {
		return nil, fmt.Errorf("finding a pod for %s in namespace %q: %w", res, ns, err)
	}
	t := &session.Target{Arg: arg, Namespace: pod.Namespace, Pod: pod}
	if err := CheckTarget(t, container, allowHostNetwork); err != nil {
		return nil, err
	}
	return t, nil
}

// hasRunningPod says at once when a workload or Service selects no pod, or no running one,
// instead of waiting for one to appear.
func hasRunningPod(ctx context.Context, client kubernetes.Interface, obj runtime.Object, res, ns string) error {
	if _, ok := obj.(*corev1.Pod); ok {
		return nil
	}
	namespace, selector, err := polymorphichelpers.SelectorsForObject(obj)
	if err != nil {
		return nil // no selector to check (e.g. a Service without one): let the lookup decide
	}
	pods, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil
	}
	if len(pods.Items) == 0 {
		return fmt.Errorf("%s in namespace %q selects no pods (0 replicas, or a selector that matches nothing: %s)", res, ns, selector)
	}
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			return nil
		}
	}
	return fmt.Errorf("%s in namespace %q has %d pods and none is running (kubectl get pods -n %s -l %s)", res, ns, len(pods.Items), ns, selector)
}

// CheckTarget refuses pods the agent cannot measure from, with the reason and what to do.
func CheckTarget(t *session.Target, container string, allowHostNetwork bool) error {
	p := t.Pod
	if p.DeletionTimestamp != nil {
		return fmt.Errorf("pod %s/%s is being deleted: pick a running pod (kubectl get pods -n %s)", p.Namespace, p.Name, p.Namespace)
	}
	if p.Status.Phase != corev1.PodRunning {
		return fmt.Errorf("pod %s/%s is %s, not Running: pick a running pod (kubectl get pods -n %s)", p.Namespace, p.Name, p.Status.Phase, p.Namespace)
	}
	if p.Status.PodIP == "" {
		return fmt.Errorf("pod %s/%s has no IP yet", p.Namespace, p.Name)
	}
	if p.Spec.HostNetwork && !allowHostNetwork {
		return fmt.Errorf("pod %s/%s uses the host network: it would measure the node's network, not a pod path (pass --allow-host-network to do so anyway)", p.Namespace, p.Name)
	}
	switch {
	case container != "":
		found := false
		for _, c := range p.Spec.Containers {
			found = found || c.Name == container
		}
		if !found {
			return fmt.Errorf("pod %s/%s has no container %q", p.Namespace, p.Name, container)
		}
		t.Container = container
	case p.Annotations["kubectl.kubernetes.io/default-container"] != "":
		t.Container = p.Annotations["kubectl.kubernetes.io/default-container"]
	default:
		t.Container = p.Spec.Containers[0].Name
	}
	return nil
}

// AppContainers are the target pod's running containers (sidecars too) and ephemeral
// containers, as report.Judge names the processes an ephemeral agent in the pod saw: the ID
// from the pod's status, each container's own CPU limit from its spec, and whether the agent
// (which targets t.Container) can see its processes.
func AppContainers(t *session.Target) []report.Container {
	if t == nil || t.Pod == nil {
		return nil
	}
	p := t.Pod
	shared := p.Spec.ShareProcessNamespace != nil && *p.Spec.ShareProcessNamespace
	var out []report.Container
	add := func(c corev1.Container, statuses []corev1.ContainerStatus, ephemeral bool) {
		rc := report.Container{Name: c.Name, LimitCores: c.Resources.Limits.Cpu().AsApproximateFloat64(), Ephemeral: ephemeral,
			Visible: shared || c.Name == t.Container}
		for _, s := range statuses {
			if s.Name == c.Name {
				_, rc.ID, _ = strings.Cut(s.ContainerID, "://")
			}
		}
		out = append(out, rc)
	}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c, p.Status.InitContainerStatuses, false)
		}
	}
	for _, c := range p.Spec.Containers {
		add(c, p.Status.ContainerStatuses, false)
	}
	for _, e := range p.Spec.EphemeralContainers {
		add(corev1.Container(e.EphemeralContainerCommon), p.Status.EphemeralContainerStatuses, true)
	}
	return out
}

// AppIDs are the runtime IDs of the target pod's application containers (not the ephemeral
// ones): those an ephemeral agent in it accounts the CPU of.
func AppIDs(t *session.Target) []string {
	var ids []string
	for _, c := range AppContainers(t) {
		if !c.Ephemeral && c.ID != "" {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// ServiceTarget is the Service arg names (svc/NAME, service/NAME or services/NAME, with
// NAMESPACE/ before it or defaultNS); "" when arg names none.
func ServiceTarget(arg, defaultNS string) (ns, name string) {
	ns, res, err := SplitTarget(arg, defaultNS)
	if err != nil {
		return "", ""
	}
	if typ, n, ok := strings.Cut(res, "/"); ok && slices.Contains([]string{"svc", "service", "services"}, strings.ToLower(typ)) {
		return ns, n
	}
	return "", ""
}
