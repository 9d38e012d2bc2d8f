package agent

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// awaitInBackground starts AwaitJob on loopback and returns its port and result channel.
func awaitInBackground(t *testing.T, digest string, within time.Duration) (int, <-chan Job, <-chan error) {
	t.Helper()
	var out bytes.Buffer
	pr, pw := io.Pipe()
	em := NewEmitter(pw)
	jobs, errs := make(chan Job, 1), make(chan error, 1)
	go func() {
		job, _, err := AwaitJob(context.Background(), "127.0.0.1:0", digest, within, em)
		jobs <- job
		errs <- err
		pw.Close()
	}()
	line, err := readLine(pr)
	if err != nil {
		t.Fatalf("no ready event: %v (%s)", err, out.String())
	}
	ev, err := DecodeEvent(line)
	if err != nil || ev.Type != EventReady || ev.Port == 0 {
		t.Fatalf("first event %s: %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, pr) }()
	return ev.Port, jobs, errs
}

func readLine(r io.Reader) ([]byte, error) {
	var b []byte
	one := make([]byte, 1)
	for {
		if _, err := r.Read(one); err != nil {
			return b, err
		}
		if one[0] == '\n' {
			return b, nil
		}
		b = append(b, one[0])
	}
}

func postJob(port int, token, body string) (int, error) {
	req, _ := http.NewRequest("POST", "http://127.0.0.1:"+strconv.Itoa(port)+PathJob, strings.NewReader(body))
	req.Header.Set(TokenHeader, token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Only the holder of the token whose digest the agent was given can hand it a job; the job
// gets that token; bad jobs are refused and the agent keeps waiting.
func TestAwaitJobHandover(t *testing.T) {
	const token = "tok-handover"
	port, jobs, errs := awaitInBackground(t, TokenDigest(token), 10*time.Second)
	good := `{"apiVersion":"` + APIVersion + `","host":"10.0.0.5","port":4000,"probes":[{"kind":"tcp-rtt","count":3}]}`
	for _, tc := range []struct {
		name, token, body string
		want              int
	}{
		{"no token", "", good, http.StatusUnauthorized},
		{"wrong token", "tok-other", good, http.StatusUnauthorized},
		{"the digest itself as token", TokenDigest(token), good, http.StatusUnauthorized},
		{"unknown field", token, `{"apiVersion":"` + APIVersion + `","cmd":"rm"}`, http.StatusBadRequest},
		{"over 1 MiB", token, `{"apiVersion":"` + strings.Repeat("x", maxJobBytes) + `"}`, http.StatusBadRequest},
		{"invalid job", token, `{"apiVersion":"` + APIVersion + `","probes":[{"kind":"nope"}]}`, http.StatusBadRequest},
		{"the job", token, good, http.StatusNoContent},
	} {
		code, err := postJob(port, tc.token, tc.body)
		if err != nil || code != tc.want {
			t.Errorf("%s: %d %v, want %d", tc.name, code, err, tc.want)
		}
	}
	job, err := <-jobs, <-errs
	if err != nil || job.Token != token || job.Host != "10.0.0.5" || len(job.Probes) != 1 {
		t.Fatalf("job %+v, %v", job, err)
	}
	if _, err := net.DialTimeout("tcp", "127.0.0.1:"+strconv.Itoa(port), time.Second); err == nil {
		t.Error("still listening after the hand-over")
	}
}

// A runner nobody hands a job to exits after its window.
func TestAwaitJobGivesUp(t *testing.T) {
	_, _, errs := awaitInBackground(t, TokenDigest("t"), 300*time.Millisecond)
	if err := <-errs; !errors.Is(err, ErrNoJob) {
		t.Fatalf("err %v, want ErrNoJob", err)
	}
}

// Idle connections from peers without the token cannot hold the hand-over: at most a few are
// served at once, each for seconds, and the plugin's post, retried, gets through within seconds.
func TestAwaitJobBoundedAgainstIdlePeers(t *testing.T) {
	const token = "tok-idle"
	port, jobs, errs := awaitInBackground(t, TokenDigest(token), 20*time.Second)
	var conns []net.Conn
	for i := 0; i < 200; i++ {
		c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			t.Fatal(err)
		}
		conns = append(conns, c)
	}
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	// The plugin retries every half second, as handOver does.
	start := time.Now()
	var code int
	var err error
	for time.Since(start) < 10*time.Second {
		if code, err = postJob(port, token, `{"apiVersion":"`+APIVersion+`","probes":[{"kind":"dns","names":["a.example"]}]}`); err == nil {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil || code != http.StatusNoContent {
		t.Fatalf("hand-over behind 200 idle peers: %d %v", code, err)
	}
	t.Logf("hand-over behind 200 idle peers took %v", time.Since(start).Round(time.Millisecond))
	if _, err := <-jobs, <-errs; err != nil {
		t.Fatal(err)
	}
}

// An interrupted run tells a runner still awaiting its job to stop; only the token holder can.
func TestAwaitJobToldToStop(t *testing.T) {
	const token = "tok-stop"
	port, _, errs := awaitInBackground(t, TokenDigest(token), 20*time.Second)
	post := func(tok string) int {
		req, _ := http.NewRequest("POST", "http://127.0.0.1:"+strconv.Itoa(port)+PathDone, nil)
		req.Header.Set(TokenHeader, tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := post("tok-other"); code != http.StatusUnauthorized {
		t.Errorf("stop with a wrong token: %d", code)
	}
	start := time.Now()
	if code := post(token); code != http.StatusNoContent {
		t.Errorf("stop: %d", code)
	}
	if err := <-errs; !errors.Is(err, ErrStoppedBeforeJob) || time.Since(start) > time.Second {
		t.Fatalf("err %v after %v, want ErrStoppedBeforeJob at once", err, time.Since(start))
	}
}
