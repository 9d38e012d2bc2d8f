package cmdtest

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// configure points a session's logs and proxy at the scripts and the record.
func configure(f *fakecluster.Cluster, s *session.Session) {
	f.Token = s.Token
	s.Logs = func(ctx context.Context, a *session.Agent, _ *corev1.PodLogOptions) (io.ReadCloser, error) {
		f.Mu.Lock()
		fn := f.Script[string(a.Spec.Role)]
		f.Mu.Unlock()
		if fn == nil {
			return io.NopCloser(strings.NewReader("")), nil
		}
		if !a.Spec.Serve {
			// A runner says it awaits its job before anything else, as the agent does.
			ready := fakecluster.Events(agent.Event{Type: agent.EventReady, Port: 41000})
			return io.NopCloser(io.MultiReader(strings.NewReader(ready), fn(ctx))), nil
		}
		return fn(ctx), nil
	}
	s.Proxy = func(ctx context.Context, a *session.Agent, method, path string, _ []byte) error {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		f.Mu.Lock()
		defer f.Mu.Unlock()
		f.Proxied = append(f.Proxied, method+" "+path)
		f.ProxiedBy = append(f.ProxiedBy, string(a.Spec.Role)+": "+method+" "+path)
		if path == agent.PathJob {
			return f.JobErr
		}
		if path == agent.PathDone && f.GoneBeforeDone {
			// The server already exited: its port refuses, and the kubelet reports it a moment later.
			go f.Terminate(a.Pod, a.Container, 500*time.Millisecond)
			return errors.New("dial tcp: connect: connection refused")
		}
		return f.ProxyErr
	}
}

// options wires command options to the fake cluster.
func UseCluster(f *fakecluster.Cluster, c *cmdutil.CommonOptions) {
	c.Client, c.Namespace = f.Clientset, "shop"
	c.NewRunID = func() string { return "run1" }
	c.Progress = func(string, ...any) {}
	c.ConfigureSession = func(s *session.Session) { configure(f, s) }
	c.Resolve = func(ctx context.Context, arg, container string, allowHost bool) (*session.Target, error) {
		name := arg[strings.LastIndex(arg, "/")+1:]
		p, err := f.Clientset.CoreV1().Pods("shop").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		t := &session.Target{Arg: arg, Namespace: p.Namespace, Pod: p}
		return t, cmdutil.CheckTarget(t, container, allowHost)
	}
}

// LockedDown fails the test unless every pod runs its agent as the restricted user, without
// privileges, capabilities, a service-account token or the host network.
func LockedDown(t *testing.T, pods []*corev1.Pod) {
	t.Helper()
	if len(pods) == 0 {
		t.Fatal("no agent pod was created")
	}
	for _, p := range pods {
		sc := p.Spec.Containers[0].SecurityContext
		locked := sc != nil && *sc.RunAsUser == session.AgentUser && *sc.RunAsGroup == session.AgentUser && *sc.RunAsNonRoot &&
			!*sc.AllowPrivilegeEscalation && *sc.ReadOnlyRootFilesystem && sc.Capabilities != nil &&
			slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) && len(sc.Capabilities.Add) == 0 &&
			sc.SeccompProfile != nil && sc.SeccompProfile.Type == corev1.SeccompProfileTypeRuntimeDefault
		if !locked || p.Spec.AutomountServiceAccountToken == nil || *p.Spec.AutomountServiceAccountToken || p.Spec.HostNetwork {
			t.Errorf("pod %s: security context %+v, service-account token %v, host network %v", p.Name, sc, p.Spec.AutomountServiceAccountToken, p.Spec.HostNetwork)
		}
	}
}
