package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Served in this process with a lease nobody renews, the server closes its port when the lease
// expires and serve does not return (the process would idle) until its context ends.
func TestServeIdlesAfterLeaseLoss(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	returned := make(chan error, 1)
	go func() {
		o := ServeOptions{Listen: "127.0.0.1:0", Token: "run-token", NotAfter: time.Now().Add(time.Minute), Lease: 300 * time.Millisecond, Jobs: true}
		returned <- serve(ctx, o, true, NewEmitter(pw))
		pw.Close()
	}()
	events := readEvents(pr)
	ready := <-events
	if ready.Type != EventReady {
		t.Fatalf("first event %+v, want ready", ready)
	}
	closed := waitRefused(t, ready.Port, 5*time.Second)
	t.Logf("port closed %s after ready (lease 300ms)", closed.Round(10*time.Millisecond))
	select {
	case err := <-returned:
		t.Fatalf("serve returned (%v) after its lease expired: a DaemonSet would start it again", err)
	case <-time.After(time.Second):
	}
	cancel()
	select {
	case err := <-returned:
		if err != nil {
			t.Errorf("serve after its context ended: %v", err)
		}
	case <-time.After(3 * time.Second):
		t.Fatal("serve still idling 3 s after its context ended")
	}
	waitIdleEvent(t, events, time.Second)
}

// An agent started with --idle-when-done whose run is over — its lease expired, its not-after
// time passed while it served, or it started after it (a restart) — holds no port, stays alive
// using next to no CPU, and exits 0 on SIGTERM. Without the flag it exits, as before.
func TestAgentIdlesWhenDone(t *testing.T) {
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	tests := []struct {
		name      string
		args      []string
		wantReady bool
		wantExit  int // -1: idles until SIGTERM
	}{
		{"lease expired", []string{"--lease", "300ms", "--deadline", "1m", "--idle-when-done"}, true, -1},
		{"not-after passed while serving", []string{"--deadline", "1s", "--idle-when-done"}, true, -1},
		{"restarted after its not-after time", []string{"--not-after", past, "--idle-when-done"}, false, -1},
		{"without --idle-when-done, lease expired", []string{"--lease", "300ms", "--deadline", "1m"}, true, 0},
		{"without --idle-when-done, started too late", []string{"--not-after", past}, false, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := startAgent(t, append([]string{"serve", "--listen", "127.0.0.1:0", "--token", "run-token", "--jobs"}, tc.args...)...)
			if tc.wantReady {
				ready := <-a.events
				if ready.Type != EventReady {
					t.Fatalf("first event %+v, want ready", ready)
				}
				closed := waitRefused(t, ready.Port, 5*time.Second)
				t.Logf("port closed %s after ready", closed.Round(10*time.Millisecond))
			}
			if tc.wantExit >= 0 {
				if code := a.exitCode(t, 5*time.Second); code != tc.wantExit {
					t.Fatalf("exit code %d, want %d", code, tc.wantExit)
				}
				return
			}
			waitIdleEvent(t, a.events, 5*time.Second)
			a.idles(t, time.Second)
			_ = a.cmd.Process.Signal(syscall.SIGTERM)
			if code := a.exitCode(t, 3*time.Second); code != 0 {
				t.Errorf("exit code %d after SIGTERM, want 0", code)
			}
		})
	}
}

type agentProc struct {
	cmd    *exec.Cmd
	events <-chan Event
	exited chan struct{}
}

// startAgent starts the agent with args; it is killed when the test ends.
func startAgent(t *testing.T, args ...string) *agentProc {
	t.Helper()
	c := agentCmd(t, "", args...)
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	a := &agentProc{cmd: c, events: readEvents(out), exited: make(chan struct{})}
	go func() { _ = c.Wait(); close(a.exited) }()
	t.Cleanup(func() {
		_ = c.Process.Kill()
		<-a.exited
	})
	return a
}

// idles fails unless the agent is still running after d, and using next to no CPU meanwhile.
func (a *agentProc) idles(t *testing.T, d time.Duration) {
	t.Helper()
	before := processCPU(t, a.cmd.Process.Pid)
	select {
	case <-a.exited:
		t.Fatalf("the agent exited (%v): a DaemonSet would start it again", a.cmd.ProcessState)
	case <-time.After(d):
	}
	used := processCPU(t, a.cmd.Process.Pid) - before
	t.Logf("idle for %s: %s of CPU, %s", d, used, rss(a.cmd.Process.Pid))
	if used > 50*time.Millisecond {
		t.Errorf("the idle agent used %s of CPU in %s", used, d)
	}
}

func (a *agentProc) exitCode(t *testing.T, within time.Duration) int {
	t.Helper()
	select {
	case <-a.exited:
		return a.cmd.ProcessState.ExitCode()
	case <-time.After(within):
		t.Fatalf("the agent did not exit within %s", within)
	}
	return 0
}

// readEvents decodes the JSON-lines events of r onto a channel, closed at the end.
func readEvents(r io.Reader) <-chan Event {
	ch := make(chan Event, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			var ev Event
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				ch <- ev
			}
		}
	}()
	return ch
}

// waitIdleEvent waits for the event that says the agent idles.
func waitIdleEvent(t *testing.T, events <-chan Event, within time.Duration) {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				t.Fatal("the agent's output ended without saying it idles")
			}
			if ev.Type == EventProgress && strings.Contains(ev.Message, "idle until stopped") {
				return
			}
		case <-timeout:
			t.Fatalf("the agent did not say it idles within %s", within)
		}
	}
}

// waitRefused waits until connections to the port on loopback are refused, and says how long
// that took.
func waitRefused(t *testing.T, port int, within time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < within {
		c, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), time.Second)
		if errors.Is(err, syscall.ECONNREFUSED) {
			return time.Since(start)
		}
		if c != nil {
			c.Close()
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("port %d still accepts connections after %s", port, within)
	return 0
}

// rss is the process's resident memory, as /proc says it.
func rss(pid int) string {
	b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			return strings.Join(strings.Fields(l), " ")
		}
	}
	return "VmRSS unknown"
}
