package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// serveInProcess starts a --jobs server on loopback and returns its port.
func serveInProcess(t *testing.T, token string) int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Serve(ctx, ServeOptions{Listen: "127.0.0.1:0", Token: token, NotAfter: time.Now().Add(time.Minute), Jobs: true}, NewEmitter(pw))
		pw.Close()
	}()
	t.Cleanup(func() { cancel(); <-done })
	sc := bufio.NewScanner(pr)
	if !sc.Scan() {
		t.Fatal("no ready event")
	}
	ev, err := DecodeEvent(sc.Bytes())
	if err != nil || ev.Type != EventReady {
		t.Fatalf("first event %s: %v", sc.Text(), err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	return ev.Port
}

func postMeshJob(t *testing.T, port int, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", fmt.Sprintf("http://127.0.0.1:%d%s", port, PathJob), strings.NewReader(body))
	req.Header.Set(TokenHeader, token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(out)
}

// A --jobs server measures a peer of the same run on request and answers with the events; the
// job cannot stop the peer, a second job waits its turn (409), and strangers get 401.
func TestMeshJobMeasuresAPeer(t *testing.T) {
	a, b := serveInProcess(t, "run-token"), serveInProcess(t, "run-token")
	job, _ := json.Marshal(Job{APIVersion: APIVersion, Host: "127.0.0.1", Port: b, Done: true,
		Probes: []ProbeSpec{{Kind: ProbeTCPRTT, Count: 20, IntervalMillis: 5}}})

	slow, _ := json.Marshal(Job{APIVersion: APIVersion, Host: "127.0.0.1", Port: b, Probes: []ProbeSpec{{Kind: ProbeTCPRTT, Count: 40, IntervalMillis: 25}}})
	busy := make(chan int, 1)
	go func() { code, _ := postMeshJob(t, a, "run-token", string(slow)); busy <- code }()
	time.Sleep(200 * time.Millisecond)
	if code, body := postMeshJob(t, a, "run-token", string(job)); code != http.StatusConflict {
		t.Errorf("a second job while one runs: %d %s, want 409", code, body)
	}
	if code := <-busy; code != http.StatusOK {
		t.Fatalf("first job: %d", code)
	}

	code, body := postMeshJob(t, a, "run-token", string(job))
	if code != http.StatusOK {
		t.Fatalf("job: %d %s", code, body)
	}
	var res *ProbeResult
	for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
		ev, err := DecodeEvent([]byte(line))
		if err != nil {
			t.Fatalf("answer line %q: %v", line, err)
		}
		if ev.Type == EventResult {
			res = ev.Result
		}
	}
	if res == nil || res.RTT == nil || res.RTT.Received != 20 {
		t.Fatalf("no tcp-rtt result of 20 samples in %s", body)
	}
	if code, _ := postMeshJob(t, b, "run-token", string(job)); code != http.StatusOK {
		t.Errorf("the peer stopped after a job that asked it to (%d): a job must never stop its server", code)
	}
	if code, _ := postMeshJob(t, a, "another-token", string(job)); code != http.StatusUnauthorized {
		t.Errorf("a stranger's job: %d, want 401", code)
	}
	if code, body := postMeshJob(t, a, "run-token", `{"apiVersion":"x"}`); code != http.StatusBadRequest {
		t.Errorf("a bad job: %d %s, want 400", code, body)
	}
}
