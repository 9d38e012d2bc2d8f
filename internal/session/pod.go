package session

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func (s *Session) securityContext(a *Agent) *corev1.SecurityContext {
	if a.Spec.Capture {
		return captureContext()
	}
	return restrictedContext()
}

func (s *Session) addEphemeral(ctx context.Context, a *Agent, args []string) error {
	t := a.Spec.Target
	a.Pod, a.Container, a.IP, a.IPs = t.Pod.Name, s.Name(a.Spec), t.Pod.Status.PodIP, PodIPs(t.Pod)
	ec := corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: a.Container, Image: s.Image, ImagePullPolicy: corev1.PullIfNotPresent,
			Args: args, Env: a.env(), SecurityContext: s.securityContext(a),
			TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		},
		TargetContainerName: t.Container,
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"ephemeralContainers": []corev1.EphemeralContainer{ec}}})
	if err != nil {
		return err
	}
	answer, err := s.Client.CoreV1().Pods(t.Namespace).Patch(ctx, t.Pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{DryRun: s.dryRunAll()}, "ephemeralcontainers")
	if err == nil && s.DryRun {
		s.plan(VerbPatchEphemeral, fmt.Sprintf("the %s agent in %s/%s", a.Spec.Role, t.Namespace, t.Pod.Name), ephemeralPatch(answer, t.Namespace, t.Pod.Name, ec))
	}
	if apierrors.IsNotFound(err) {
		if _, gerr := s.Client.CoreV1().Pods(t.Namespace).Get(ctx, t.Pod.Name, metav1.GetOptions{}); gerr == nil {
			return ErrEphemeralUnsupported
		}
		return fmt.Errorf("pod %s/%s is gone", t.Namespace, t.Pod.Name)
	}
	seen := t.Pod.DeepCopy()
	seen.Spec.EphemeralContainers = append(seen.Spec.EphemeralContainers, ec)
	return access.Refusal(ctx, s.Client, err, access.Refused{Doing: fmt.Sprintf("adding the %s agent to %s/%s", a.Spec.Role, t.Namespace, t.Pod.Name),
		Need: access.Permission{Verb: "patch", Resource: "pods", Subresource: "ephemeralcontainers"}, Namespace: t.Namespace, Name: t.Pod.Name, Pod: seen})
}

func (s *Session) createPod(ctx context.Context, a *Agent, args []string) error {
	t := a.Spec.Target
	a.Pod, a.Container, a.Temporary = s.Name(a.Spec), "agent", true
	node := t.Pod.Spec.NodeName
	if pl := a.Spec.Placement; pl != nil {
		node = pl.Node
	}
	p := agentPod(a.Pod, t.Namespace, node, s.Labels(a.Spec.Role), a.Spec.Lifetime)
	// On the target's node, the target's tolerations and every NoSchedule taint (the affinity
	// fixes the node; a cordon or a taint added after the target started must not keep the
	// agent off it); placed, the placement's.
	p.Spec.Tolerations, p.Spec.ImagePullSecrets = onTargetsNode(t.Pod.Spec.Tolerations), slices.Clone(s.PullSecrets)
	if pl := a.Spec.Placement; pl != nil {
		p.Spec.Tolerations, p.Spec.HostNetwork = pl.Tolerations, pl.HostNetwork
		if pl.HostNetwork {
			p.Spec.DNSPolicy = corev1.DNSClusterFirstWithHostNet
			p.Spec.SecurityContext.Sysctls = nil // the node's network namespace keeps the node's sysctls
		}
	}
	c := &p.Spec.Containers[0]
	c.Image, c.Args, c.Env, c.SecurityContext = s.Image, args, a.env(), podContext(s.securityContext(a))
	SetResources(c, s.Resources)
	answer, err := s.Client.CoreV1().Pods(t.Namespace).Create(ctx, p, metav1.CreateOptions{DryRun: s.dryRunAll()})
	if err == nil && s.DryRun {
		s.plan(VerbCreate, fmt.Sprintf("the %s agent on node %s", a.Spec.Role, node), answer)
	}
	return access.Refusal(ctx, s.Client, err, access.Refused{Doing: fmt.Sprintf("creating agent pod %s/%s", t.Namespace, a.Pod),
		Need: access.Permission{Verb: "create", Resource: "pods"}, Namespace: t.Namespace, Pod: p})
}

// SetResources gives an agent container its resources and, under a memory limit, a Go memory
// limit (GOMEMLIMIT) of three quarters of it, so the runtime collects before the kernel kills.
func SetResources(c *corev1.Container, r *corev1.ResourceRequirements) {
	if r == nil {
		return
	}
	c.Resources = *r.DeepCopy()
	if lim, ok := r.Limits[corev1.ResourceMemory]; ok {
		if v := agentMemoryLimit(lim.Value()); v < agent.DefaultMemoryLimit {
			c.Env = append(c.Env, corev1.EnvVar{Name: "GOMEMLIMIT", Value: strconv.FormatInt(v, 10)})
		}
	}
}

// agentMemoryLimit is the Go memory limit for a container memory limit of limit bytes.
func agentMemoryLimit(limit int64) int64 { return limit / 4 * 3 }

// agentPod is a temporary agent pod on node that ends by itself after lifetime.
func agentPod(name, namespace, node string, labels map[string]string, lifetime time.Duration) *corev1.Pod {
	var grace int64
	deadline := int64(lifetime.Seconds()) + 30
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: labels},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: &grace,
			ActiveDeadlineSeconds:         &deadline,
			AutomountServiceAccountToken:  new(bool),
			EnableServiceLinks:            new(bool),
			SecurityContext:               pingForAll(),
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
				RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
					MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{node}}},
				}}},
			}},
			Containers: []corev1.Container{{
				Name: "agent", ImagePullPolicy: corev1.PullIfNotPresent,
				TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
			}},
		},
	}
}

// PingGroupRange is the net.ipv4.ping_group_range a temporary agent pod asks for: the agent's
// own group (AgentUser) may open an unprivileged ICMP socket in the pod's network namespace,
// where only the agent runs. A runtime that does not set it (containerd before 2.0, by default)
// leaves the kernel's "1 0", and an agent without CAP_NET_RAW could not ping; Kubernetes counts
// the sysctl safe and Pod Security allows it. An ephemeral agent keeps what the application's
// pod has.
var PingGroupRange = fmt.Sprintf("%d %d", AgentUser, AgentUser)

func pingForAll() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{Sysctls: []corev1.Sysctl{{Name: "net.ipv4.ping_group_range", Value: PingGroupRange}}}
}

func captureContext() *corev1.SecurityContext {
	sc := restrictedContext()
	root, no := int64(0), false
	sc.RunAsUser, sc.RunAsNonRoot = &root, &no
	sc.Capabilities.Add = []corev1.Capability{"NET_RAW"}
	return sc
}

// restrictedContext fits Pod Security "restricted" and more: no privilege escalation, no
// capability, the runtime's seccomp profile, a non-root user and a read-only root filesystem
// (the agent writes no file).
func restrictedContext() *corev1.SecurityContext {
	no, yes := false, true
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: &no,
		RunAsNonRoot:             &yes,
		ReadOnlyRootFilesystem:   &yes,
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		SeccompProfile:           &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// AgentUser is the agent image's non-root user and group.
const AgentUser = 65532

// podContext names the user of a temporary pod's agent by number (AgentUser, unless the
// context already names one), so that RunAsNonRoot holds whatever user the image declares.
// Ephemeral containers leave it to the pod: run as the application's user, the agent may read
// the application's binary (to tell its resolver).
func podContext(sc *corev1.SecurityContext) *corev1.SecurityContext {
	if sc.RunAsUser == nil {
		id := int64(AgentUser)
		sc.RunAsUser, sc.RunAsGroup = &id, &id
	}
	return sc
}

// onTargetsNode are the tolerations of a temporary agent on its target's node: the target's,
// and any NoSchedule taint. A NoExecute taint the target does not tolerate evicts the agent too.
func onTargetsNode(target []corev1.Toleration) []corev1.Toleration {
	return append(slices.Clone(target), corev1.Toleration{Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule})
}
