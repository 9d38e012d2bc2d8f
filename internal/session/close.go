package session

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
)

// ErrLeftBehind wraps what Close could not clean up; its message holds the commands that finish it.
var ErrLeftBehind = errors.New("not everything could be cleaned up")

// podProxy sends a control request to an agent through the API server's pod proxy (the
// plugin cannot reach pod IPs itself), with the run token.
func (s *Session) podProxy(ctx context.Context, a *Agent, method, path string, body []byte) error {
	_, err := s.Request(ctx, a.Namespace, a.Pod, a.Port, method, path, body)
	return err
}

// podRequest sends a request to a pod's port through the API server's pod proxy, with the
// run token, and returns the answer's body.
func (s *Session) podRequest(ctx context.Context, namespace, pod string, port int, method, path string, body []byte) ([]byte, error) {
	req := s.Client.CoreV1().RESTClient().Verb(method).
		Namespace(namespace).Resource("pods").Name(fmt.Sprintf("%s:%d", pod, port)).
		SubResource("proxy").Suffix(strings.TrimPrefix(path, "/")).
		SetHeader(agent.TokenHeader, s.Token)
	if body != nil {
		req = req.SetHeader("Content-Type", "application/json").Body(body)
	}
	return req.DoRaw(ctx)
}

// renewLease keeps a server agent's lease until the session closes: a renewal every
// LeasePeriod/5, each allowed four fifths of the lease to get through the API server's pod
// proxy, and a slow one does not hold back the next (up to leaseInFlight at once; a tick with
// every slot taken is skipped). Renewed one at a time, two slow answers in a row let the
// lease lapse; now the agent ends only when no renewal gets through for a whole lease.
func (s *Session) renewLease(a *Agent) {
	tick := time.NewTicker(LeasePeriod / 5)
	defer tick.Stop()
	slots := make(chan struct{}, leaseInFlight)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		select {
		case slots <- struct{}{}:
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-slots }()
				s.renewOnce(a)
			}()
		default: // every slot still waits on the proxy; the next tick tries again
		}
		select {
		case <-s.bg.Done():
			return
		case <-tick.C:
		}
	}
}

// leaseInFlight bounds a server's lease renewals waiting on the pod proxy at once.
const leaseInFlight = 4

func (s *Session) renewOnce(a *Agent) {
	ctx, cancel := context.WithTimeout(s.bg, LeasePeriod*4/5)
	defer cancel()
	err := s.Proxy(ctx, a, "POST", agent.PathLease, nil)
	if s.bg.Err() != nil {
		return // the session closed under it
	}
	a.renewed(err)
	if err != nil {
		s.Logf("renewing the lease of the %s: %v", a, err)
	}
}

// Close ends every agent of the session and deletes what the session created, on a fresh
// bounded context (it also runs after an interrupt). It reports what it could not undo,
// with the command that finishes it. Calling it again does nothing.
func (s *Session) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	var errs []error
	if !s.createsEnded(ctx) {
		errs = append(errs, fmt.Errorf("a create was still unanswered after %s: what it made, if anything, is left (delete it with: kubectl delete pods,services,endpointslices,daemonsets,networkpolicies -A -l %s=%s)",
			cleanupTimeout, RunIDLabel, s.RunID))
	}
	s.mu.Lock()
	agents, services, slices, fleets, policies := s.agents, s.services, s.slices, s.fleets, s.Policies
	s.mu.Unlock()
	errs = append(errs, s.deleteSlices(ctx, slices)...)

	for _, f := range fleets {
		if err := f.delete(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	for _, svc := range services {
		err := s.Client.CoreV1().Services(svc.Namespace).Delete(ctx, svc.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting the temporary Service %s/%s (delete it with: kubectl delete service -n %s %s): %w",
				svc.Namespace, svc.Name, svc.Namespace, svc.Name, err))
		}
	}
	// All agents at once: one that cannot be reached must not use up the others' time.
	ended := make([]error, len(agents))
	var wg sync.WaitGroup
	for i, a := range agents {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ended[i] = s.end(ctx, a)
		}()
	}
	wg.Wait()
	for i := len(ended) - 1; i >= 0; i-- {
		if ended[i] != nil {
			errs = append(errs, ended[i])
		}
	}
	errs = append(errs, s.deletePolicies(ctx, policies)...)
	s.stop()
	s.wg.Wait()
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrLeftBehind, errors.Join(errs...))
	}
	return nil
}

// end ends one agent: a temporary pod is deleted; a server, a runner still awaiting its job, or
// one whose job listens for it (StopsOnDone) is told to stop (another runner with its job stops
// with its server).
func (s *Session) end(ctx context.Context, a *Agent) error {
	switch {
	case a.Temporary:
		return s.deletePod(ctx, a)
	case a.Spec.Serve || !a.isHandedOver() || a.Spec.StopsOnDone:
		return s.stopAgent(ctx, a)
	}
	return nil
}

func (s *Session) deletePod(ctx context.Context, a *Agent) error {
	var grace int64
	err := s.Client.CoreV1().Pods(a.Namespace).Delete(ctx, a.Pod, metav1.DeleteOptions{GracePeriodSeconds: &grace})
	if err == nil || apierrors.IsNotFound(err) {
		return nil
	}
	return fmt.Errorf("deleting agent pod %s/%s (delete it with: kubectl delete pod -n %s %s): %w", a.Namespace, a.Pod, a.Namespace, a.Pod, err)
}

func (a *Agent) isHandedOver() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.handedOver
}

// stopAgent tells an ephemeral server, or a runner awaiting its job, to exit now. If its port
// is not known yet (an interrupt before it was ready), the port is read from its output first.
func (s *Session) stopAgent(ctx context.Context, a *Agent) error {
	a.mu.Lock()
	exited := a.exited
	a.mu.Unlock()
	if exited {
		return nil
	}
	if a.Port == 0 {
		a.Port = s.readyPort(ctx, a)
	}
	if a.Port == 0 {
		// Not started (or not ready) yet: a server with no lease renewed exits LeasePeriod after
		// it starts, a runner with no job HandoverWindow after.
		s.Logf("the %s was not ready yet: it exits %s after it gets ready (nobody renews it), and at %s at the latest", a, a.idleExit(), a.NotAfter.UTC().Format(time.RFC3339))
		return nil
	}
	stopCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	err := s.Proxy(stopCtx, a, "POST", agent.PathDone, nil)
	if err == nil || a.exitedWithin(ctx, exitSeenWithin) {
		return nil
	}
	return fmt.Errorf("the %s could not be told to stop (%v): it stops by itself within %s and at %s at the latest",
		a, err, a.idleExit(), a.NotAfter.UTC().Format(time.RFC3339))
}

// readyPort looks for the ready event in an agent's output without following it.
func (s *Session) readyPort(ctx context.Context, a *Agent) int {
	c, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	for c.Err() == nil {
		rc, err := s.Logs(c, a, &corev1.PodLogOptions{Container: a.Container})
		if err == nil {
			b, _ := io.ReadAll(io.LimitReader(rc, 1<<20))
			rc.Close()
			for _, line := range bytes.Split(b, []byte("\n")) {
				if ev, err := agent.DecodeEvent(line); err == nil && ev.Type == agent.EventReady {
					return ev.Port
				}
			}
		}
		select {
		case <-c.Done():
		case <-time.After(300 * time.Millisecond):
		}
	}
	return 0
}

// idleExit is how soon an agent left alone exits: a server without lease renewals, a runner
// without its job.
func (a *Agent) idleExit() time.Duration {
	if a.Spec.Serve {
		return LeasePeriod
	}
	return HandoverWindow
}

// Release ends a temporary agent the run no longer needs (a ladder's finished rung): its pod
// is deleted now, and Close no longer owns it. Other agents are left to Close.
func (s *Session) Release(ctx context.Context, a *Agent) error {
	if !a.Temporary || s.DryRun {
		return nil
	}
	if err := s.deletePod(ctx, a); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, x := range s.agents {
		if x == a {
			s.agents = append(s.agents[:i], s.agents[i+1:]...)
			break
		}
	}
	return nil
}

// NotAfterAnnotation on a temporary Service says when its run is over for sure: later runs and
// `kubectl netbench cleanup` delete it after that time (a plugin killed cannot).
const NotAfterAnnotation = "netbench.kubectl.dev/not-after"

// CreateService creates a temporary Service for the run, labelled as the agents are and
// annotated with the time after which anyone may delete it; Close deletes it.
func (s *Session) CreateService(ctx context.Context, svc *corev1.Service, lifetime time.Duration) (*corev1.Service, error) {
	if err := s.begin(); err != nil {
		return nil, err
	}
	defer s.creating.Done()
	svc.Labels = s.Labels(RoleEndpoint)
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	svc.Annotations[NotAfterAnnotation] = s.Now().Add(lifetime).UTC().Format(time.RFC3339)
	created, err := s.Client.CoreV1().Services(svc.Namespace).Create(ctx, svc, metav1.CreateOptions{DryRun: s.dryRunAll()})
	if err == nil && s.DryRun {
		s.plan(VerbCreate, "the temporary copy of the Service", created)
		return created, nil
	}
	if mayExist(ctx, err) && !s.DryRun {
		s.mu.Lock()
		s.services = append(s.services, svc)
		s.mu.Unlock()
	}
	if err != nil {
		return nil, access.Refusal(ctx, s.Client, err, access.Refused{Doing: fmt.Sprintf("creating the temporary Service %s/%s", svc.Namespace, svc.Name),
			Need: access.Permission{Verb: "create", Resource: "services"}, Namespace: svc.Namespace})
	}
	s.mu.Lock()
	s.services = append(s.services, created)
	s.mu.Unlock()
	return created, nil
}

// exitSeenWithin is how long Close waits to see an agent that did not answer its stop as
// exited: a server its client already told to stop refuses connections a moment before the
// kubelet reports its container terminated.
const exitSeenWithin = 3 * time.Second

// exitedWithin says whether the agent is seen exited within d.
func (a *Agent) exitedWithin(ctx context.Context, d time.Duration) bool {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for {
		if a.hasExited() {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(300 * time.Millisecond):
		}
	}
}

// mayExist says whether a create that failed may have happened all the same: the run was
// interrupted while the request was in flight, and the API server may have made the object
// whose answer never came. The session then keeps its name, so that Close deletes it (an
// object that was never made is simply not found).
func mayExist(ctx context.Context, err error) bool { return err != nil && ctx.Err() != nil }

// createsEnded waits, within ctx, for the creates in flight when Close began: each registers
// what it may have made.
func (s *Session) createsEnded(ctx context.Context) bool {
	done := make(chan struct{})
	go func() {
		s.creating.Wait()
		close(done)
	}()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}
