package plugin

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/agent"
)

// Labels every temporary pod carries, so that `kubectl delete pods -l` can always find them.
const (
	ManagedByLabel = "app.kubernetes.io/managed-by"
	ManagedByValue = "kubectl-netbench"
	RunIDLabel     = "netbench.kubectl.dev/run-id"
	RoleLabel      = "netbench.kubectl.dev/role"
)

// Modes of starting agents.
const (
	ModeEphemeral = "ephemeral"
	ModePod       = "pod"
	ModeAuto      = "auto"
)

// ErrEphemeralUnsupported means the cluster cannot add ephemeral containers.
var ErrEphemeralUnsupported = errors.New("ephemeral containers are not enabled on this cluster (use --mode pod)")

// ErrPodSecurity means the namespace's Pod Security level refused the agent's security context.
var ErrPodSecurity = errors.New("the namespace's Pod Security level forbids it")

// agentRef is a running agent: where it runs and how to read its events.
type agentRef struct {
	Namespace string
	Pod       string
	Container string
	IP        string
	Temporary bool // a temporary pod, deleted on cleanup
}

// injector starts agents for a run.
type injector struct {
	client kubernetes.Interface
	runID  string
	image  string
	mode   string // ModeEphemeral or ModePod
	// capture runs the agent as root with only NET_RAW, for packet capture.
	capture bool
}

// captureContext is the least a packet capture needs: root with CAP_NET_RAW and nothing else.
func captureContext() *corev1.SecurityContext {
	sc := restrictedContext()
	root, no := int64(0), false
	sc.RunAsUser, sc.RunAsNonRoot = &root, &no
	sc.Capabilities.Add = []corev1.Capability{"NET_RAW"}
	return sc
}

func restrictedContext() *corev1.SecurityContext {
	no, yes := false, true
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: &no,
		RunAsNonRoot:             &yes,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// start runs the agent with args next to target t, as role ("server" or "client").
func (in *injector) start(ctx context.Context, t *Target, role string, args []string, env []corev1.EnvVar) (*agentRef, error) {
	name := fmt.Sprintf("netbench-%s-%s", in.runID, role)
	if in.mode == ModeEphemeral {
		return in.startEphemeral(ctx, t, name, args, env)
	}
	return in.startPod(ctx, t, name, role, args, env)
}

func (in *injector) startEphemeral(ctx context.Context, t *Target, name string, args []string, env []corev1.EnvVar) (*agentRef, error) {
	ec := corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: name, Image: in.image, ImagePullPolicy: corev1.PullIfNotPresent,
			Args: args, Env: env, SecurityContext: restrictedContext(),
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		},
		TargetContainerName: t.Container,
	}
	if in.capture {
		ec.SecurityContext = captureContext()
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"ephemeralContainers": []corev1.EphemeralContainer{ec}}})
	if err != nil {
		return nil, err
	}
	_, err = in.client.CoreV1().Pods(t.Namespace).Patch(ctx, t.Pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "ephemeralcontainers")
	switch {
	case err == nil:
	case apierrors.IsNotFound(err):
		if _, gerr := in.client.CoreV1().Pods(t.Namespace).Get(ctx, t.Pod.Name, metav1.GetOptions{}); gerr == nil {
			return nil, ErrEphemeralUnsupported
		}
		return nil, fmt.Errorf("pod %s/%s is gone", t.Namespace, t.Pod.Name)
	case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "violates PodSecurity"):
		return nil, fmt.Errorf("%w: %v", ErrPodSecurity, err)
	case apierrors.IsForbidden(err):
		return nil, forbidden(err)
	default:
		return nil, fmt.Errorf("adding the agent to %s/%s: %w", t.Namespace, t.Pod.Name, err)
	}
	return &agentRef{Namespace: t.Namespace, Pod: t.Pod.Name, Container: name, IP: t.Pod.Status.PodIP}, nil
}

func (in *injector) startPod(ctx context.Context, t *Target, name, role string, args []string, env []corev1.EnvVar) (*agentRef, error) {
	var grace int64 = 0
	// The kubelet ends the pod by this deadline even if nobody deletes it.
	deadline := int64(agentLifetime(args).Seconds()) + 30
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      name,
			Namespace: t.Namespace,
			Labels:    map[string]string{ManagedByLabel: ManagedByValue, RunIDLabel: in.runID, RoleLabel: role},
		},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			ActiveDeadlineSeconds:         &deadline,
			AutomountServiceAccountToken:  new(bool),
			EnableServiceLinks:            new(bool),
			Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{t.Pod.Spec.NodeName}}},
				}}},
			}},
			Containers: []corev1.Container{{
				Name: "agent", Image: in.image, ImagePullPolicy: corev1.PullIfNotPresent,
				Args: args, Env: env, SecurityContext: restrictedContext(),
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
	if _, err := in.client.CoreV1().Pods(t.Namespace).Create(ctx, p, metav1.CreateOptions{}); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, forbidden(err)
		}
		return nil, fmt.Errorf("creating agent pod %s/%s: %w", t.Namespace, name, err)
	}
	return &agentRef{Namespace: t.Namespace, Pod: name, Container: "agent", Temporary: true}, nil
}

// agentLifetime reads the --deadline an agent was given.
func agentLifetime(args []string) time.Duration {
	for i, a := range args {
		if a == "--deadline" && i+1 < len(args) {
			if d, err := time.ParseDuration(args[i+1]); err == nil {
				return d
			}
		}
	}
	return 5 * time.Minute
}

// waitStarted watches the agent's pod until its container runs (or already ended), surfacing
// the reasons a container cannot start as they happen. It fills in the IP of a temporary pod.
func waitStarted(ctx context.Context, client kubernetes.Interface, a *agentRef, image string) error {
	fs := fields.OneTermEqualSelector("metadata.name", a.Pod).String()
	lw := &cache.ListWatch{
		ListFunc: func(o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = fs
			return client.CoreV1().Pods(a.Namespace).List(ctx, o)
		},
		WatchFunc: func(o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = fs
			return client.CoreV1().Pods(a.Namespace).Watch(ctx, o)
		},
	}
	_, err := watchtools.UntilWithSync(ctx, lw, &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("pod %s/%s was deleted while the agent started", a.Namespace, a.Pod)
		}
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		statuses := p.Status.ContainerStatuses
		if !a.Temporary {
			statuses = p.Status.EphemeralContainerStatuses
		} else if p.Status.Phase == corev1.PodPending {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					return false, fmt.Errorf("agent pod %s/%s cannot be scheduled: %s", a.Namespace, a.Pod, c.Message)
				}
			}
		}
		for _, s := range statuses {
			if s.Name != a.Container {
				continue
			}
			switch {
			case s.State.Running != nil, s.State.Terminated != nil:
				if a.Temporary {
					a.IP = p.Status.PodIP
				}
				return true, nil
			case s.State.Waiting != nil:
				switch r := s.State.Waiting.Reason; r {
				case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
					return false, fmt.Errorf("the agent image %s cannot be pulled on node %s (%s: %s): use --image to name a mirror the nodes can pull from",
						image, p.Spec.NodeName, r, s.State.Waiting.Message)
				case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
					return false, fmt.Errorf("the agent container cannot start (%s: %s)", r, s.State.Waiting.Message)
				}
			}
		}
		return false, nil
	})
	if err != nil && ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

// streamEvents follows the agent's stdout and calls fn for every event until fn returns true,
// the stream ends, or ctx ends.
func streamEvents(ctx context.Context, client kubernetes.Interface, a *agentRef, fn func(agent.Event) (bool, error)) error {
	rc, err := client.CoreV1().Pods(a.Namespace).GetLogs(a.Pod, &corev1.PodLogOptions{Container: a.Container, Follow: true}).Stream(ctx)
	if err != nil {
		if apierrors.IsForbidden(err) {
			return forbidden(err)
		}
		return fmt.Errorf("reading the agent's output (%s/%s, container %s): %w", a.Namespace, a.Pod, a.Container, err)
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var ev agent.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.APIVersion == "" {
			continue // not an event (e.g. a runtime's own message)
		}
		done, err := fn(ev)
		if err != nil || done {
			return err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if err := sc.Err(); err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("reading the agent's output: %w", err)
	}
	return fmt.Errorf("the agent (%s/%s, container %s) ended without a result", a.Namespace, a.Pod, a.Container)
}

// deleteTemporary deletes the run's temporary pods, by label, with its own short deadline so
// that it also runs after the run's context was cancelled.
func deleteTemporary(client kubernetes.Interface, namespaces []string, runID string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var grace int64 = 0
	var errs []error
	seen := map[string]bool{}
	for _, ns := range namespaces {
		if seen[ns] {
			continue
		}
		seen[ns] = true
		err := client.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: &grace},
			metav1.ListOptions{LabelSelector: ManagedByLabel + "=" + ManagedByValue + "," + RunIDLabel + "=" + runID})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting agent pods in %s (delete them with: kubectl delete pods -n %s -l %s=%s): %w", ns, ns, RunIDLabel, runID, err))
		}
	}
	return errors.Join(errs...)
}

// stopServer tells a server agent in an ephemeral container to exit now, through the API
// server's pod proxy (the plugin cannot reach pod IPs itself). Temporary pods are deleted
// instead. It has its own short deadline so that it also runs after an interrupt.
func stopServer(client kubernetes.Interface, a *agentRef, port int, token string) error {
	if a == nil || a.Temporary || port == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return client.CoreV1().RESTClient().Post().
		Namespace(a.Namespace).Resource("pods").Name(fmt.Sprintf("%s:%d", a.Pod, port)).
		SubResource("proxy").Suffix(strings.TrimPrefix(agent.PathDone, "/")).
		SetHeader(agent.TokenHeader, token).
		Do(ctx).Error()
}
