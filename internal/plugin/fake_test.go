package plugin

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"
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
func useCluster(f *fakecluster.Cluster, c *commonOptions) {
	c.client, c.namespace = f.Cs, "shop"
	c.NewRunID = func() string { return "run1" }
	c.Progress = func(string, ...any) {}
	c.configureSession = func(s *session.Session) { configure(f, s) }
	c.Resolve = func(ctx context.Context, arg, container string, allowHost bool) (*session.Target, error) {
		name := arg[strings.LastIndex(arg, "/")+1:]
		p, err := f.Cs.CoreV1().Pods("shop").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		t := &session.Target{Arg: arg, Namespace: p.Namespace, Pod: p}
		return t, checkTarget(t, container, allowHost)
	}
}

func newTestPathOptions(f *fakecluster.Cluster) (*PathOptions, *strings.Builder) {
	out := &strings.Builder{}
	o := NewPathOptions(nil, genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: io.Discard})
	useCluster(f, &o.commonOptions)
	o.SrcArg, o.DstArg = "client-1", "web-1"
	o.Probes = []string{"rtt"}
	o.Output = "json"
	return o, out
}

// options are matrix options on this cluster, writing JSON to out.
func matrixOptions(f *fakecluster.Fleet, out io.Writer) *MatrixOptions {
	o := NewMatrixOptions(nil, genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: io.Discard})
	o.client, o.namespace, o.Output = f.Cs, "netbench", "json"
	o.NewRunID = func() string { return "run1" }
	o.Progress = func(string, ...any) {}
	o.configureSession = func(s *session.Session) { s.Request = f.Request }
	return o
}
