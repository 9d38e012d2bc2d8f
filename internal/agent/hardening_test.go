package agent

import (
	"encoding/json"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// rssKB reads a process's resident set size.
func rssKB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.Atoi(f[1])
			return kb
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// 2000 connections without the token, HTTP requests without it and gRPC prefaces that stall
// ("PRI " and nothing else): the agent's memory stays bounded, it closes what it does not
// serve, and it exits within 5 s of its deadline whatever the peers hold.
func TestAgentServerBoundedAgainstUnauthenticatedPeers(t *testing.T) {
	const deadline = 6 * time.Second
	start := time.Now()
	s := startServer(t, "", "tok-hard", deadline)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	base := rssKB(t, s.cmd.Process.Pid)
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for i := 0; i < 2000; i++ {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			continue // refused or reset by the caps: that is the point
		}
		switch i % 4 {
		case 0:
			_, _ = c.Write([]byte("PRI ")) // a gRPC preface that never completes
		case 1:
			_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\n\r\n")) // no token
		}
		conns = append(conns, c)
	}
	peak := rssKB(t, s.cmd.Process.Pid)
	time.Sleep(2500 * time.Millisecond) // past the handshake window
	after := rssKB(t, s.cmd.Process.Pid)
	t.Logf("agent RSS: %d KB idle, %d KB with 2000 unauthenticated connections, %d KB after the handshake window", base, peak, after)
	if peak > 64<<10 {
		t.Errorf("agent RSS %d KB under the flood, want under 64 MB", peak)
	}
	open := 0
	for _, c := range conns {
		_ = c.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
		if _, err := c.Read(make([]byte, 512)); err != nil && isTimeout(err) {
			open++
		}
	}
	if open > 0 {
		t.Errorf("%d unauthenticated connections still held open after the handshake window", open)
	}
	// A client with the token is still served.
	req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
	req.Header.Set(TokenHeader, "tok-hard")
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("a client with the token was not served: %v %v", resp, err)
	}
	s.waitExit(t, deadline+5*time.Second-time.Since(start))
	if el := time.Since(start); el > deadline+5*time.Second {
		t.Errorf("exited %s after start, more than 5 s past its %s deadline", el, deadline)
	}
}

func isTimeout(err error) bool {
	ne, ok := err.(net.Error)
	return ok && ne.Timeout()
}

// A server whose lease is never renewed ends soon, saying why.
func TestAgentServerLeaseExpires(t *testing.T) {
	start := time.Now()
	c := agentCmd(t, "", "serve", "--token", "tok-lease", "--deadline", "2m", "--lease", "1s")
	out, err := c.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	var ev Event
	_ = json.Unmarshal([]byte(lines[len(lines)-1]), &ev)
	if ev.Type != EventExit || !strings.HasPrefix(ev.Message, "lease expired") {
		t.Errorf("last event %+v, want exit: lease expired", ev)
	}
	// Said before the shutdown too, as an error event the plugin's follower records at once.
	var said Event
	if len(lines) >= 2 {
		_ = json.Unmarshal([]byte(lines[len(lines)-2]), &said)
	}
	if said.Type != EventError || !strings.HasPrefix(said.Message, "lease expired") {
		t.Errorf("event before the exit %+v, want error: lease expired", said)
	}
	if el := time.Since(start); el > 5*time.Second {
		t.Errorf("exited after %s with a 1 s lease", el)
	}
}

// An agent that starts after its not-after time exits at once.
func TestAgentStartedTooLateExits(t *testing.T) {
	past := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	for _, args := range [][]string{
		{"serve", "--token", "t", "--not-after", past},
		{"run", "--not-after", past, "--job", `{"apiVersion":"` + APIVersion + `","probes":[{"kind":"dns","names":["a"]}]}`},
	} {
		out, err := agentCmd(t, "", args...).Output()
		if err == nil || !strings.Contains(string(out), ErrTooLate.Error()) {
			t.Errorf("%s: %v %s; want an error event saying it started too late", args[0], err, out)
		}
	}
}

// SIGKILL of whoever renews the lease: the server's lease runs out, and a client measuring
// against it for 30 s stops within seconds instead of sending until its end.
func TestAgentClientStopsWhenServerGone(t *testing.T) {
	c := agentCmd(t, "", "serve", "--token", "tok-gone", "--deadline", "2m", "--lease", "2s")
	out, _ := c.StdoutPipe()
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Process.Kill(); _ = c.Wait() }()
	var ready Event
	if err := json.NewDecoder(out).Decode(&ready); err != nil || ready.Port == 0 {
		t.Fatalf("no ready event: %v", err)
	}
	job := Job{APIVersion: APIVersion, Host: "127.0.0.1", Port: ready.Port, Token: "tok-gone", Done: true,
		Probes: []ProbeSpec{{Kind: ProbeTCP, Streams: 1, DurationSeconds: 30}}}
	start := time.Now()
	events, _ := runJob(t, "", job, 0)
	el := time.Since(start)
	if el > 10*time.Second {
		t.Errorf("the client ran %s after its server's lease ran out; want under 10 s", el)
	}
	last := events[len(events)-1]
	if last.Type != EventError {
		t.Errorf("last event %+v, want an error", last)
	}
	t.Logf("client stopped after %s: %s", el.Round(100*time.Millisecond), last.Message)
}
