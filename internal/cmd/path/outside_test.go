package path

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// tokenFile writes tok to a file of mode mode and returns its name.
func tokenFile(t *testing.T, tok string, mode os.FileMode) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "run.token")
	if err := os.WriteFile(f, []byte(tok+"\n"), mode); err != nil {
		t.Fatal(err)
	}
	return f
}

// DST agent://HOST:PORT: one agent, in SRC's pod, whose job is the probes against HOST:PORT,
// handed over with the outside agent's token as the run's; nothing is left.
func TestOutsideAgentRun(t *testing.T) {
	tok := agent.NewToken()
	f := fakecluster.New(t, fakecluster.TwoPods()...)
	f.Script[string(session.RoleClient)] = fakecluster.Then(fakecluster.Events(fakecluster.RttResult("icmp", agent.ProbeICMP),
		fakecluster.RttResult("tcp-rtt", agent.ProbeTCPRTT), agent.Event{Type: agent.EventExit, Message: "job finished"}))
	o, out := newTestPathOptions(f)
	o.DstArg, o.TokenFile = "agent://[2001:db8::10]:7443", tokenFile(t, tok, 0o600)
	var job agent.Job
	var runToken string
	configure := o.ConfigureSession
	o.ConfigureSession = func(s *session.Session) {
		configure(s)
		proxy := s.Proxy
		s.Proxy = func(ctx context.Context, a *session.Agent, method, path string, body []byte) error {
			if path == agent.PathJob {
				_ = json.Unmarshal(body, &job)
				runToken = s.Token
			}
			return proxy(ctx, a, method, path, body)
		}
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if job.Host != "2001:db8::10" || job.Port != 7443 || len(job.Probes) != 2 || runToken != tok || job.Token != "" {
		t.Errorf("job %+v handed over with token %q: want the probes against [2001:db8::10]:7443, the file's token in the request only", job, runToken)
	}
	var r report.PathReport
	if err := json.Unmarshal([]byte(out.String()), &r); err != nil {
		t.Fatal(err)
	}
	if r.Destination.External != "agent://[2001:db8::10]:7443" || r.Path.Class != v1alpha1.Egress || len(r.Probes) != 2 || strings.Contains(out.String(), tok) {
		t.Errorf("destination %+v, path %+v, %d probes: want the outside agent, egress, two results, and the token nowhere", r.Destination, r.Path, len(r.Probes))
	}
	if left := fakecluster.AgentPods(t, f); len(left) != 0 {
		t.Errorf("agent pods left: %v", left)
	}
}

// DST agent://… and --token-file go together, with the flags of neither a workload nor a URL.
func TestOutsideAgentRefused(t *testing.T) {
	good, loose := tokenFile(t, agent.NewToken(), 0o600), tokenFile(t, agent.NewToken(), 0o644)
	short, notHex := tokenFile(t, "abc", 0o600), tokenFile(t, strings.Repeat("z", 40), 0o600)
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		change  func(*PathOptions)
		wantErr string
	}{
		{"no token file", func(o *PathOptions) { o.DstArg = "agent://vm.example:7443" }, "--token-file is required with DST agent://vm.example:7443"},
		{"token file for a workload", func(o *PathOptions) { o.TokenFile = good }, "--token-file is for an agent outside the cluster"},
		{"token file for a URL", func(o *PathOptions) { o.DstArg, o.TokenFile = "https://a.example.com/", good }, "--token-file is for an agent outside the cluster"},
		{"no port", func(o *PathOptions) { o.DstArg, o.TokenFile = "agent://vm.example", good }, `DST "agent://vm.example": port "", want 1-65535`},
		{"a path", func(o *PathOptions) { o.DstArg, o.TokenFile = "agent://vm.example:7443/x", good }, "a host and a port only"},
		{"credentials", func(o *PathOptions) { o.DstArg, o.TokenFile = "agent://u:hunter2@vm.example:7443", good }, "a host and a port only"},
		{"credentials unparsable", func(o *PathOptions) { o.DstArg, o.TokenFile = "agent://u:hunter2@vm.example:x", good }, "not a URL"},
		{"--port", func(o *PathOptions) { o.DstArg, o.TokenFile, o.Port = "agent://vm.example:7443", good, 80 }, "are for a workload DST"},
		{"--requests", func(o *PathOptions) { o.DstArg, o.TokenFile, o.Requests = "agent://vm.example:7443", good, 50 }, "are for a destination with no agent on its far side"},
		{"loose mode", func(o *PathOptions) { o.DstArg, o.TokenFile = "agent://vm.example:7443", loose }, "mode 0644 lets others read or change it"},
		{"short token", func(o *PathOptions) { o.DstArg, o.TokenFile = "agent://vm.example:7443", short }, "a token of 3 characters, want 32 hex digits at least"},
		{"a device", func(o *PathOptions) { o.DstArg, o.TokenFile = "agent://vm.example:7443", "/dev/zero" }, "not a regular file"},
		{"a FIFO", func(o *PathOptions) { o.DstArg, o.TokenFile = "agent://vm.example:7443", fifo }, "not a regular file"},
		{"not hex", func(o *PathOptions) { o.DstArg, o.TokenFile = "agent://vm.example:7443", notHex }, "want 32 hex digits at least"},
		{"--allow-policy", func(o *PathOptions) { o.DstArg, o.TokenFile, o.AllowPolicy = "agent://vm.example:7443", good, true }, "--allow-policy and --price-per-gb are for a workload DST"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := NewPathOptions(nil, genericiooptions.NewTestIOStreamsDiscard())
			o.DstArg = "deploy/backend"
			tc.change(o)
			if err := o.Validate(); err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "\n") || strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("error %v, want one line with %q", err, tc.wantErr)
			}
		})
	}
}
