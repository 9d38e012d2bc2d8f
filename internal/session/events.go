package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/text"
)

// maxResumes bounds how often a broken log stream is reopened.
const maxResumes = 5

// ErrEndedWithoutResult means an agent's output ended before it said it was done.
var ErrEndedWithoutResult = errors.New("ended without a result")

// Wait waits until the agent's container runs (or already ended), within the session's start
// timeout, surfacing the reasons a container cannot start as they happen.
func (a *Agent) Wait(ctx context.Context) error {
	if a.s.DryRun {
		return nil // nothing runs
	}
	startCtx, cancel := context.WithTimeout(ctx, a.s.StartTimeout)
	defer cancel()
	err := a.waitStarted(startCtx)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case startCtx.Err() != nil:
		return fmt.Errorf("%s: %w within --start-timeout %s (can the nodes pull %s? see kubectl describe pod -n %s %s; --image names a mirror)%s",
			a, ErrStartTimeout, a.s.StartTimeout, a.s.Image, a.Namespace, a.Pod, a.leftNote())
	default:
		return fmt.Errorf("%s: %w%s", a, err, a.leftNote())
	}
}

// leftNote says what an ephemeral agent that never started leaves in the pod.
func (a *Agent) leftNote() string {
	if a.Temporary {
		return ""
	}
	return fmt.Sprintf("; the waiting container %s stays in the pod's spec (ephemeral containers cannot be removed) but exits at once if it ever starts after %s",
		a.Container, a.NotAfter.UTC().Format(time.RFC3339))
}

func (a *Agent) waitStarted(ctx context.Context) error {
	client := a.s.Client
	fs := fields.OneTermEqualSelector("metadata.name", a.Pod).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = fs
			return client.CoreV1().Pods(a.Namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = fs
			return client.CoreV1().Pods(a.Namespace).Watch(ctx, o)
		},
	}
	// The client says whether it serves watch-list semantics (a fake clientset does not).
	_, err := watchtools.UntilWithSync(ctx, cache.ToListWatcherWithWatchListSemantics(lw, client), &corev1.Pod{}, nil, func(ev watch.Event) (bool, error) {
		if ev.Type == watch.Deleted {
			return false, fmt.Errorf("pod %s/%s was deleted while the agent started", a.Namespace, a.Pod)
		}
		p, ok := ev.Object.(*corev1.Pod)
		if !ok {
			return false, nil
		}
		return a.started(p)
	})
	return err
}

// started reads the agent container's state from its pod.
func (a *Agent) started(p *corev1.Pod) (bool, error) {
	statuses := p.Status.EphemeralContainerStatuses
	if a.Temporary {
		statuses = p.Status.ContainerStatuses
		if p.Status.Phase == corev1.PodPending {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
					return false, fmt.Errorf("agent pod %s/%s cannot be scheduled: %s", a.Namespace, a.Pod, c.Message)
				}
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
				a.IP, a.IPs = p.Status.PodIP, PodIPs(p)
			}
			return true, nil
		case s.State.Waiting != nil:
			switch r := s.State.Waiting.Reason; r {
			case "ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull":
				return false, fmt.Errorf("the agent image %s cannot be pulled on node %s (%s: %s): %s",
					a.s.Image, p.Spec.NodeName, r, text.Sanitize(s.State.Waiting.Message), a.pullAdvice(p))
			case "CreateContainerConfigError", "CreateContainerError", "RunContainerError":
				return false, fmt.Errorf("the agent container cannot start (%s: %s)", r, text.Sanitize(s.State.Waiting.Message))
			}
		}
	}
	return false, nil
}

// StartReady starts an agent (Start) and waits until it runs and is ready (WaitReady); what
// names it in the error of a failed start ("the client agent").
func (s *Session) StartReady(ctx context.Context, spec AgentSpec, what string) (*Agent, error) {
	a, err := s.Start(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", what, err)
	}
	if err := a.WaitReady(ctx); err != nil {
		return nil, err
	}
	return a, nil
}

// WaitReady waits until the agent runs (Wait) and is ready for its job (Ready).
func (a *Agent) WaitReady(ctx context.Context) error {
	if err := a.Wait(ctx); err != nil {
		return err
	}
	return a.Ready(ctx)
}

// Ready waits for the agent's ready event, within the start timeout. A server from then on has
// its lease renewed and its events followed in the background until Close; a runner is
// handed its job.
func (a *Agent) Ready(ctx context.Context) error {
	if a.s.DryRun {
		a.Port = a.Spec.Port
		return nil
	}
	if a.Spec.InlineJob {
		return nil // it runs its job as it starts; its events are followed from its output
	}
	startCtx, cancel := context.WithTimeout(ctx, a.s.StartTimeout)
	defer cancel()
	err := a.Follow(startCtx, func(ev agent.Event) (bool, error) {
		switch ev.Type {
		case agent.EventReady:
			a.Port = ev.Port
			return true, nil
		case agent.EventError, agent.EventExit:
			return false, fmt.Errorf("%s: %s", a, text.Sanitize(ev.Message))
		}
		return false, nil
	})
	if err != nil {
		if ctx.Err() == nil && startCtx.Err() != nil {
			return fmt.Errorf("%s: %w: no ready event within --start-timeout %s", a, ErrStartTimeout, a.s.StartTimeout)
		}
		return err
	}
	if !a.Spec.Serve {
		return a.handOver(ctx)
	}
	a.firstLease(ctx)
	// Admitted like a create, so that Close, which waits for those, never waits for the
	// background work before it is added; after Close has begun there is none.
	if err := a.s.begin(); err != nil {
		return err
	}
	a.s.wg.Add(2)
	a.s.creating.Done()
	go func() { defer a.s.wg.Done(); a.s.renewLease(a) }()
	go func() { defer a.s.wg.Done(); a.followServer() }()
	return nil
}

// firstLease renews a server's lease once before anything else talks to it: the request
// carries the token through the pod proxy, from which the server derives the key of its UDP
// echo (the spec only carries the token's digest). It is retried for a few seconds while the
// agent sheds connections; a port the proxy cannot reach is left to the probes to report (they
// name what blocks it), the renewals that follow keep trying.
func (a *Agent) firstLease(ctx context.Context) {
	fctx, cancel := context.WithTimeout(ctx, firstLeaseWithin)
	defer cancel()
	err := a.proxyRetrying(fctx, agent.PathLease, nil, "renewing the lease of")
	if ctx.Err() != nil {
		return
	}
	a.renewed(err)
	if err != nil {
		a.s.Logf("%v", err)
	}
}

// firstLeaseWithin bounds the first lease renewal's retries.
const firstLeaseWithin = 5 * time.Second

// handOver posts the runner's job to it through the pod proxy, without the token (the
// request carries it).
func (a *Agent) handOver(ctx context.Context) error {
	job := *a.Spec.Job
	job.Token = ""
	body, err := json.Marshal(job)
	if err != nil {
		return err
	}
	if err := a.proxyRetrying(ctx, agent.PathJob, body, "handing its job to"); err != nil {
		return err
	}
	a.mu.Lock()
	a.handedOver = true
	a.mu.Unlock()
	return nil
}

// proxyRetrying posts body to the agent's path through the pod proxy, retrying until the start
// timeout: an agent closes connections beyond its bounds, and peers without the token may be
// holding some.
func (a *Agent) proxyRetrying(ctx context.Context, path string, body []byte, what string) error {
	hctx, cancel := context.WithTimeout(ctx, a.s.StartTimeout)
	defer cancel()
	for {
		err := a.s.Proxy(hctx, a, "POST", path, body)
		if err == nil {
			return nil
		}
		if refusedJob(err) {
			return fmt.Errorf("%s the %s: refused: %w", what, a, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-hctx.Done():
			return fmt.Errorf("%s the %s through the pod proxy: %w", what, a, err)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// refusedJob tells an answer of the agent itself (a bad job, a wrong token, a job already
// handed over) from a connection the proxy could not make or the agent shed.
func refusedJob(err error) bool {
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		return false
	}
	switch st.Status().Code {
	case http.StatusBadRequest, http.StatusUnauthorized, http.StatusConflict:
		return true
	}
	return false
}

// pullAdvice says what lets an agent's image be pulled: a mirror, and the pull secrets that
// apply to it (an ephemeral container pulls with its pod's own, which the run cannot change).
func (a *Agent) pullAdvice(p *corev1.Pod) string {
	advice := "use --image to name a mirror the nodes can pull from"
	var names []string
	for _, r := range p.Spec.ImagePullSecrets {
		names = append(names, r.Name)
	}
	switch {
	case !a.Temporary && len(names) == 0:
		return advice + "; an ephemeral agent pulls with its pod's imagePullSecrets, and this pod has none: a registry that wants credentials needs --mode pod with --image-pull-secret"
	case !a.Temporary:
		return advice + fmt.Sprintf("; an ephemeral agent pulls with its pod's imagePullSecrets (%s): a registry they do not open needs --mode pod with --image-pull-secret", strings.Join(names, ", "))
	case len(names) == 0:
		return advice + ", and --image-pull-secret if it wants credentials"
	}
	return advice + fmt.Sprintf(", or check the pull secrets the pod was given (%s)", strings.Join(names, ", "))
}
