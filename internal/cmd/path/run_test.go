package path

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil/cmdtest"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-netbench/kubectl-netbench/internal/access"
	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

func TestPathRunSucceeds(t *testing.T) {
	for _, mode := range []string{session.ModeEphemeral, session.ModePod} {
		t.Run(mode, func(t *testing.T) {
			f := fakecluster.New(t, fakecluster.TwoPods()...)
			f.Script[string(session.RoleServer)], f.Script[string(session.RoleClient)] = fakecluster.ThenHold(fakecluster.ServerReady), fakecluster.Then(fakecluster.ClientOK)
			o, out := newTestPathOptions(f)
			o.Mode = mode
			if err := o.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			var r report.PathReport
			if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range r.Probes {
				got = append(got, p.Name)
			}
			if diff := cmp.Diff([]string{"icmp", "tcp-rtt"}, got); diff != "" {
				t.Errorf("probes (-want +got):\n%s", diff)
			}
			if r.Mode != mode || r.Path.Class != report.Unknown {
				t.Errorf("mode %s class %s", r.Mode, r.Path.Class)
			}
			if left := fakecluster.AgentPods(t, f); len(left) != 0 {
				t.Errorf("agent pods left: %v", left)
			}
			calls := f.ProxiedCalls()
			if !slices.Contains(calls, "POST "+agent.PathLease) {
				t.Errorf("the server's lease was never renewed: %v", calls)
			}
			if mode == session.ModeEphemeral && !slices.Contains(calls, "POST "+agent.PathDone) {
				t.Errorf("the ephemeral server was not told to stop: %v", calls)
			}
		})
	}
}

// --repeat 2: the client's job runs the probes twice (round 2's under name@2); the report holds
// both rounds under the probes' own names and each figure over them. A round's result missing
// fails the run, naming it.
func TestPathRunRounds(t *testing.T) {
	if got, want := probeLabels(RepeatProbes([]agent.ProbeSpec{{Kind: agent.ProbeICMP}, {Kind: agent.ProbeTCP, Name: "tcp-1"}}, 3)),
		[]string{"icmp", "tcp-1", "icmp@2", "tcp-1@2", "icmp@3", "tcp-1@3"}; !slices.Equal(got, want) {
		t.Errorf("RepeatProbes: %v, want %v", got, want)
	}
	f := fakecluster.New(t, fakecluster.TwoPods()...)
	f.Script[string(session.RoleServer)] = fakecluster.ThenHold(fakecluster.ServerReady)
	rtt := func(name, kind string, p50 float64) agent.Event {
		ev := fakecluster.RttResult(name, kind)
		ev.Result.RTT = &v1alpha1.RTTResult{Received: 20, RTT: v1alpha1.Latency{Count: 20, P50Micros: p50}}
		return ev
	}
	f.Script[string(session.RoleClient)] = fakecluster.Then(fakecluster.Events(
		rtt("icmp", agent.ProbeICMP, 100), rtt("tcp-rtt", agent.ProbeTCPRTT, 90), rtt("icmp@2", agent.ProbeICMP, 300), rtt("tcp-rtt@2", agent.ProbeTCPRTT, 80),
		agent.Event{Type: agent.EventExit, Message: "job finished"}))
	o, out := newTestPathOptions(f)
	o.Rounds = 2
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	var r report.PathReport
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
		t.Fatal(err)
	}
	if r.Rounds != 2 || len(r.RoundResults) != 2 || r.Figures["icmp.p50"] != (report.Figure{Unit: report.UnitMicros, Median: 200, Min: 100, Max: 300, Samples: 2}) {
		t.Fatalf("rounds %d, round results %+v, figures %+v", r.Rounds, r.RoundResults, r.Figures)
	}
	for _, round := range r.RoundResults {
		if got := resultNames(round.Probes); !slices.Equal(got, []string{"icmp", "tcp-rtt"}) {
			t.Errorf("round %d: %v, want the probes' own names", round.Round, got)
		}
	}

	f = fakecluster.New(t, fakecluster.TwoPods()...)
	f.Script[string(session.RoleServer)] = fakecluster.ThenHold(fakecluster.ServerReady)
	f.Script[string(session.RoleClient)] = fakecluster.Then(fakecluster.ClientOK)
	o, _ = newTestPathOptions(f)
	o.Rounds = 2
	if err := o.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "without results for icmp@2, tcp-rtt@2") {
		t.Errorf("round 2 missing: %v", err)
	}
}

func probeLabels(ps []agent.ProbeSpec) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Label())
	}
	return out
}

func resultNames(rs []*agent.ProbeResult) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Name)
	}
	return out
}

func TestPathRunServerArgs(t *testing.T) {
	f := fakecluster.New(t, fakecluster.TwoPods()...)
	f.Script[string(session.RoleServer)], f.Script[string(session.RoleClient)] = fakecluster.ThenHold(fakecluster.ServerReady), fakecluster.Then(fakecluster.ClientOK)
	o, _ := newTestPathOptions(f)
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	p, err := f.Clientset.CoreV1().Pods("shop").Get(context.Background(), "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ec := p.Spec.EphemeralContainers[0]
	if ec.Name != "netbench-run1-server" || ec.TargetContainerName != "app" {
		t.Errorf("container %s targets %s", ec.Name, ec.TargetContainerName)
	}
	args := strings.Join(ec.Args, " ")
	digest := agent.TokenDigest(f.Token)
	if !strings.HasPrefix(args, "serve --listen :0 --ip 10.0.0.5 --not-after ") || !strings.HasSuffix(args, "--lease 5s --token-sha256 "+digest) {
		t.Errorf("server args %q: want the pod IP, an absolute not-after time, a lease and the token's digest", args)
	}
	// The client's spec carries neither the job nor the token: it is handed them by the proxy.
	cp, err := f.Clientset.CoreV1().Pods("shop").Get(context.Background(), "client-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range append(cp.Spec.EphemeralContainers, ec) {
		spec, _ := json.Marshal(c)
		if strings.Contains(string(spec), f.Token) || strings.Contains(string(spec), "probes") || len(c.Env) != 0 {
			t.Errorf("%s's spec holds the token, the job or env: %s", c.Name, spec)
		}
		if len(spec) > 900 {
			t.Errorf("%s's spec is %d bytes: every run adds it to the pod object for good", c.Name, len(spec))
		}
		t.Logf("%s: %d bytes", c.Name, len(spec))
	}
	if ca := strings.Join(cp.Spec.EphemeralContainers[0].Args, " "); !strings.HasPrefix(ca, "run --listen 10.0.0.4:0 --not-after ") || !strings.HasSuffix(ca, "--await-job "+session.HandoverWindow.String()+" --token-sha256 "+digest) {
		t.Errorf("client args %q", ca)
	}
	if !slices.Contains(f.ProxiedCalls(), "POST "+agent.PathJob) {
		t.Errorf("the job was not handed over: %v", f.ProxiedCalls())
	}
	na, err := time.Parse(time.RFC3339, ec.Args[6])
	if err != nil || time.Until(na) < time.Minute || time.Until(na) > 10*time.Minute {
		t.Errorf("not-after %s (%v): want minutes from now", ec.Args[6], err)
	}
	sc := ec.SecurityContext
	if !*sc.RunAsNonRoot || *sc.AllowPrivilegeEscalation || sc.Capabilities.Drop[0] != "ALL" {
		t.Errorf("security context does not fit Pod Security restricted: %+v", sc)
	}
}

// addNamespace adds namespace shop enforcing the Pod Security level.
func addNamespace(t *testing.T, f *fakecluster.Cluster, level string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop", Labels: map[string]string{"pod-security.kubernetes.io/enforce": level}}}
	if err := f.Clientset.Tracker().Add(ns); err != nil {
		t.Fatal(err)
	}
}

func TestPathRunFailures(t *testing.T) {
	forbidden := apierrors.NewForbidden(schema.GroupResource{Resource: "pods/ephemeralcontainers"}, "web-1", errors.New(`User "dev" cannot patch resource "pods/ephemeralcontainers"`))
	quota := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "x", errors.New(`exceeded quota: q, must specify limits.memory`))
	// Pod Security refuses with a message only; the plugin tells it apart by evaluating the pod
	// at the namespace's level itself (the app's containers here do not fit "restricted").
	podSecurity := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web-1", errors.New(`violates PodSecurity "restricted:latest": runAsNonRoot != true`))
	tests := []struct {
		name    string
		setup   func(f *fakecluster.Cluster, o *PathOptions)
		want    string
		wantIs  error
		noPatch bool // nothing may be added to any pod
	}{
		{name: "permission missing", setup: func(f *fakecluster.Cluster, o *PathOptions) { f.Denied["patch pods/ephemeralcontainers"] = true },
			want: `you may not patch pods/ephemeralcontainers in namespace "shop": nothing was started (grant them with the Role in the README, section RBAC)`, noPatch: true},
		{name: "proxy permission missing", setup: func(f *fakecluster.Cluster, o *PathOptions) { f.Denied["create pods/proxy"] = true },
			want: `you may not create pods/proxy in namespace "shop"`, noPatch: true},
		{name: "pod mode without delete", setup: func(f *fakecluster.Cluster, o *PathOptions) {
			o.Mode = session.ModePod
			f.Denied["delete pods"] = true
		},
			want: `you may not delete pods in namespace "shop"`, noPatch: true},
		{name: "same pod", setup: func(f *fakecluster.Cluster, o *PathOptions) { o.DstArg = "pod/client-1" },
			want: "SRC client-1 and DST pod/client-1 are the same pod shop/client-1: a path needs two pods", noPatch: true},
		{name: "ephemeral containers disabled", setup: func(f *fakecluster.Cluster, o *PathOptions) {
			f.PatchErr = apierrors.NewNotFound(schema.GroupResource{Resource: "pods/ephemeralcontainers"}, "web-1")
		}, wantIs: session.ErrEphemeralUnsupported},
		{name: "rbac refusal at patch", setup: func(f *fakecluster.Cluster, o *PathOptions) {
			f.PatchErr, f.RevokeAtPatch = forbidden, "patch pods/ephemeralcontainers"
		}, want: `cannot patch resource "pods/ephemeralcontainers" (grant it with the Role in the README, section RBAC)`},
		{name: "pod security refusal", setup: func(f *fakecluster.Cluster, o *PathOptions) {
			f.PatchErr = podSecurity
			addNamespace(t, f, "restricted")
		}, want: "adding the server agent to shop/web-1: the namespace's Pod Security level forbids it: pods \"web-1\" is forbidden: violates PodSecurity", wantIs: access.ErrPodSecurity},
		{name: "pod security refusal, namespace unreadable", setup: func(f *fakecluster.Cluster, o *PathOptions) {
			f.PatchErr = podSecurity // no Namespace object: admission at large, in the API server's words
		}, want: "admission refused the agent: pods \"web-1\" is forbidden: violates PodSecurity", wantIs: access.ErrAdmission},
		{name: "quota refusal", setup: func(f *fakecluster.Cluster, o *PathOptions) {
			f.PatchErr = quota
			addNamespace(t, f, "baseline")
		}, want: "admission refused the agent: ", wantIs: access.ErrAdmission},
		{name: "image cannot be pulled", setup: func(f *fakecluster.Cluster, o *PathOptions) { f.Waiting = "ErrImagePull" },
			want: "the agent image " + o0().Image + " cannot be pulled on node n2 (ErrImagePull: pull failed): use --image"},
		{name: "server fails before ready", setup: func(f *fakecluster.Cluster, o *PathOptions) {
			f.Script[string(session.RoleServer)] = fakecluster.Then(fakecluster.Events(agent.Event{Type: agent.EventError, Message: "listening on :0: address in use"}))
		}, want: "server agent (shop/web-1, container netbench-run1-server): listening on :0: address in use"},
		{name: "server never ready", setup: func(f *fakecluster.Cluster, o *PathOptions) {
			f.Script[string(session.RoleServer)] = fakecluster.ThenHold("")
			o.StartTimeout = 300 * time.Millisecond
		}, wantIs: session.ErrStartTimeout},
		{name: "client refuses its job", setup: func(f *fakecluster.Cluster, o *PathOptions) {
			f.JobErr = apierrors.NewBadRequest("job: unknown probe kind")
		}, want: "handing its job to the client agent (shop/client-1, container netbench-run1-client): refused: job: unknown probe kind"},
		{name: "job cannot be handed over", setup: func(f *fakecluster.Cluster, o *PathOptions) {
			f.JobErr = apierrors.NewServiceUnavailable("dial tcp 10.0.0.4:41000: connect: connection refused")
			o.StartTimeout = 700 * time.Millisecond
		}, want: "handing its job to the client agent (shop/client-1, container netbench-run1-client) through the pod proxy: dial tcp 10.0.0.4:41000: connect: connection refused"},
		{name: "agent port refused", setup: func(f *fakecluster.Cluster, o *PathOptions) {
			f.Script[string(session.RoleClient)] = fakecluster.Then(fakecluster.Events(agent.Event{Type: agent.EventError, Probe: "tcp-rtt", Message: "connect: connection refused", Reason: agent.ReasonRefused}))
		}, want: "probe tcp-rtt from shop/client-1 to the server agent at 10.0.0.5:7000 failed: connect: connection refused (a NetworkPolicy may block the agent's port)"},
		{name: "client agent panicked", setup: func(f *fakecluster.Cluster, o *PathOptions) {
			f.Script[string(session.RoleClient)] = fakecluster.Then(fakecluster.Events(agent.Event{Type: agent.EventError, Probe: "http", Message: "the http probe failed inside the agent (panic: boom)"}))
		}, want: "the http probe failed inside the agent (panic: boom)"},
		{name: "client ends without result", setup: func(f *fakecluster.Cluster, o *PathOptions) {
			f.Script[string(session.RoleClient)] = fakecluster.Then(fakecluster.Events(agent.Event{Type: agent.EventExit, Message: "hard deadline reached"}))
		}, wantIs: session.ErrEndedWithoutResult},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := fakecluster.New(t, fakecluster.TwoPods()...)
			f.Script[string(session.RoleServer)], f.Script[string(session.RoleClient)] = fakecluster.ThenHold(fakecluster.ServerReady), fakecluster.Then(fakecluster.ClientOK)
			o, out := newTestPathOptions(f)
			tc.setup(f, o)
			err := o.Run(context.Background())
			if err == nil {
				t.Fatalf("want an error; report:\n%s", out)
			}
			if tc.want != "" && !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error:\n  %v\nwant it to contain:\n  %s", err, tc.want)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("error %v is not %v", err, tc.wantIs)
			}
			if strings.Count(err.Error(), "\n") != 0 {
				t.Errorf("error spans lines: %q", err)
			}
			for _, a := range f.Clientset.Actions() {
				if tc.noPatch && (a.GetVerb() == "patch" || a.GetVerb() == "create" && a.GetResource().Resource == "pods") {
					t.Errorf("%s %s/%s happened before the run was refused", a.GetVerb(), a.GetResource().Resource, a.GetSubresource())
				}
			}
			if left := fakecluster.AgentPods(t, f); len(left) != 0 {
				t.Errorf("agent pods left: %v", left)
			}
		})
	}
}

func o0() *PathOptions { return NewPathOptions(nil, fakecluster.GenericStreams()) }

// An app port that refuses connections: the agent-to-agent results are printed, then the run
// fails naming the port.
func TestPathRunAppPortRefused(t *testing.T) {
	f := fakecluster.New(t, fakecluster.TwoPods()...)
	f.Script[string(session.RoleServer)] = fakecluster.ThenHold(fakecluster.ServerReady)
	f.Script[string(session.RoleClient)] = fakecluster.Then(fakecluster.Events(fakecluster.RttResult("icmp", agent.ProbeICMP), fakecluster.RttResult("tcp-rtt", agent.ProbeTCPRTT),
		agent.Event{Type: agent.EventError, Probe: "app-tcp-rtt", Message: "connection refused", Reason: agent.ReasonRefused},
		agent.Event{Type: agent.EventExit}))
	o, out := newTestPathOptions(f)
	o.Port = 8080
	err := o.Run(context.Background())
	want := "nothing accepts connections on shop/web-1 port 8080 (10.0.0.5:8080): the agent-to-agent results above were measured"
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %q", err, want)
	}
	var r report.PathReport
	if jerr := json.Unmarshal([]byte(out.String()), &r); jerr != nil || len(r.Probes) != 2 {
		t.Fatalf("the measured results were not printed (%v):\n%s", jerr, out)
	}
	if len(r.Skipped) != 1 || !strings.Contains(r.Skipped[0], "app-tcp-rtt") {
		t.Errorf("skipped %v", r.Skipped)
	}
}

// An interrupt while the client waits for its job stops the server and the client, and deletes
// the temporary pods.
func TestPathRunInterrupted(t *testing.T) {
	for _, mode := range []string{session.ModeEphemeral, session.ModePod} {
		t.Run(mode, func(t *testing.T) {
			f := fakecluster.New(t, fakecluster.TwoPods()...)
			ctx, cancel := context.WithCancel(context.Background())
			f.Script[string(session.RoleServer)] = fakecluster.ThenHold(fakecluster.ServerReady)
			f.Script[string(session.RoleClient)] = func(c context.Context) io.ReadCloser {
				cancel() // Ctrl-C while the client measures
				return fakecluster.ThenHold(fakecluster.Events(agent.Event{Type: agent.EventProgress, Probe: "icmp"}))(c)
			}
			o, _ := newTestPathOptions(f)
			o.Mode = mode
			err := o.Run(ctx)
			if err == nil || !strings.HasPrefix(err.Error(), "interrupted: every agent of run run1 told to stop") {
				t.Fatalf("error %v, want interrupted", err)
			}
			f.Mu.Lock()
			by := f.ProxiedBy
			f.Mu.Unlock()
			// The client was interrupted before it was handed its job: it is told to stop too.
			if mode == session.ModeEphemeral && (!slices.Contains(by, "server: POST "+agent.PathDone) || !slices.Contains(by, "client: POST "+agent.PathDone)) {
				t.Errorf("the server and the waiting client were not both told to stop: %v", by)
			}
			if left := fakecluster.AgentPods(t, f); len(left) != 0 {
				t.Errorf("agent pods left: %v", left)
			}
		})
	}
}

// A server that cannot be told to stop is reported with what happens to it, not hidden.
func TestPathRunCleanupFailureIsReported(t *testing.T) {
	f := fakecluster.New(t, fakecluster.TwoPods()...)
	f.Script[string(session.RoleServer)], f.Script[string(session.RoleClient)] = fakecluster.ThenHold(fakecluster.ServerReady), fakecluster.Then(fakecluster.ClientOK)
	f.ProxyErr = errors.New("proxy refused")
	o, _ := newTestPathOptions(f)
	err := o.Run(context.Background())
	if !errors.Is(err, session.ErrLeftBehind) || !strings.Contains(err.Error(), "could not be told to stop (proxy refused): it stops by itself within 5s") {
		t.Fatalf("error %v, want the server left running with when it stops", err)
	}
}

// A server whose client already told it to stop refuses the plugin's own stop; once the
// kubelet reports it exited, that is a clean end, not something left behind.
func TestPathRunServerGoneBeforeStop(t *testing.T) {
	f := fakecluster.New(t, fakecluster.TwoPods()...)
	f.Script[string(session.RoleServer)], f.Script[string(session.RoleClient)] = fakecluster.ThenHold(fakecluster.ServerReady), fakecluster.Then(fakecluster.ClientOK)
	f.GoneBeforeDone = true
	o, _ := newTestPathOptions(f)
	if err := o.Run(context.Background()); err != nil {
		t.Fatalf("err %v, want a clean run", err)
	}
}

// Temporary pods of earlier runs that ended are deleted by the next pod-mode run.
func TestPathRunCleansStalePods(t *testing.T) {
	stale := fakecluster.NewPod(func(p *corev1.Pod) {
		p.Name, p.Labels = "netbench-old-server", map[string]string{session.ManagedByLabel: session.ManagedByValue, session.RunIDLabel: "old"}
		p.Status.Phase = corev1.PodSucceeded
	})
	// Another run's client that ended just now: that run may still be reading its results.
	justEnded := fakecluster.NewPod(func(p *corev1.Pod) {
		p.Name, p.Labels = "netbench-beside-client", map[string]string{session.ManagedByLabel: session.ManagedByValue, session.RunIDLabel: "beside"}
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "agent", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.Now()}}}}
	})
	f := fakecluster.New(t, append(fakecluster.TwoPods(), stale, justEnded)...)
	f.Script[string(session.RoleServer)], f.Script[string(session.RoleClient)] = fakecluster.ThenHold(fakecluster.ServerReady), fakecluster.Then(fakecluster.ClientOK)
	o, out := newTestPathOptions(f)
	o.Mode = session.ModePod
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if left := fakecluster.AgentPods(t, f); !slices.Equal(left, []string{"netbench-beside-client"}) {
		t.Errorf("agent pods left: %v, want only the one that ended just now", left)
	}
	if !strings.Contains(out.String(), "deleted agent pod shop/netbench-old-server left by an earlier run (Succeeded") {
		t.Errorf("the report does not say the stale pod was deleted:\n%s", out)
	}
}

// Every temporary agent pod — path's in --mode pod and the ladder's clients — runs as uid and
// gid 65532, non-root, without privilege escalation or any capability, with the runtime's
// seccomp profile and a read-only root filesystem, and mounts no service-account token.
func TestTemporaryAgentPodsAreLockedDown(t *testing.T) {
	t.Run("path --mode pod", func(t *testing.T) {
		f := fakecluster.New(t, fakecluster.TwoPods()...)
		f.Script[string(session.RoleServer)], f.Script[string(session.RoleClient)] = fakecluster.ThenHold(fakecluster.ServerReady), fakecluster.Then(fakecluster.ClientOK)
		var pods []*corev1.Pod
		f.OnCreate = func(p *corev1.Pod) { pods = append(pods, p.DeepCopy()) }
		o, _ := newTestPathOptions(f)
		o.Mode = session.ModePod
		if err := o.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		cmdtest.LockedDown(t, pods)
	})
}

// Agents trust the API server's addresses (the default/kubernetes Service's endpoints) from the
// Start: its pod proxy carries the plugin's requests, which no number of strangers may keep out.
func TestAgentsTrustTheAPIServer(t *testing.T) {
	apiServer := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "kubernetes",
		Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes"}}, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.77.0.1", "10.77.0.2"}}}}
	f := fakecluster.New(t, fakecluster.TwoPods()...)
	if err := f.Clientset.Tracker().Add(apiServer); err != nil {
		t.Fatal(err)
	}
	f.Script[string(session.RoleServer)], f.Script[string(session.RoleClient)] = fakecluster.ThenHold(fakecluster.ServerReady), fakecluster.Then(fakecluster.ClientOK)
	o, _ := newTestPathOptions(f)
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web-1", "client-1"} {
		p, err := f.Clientset.CoreV1().Pods("shop").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, ec := range p.Spec.EphemeralContainers {
			if args := strings.Join(ec.Args, " "); !strings.HasSuffix(args, " --trust 10.77.0.1,10.77.0.2") {
				t.Errorf("%s's args %q: want the API server's addresses trusted", ec.Name, args)
			}
		}
	}
}
