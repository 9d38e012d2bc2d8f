package agent

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// serveInProcess starts a --jobs server on listen and returns its port.
func serveInProcess(t *testing.T, token, listen string) int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	pr, pw := io.Pipe()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = Serve(ctx, ServeOptions{Listen: listen, Token: token, NotAfter: time.Now().Add(time.Minute), Jobs: true}, NewEmitter(pw))
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
	return postMeshJobTo(t, "127.0.0.1", port, token, body)
}

func postMeshJobTo(t *testing.T, host string, port int, token, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("POST", fmt.Sprintf("http://%s%s", net.JoinHostPort(host, strconv.Itoa(port)), PathJob), strings.NewReader(body))
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
// job cannot stop the peer, a second job waits its turn (409), and strangers get 401. The two
// agents listen on one port, as a run's agents do, on two loopback addresses.
func TestMeshJobMeasuresAPeer(t *testing.T) {
	a := serveInProcess(t, "run-token", "127.0.0.1:0")
	b := serveInProcess(t, "run-token", fmt.Sprintf("127.0.0.2:%d", a))
	job, _ := json.Marshal(Job{APIVersion: APIVersion, Host: "127.0.0.2", Port: b, Done: true,
		Probes: []ProbeSpec{{Kind: ProbeTCPRTT, Count: 20, IntervalMillis: 5}}})

	slow, _ := json.Marshal(Job{APIVersion: APIVersion, Host: "127.0.0.2", Port: b, Probes: []ProbeSpec{{Kind: ProbeTCPRTT, Count: 40, IntervalMillis: 25}}})
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
	back, _ := json.Marshal(Job{APIVersion: APIVersion, Host: "127.0.0.1", Port: a, Probes: []ProbeSpec{{Kind: ProbeTCPRTT, Count: 5, IntervalMillis: 5}}})
	if code, _ := postMeshJobTo(t, "127.0.0.2", b, "run-token", string(back)); code != http.StatusOK {
		t.Errorf("the peer stopped after a job that asked it to (%d): a job must never stop its server", code)
	}
	if code, _ := postMeshJob(t, a, "another-token", string(job)); code != http.StatusUnauthorized {
		t.Errorf("a stranger's job: %d, want 401", code)
	}
	if code, body := postMeshJob(t, a, "run-token", `{"apiVersion":"x"}`); code != http.StatusBadRequest {
		t.Errorf("a bad job: %d %s, want 400", code, body)
	}
}

// A mesh job aims only at a peer: an IP address on the agents' own port, with the matrix's
// probes against it (an IPv6 twin at the peer's IPv6 address) and nothing else; every other job
// is refused before it runs.
func TestMeshJobRefusesNonPeers(t *testing.T) {
	local := &net.TCPAddr{IP: net.ParseIP("10.0.0.1"), Port: 24930}
	peer := func(mod func(*Job)) Job {
		j := Job{APIVersion: APIVersion, Host: "10.0.0.2", Port: 24930, Probes: []ProbeSpec{{Kind: ProbeICMP, Count: 5}, {Kind: ProbeTCPRTT, Count: 5}, {Kind: ProbeTCP, DurationSeconds: 1}}}
		if mod != nil {
			mod(&j)
		}
		return j
	}
	tests := []struct {
		name  string
		job   Job
		local net.Addr
		want  string // "" when accepted
	}{
		{"a peer's pod IP on the agents' port", peer(nil), local, ""},
		{"an IPv6 peer", peer(func(j *Job) { j.Host = "fd00::2" }), local, ""},
		{"another port", peer(func(j *Job) { j.Port = 443 }), local, "port 443 is not the agents' port 24930"},
		{"a name, not an address", peer(func(j *Job) { j.Host = "api.example.com" }), local, `host "api.example.com" is not an IP address`},
		{"a probe of an address of its own", peer(func(j *Job) { j.Probes[1].Address = "10.9.9.9:80" }), local, "probe tcp-rtt is not one of"},
		{"an HTTP load", peer(func(j *Job) {
			j.Probes = []ProbeSpec{{Kind: ProbeHTTPMax, URL: "http://10.9.9.9/", DurationSeconds: 30}}
		}), local, "probe http-max is not one of"},
		{"a DNS probe", peer(func(j *Job) { j.Probes = []ProbeSpec{{Kind: ProbeDNS, Names: []string{"x"}}} }), local, "probe dns is not one of"},
		{"no local address", peer(nil), nil, "cannot tell its own port"},
		{"an IPv6 twin at the peer's IPv6 address", peer(func(j *Job) {
			j.Probes = append(j.Probes, ProbeSpec{Kind: ProbeICMP, Name: "icmp-v6", Count: 5, Host: "fd00::2"})
		}), local, ""},
		{"an IPv6 twin at a name", peer(func(j *Job) {
			j.Probes = append(j.Probes, ProbeSpec{Kind: ProbeTCP, Name: "tcp-v6", DurationSeconds: 1, Host: "api.example.com"})
		}), local, `probe tcp-v6 aims at host "api.example.com"`},
		{"an IPv6 twin at an IPv4 address", peer(func(j *Job) {
			j.Probes = append(j.Probes, ProbeSpec{Kind: ProbeTCP, Name: "tcp-v6", DurationSeconds: 1, Host: "10.9.9.9"})
		}), local, `probe tcp-v6 aims at host "10.9.9.9"`},
		{"a host of its own without being a twin", peer(func(j *Job) { j.Probes[2].Host = "fd00::9" }), local, `probe tcp aims at host "fd00::9"`},
		{"IPv6 twins at two hosts", peer(func(j *Job) {
			j.Probes = append(j.Probes, ProbeSpec{Kind: ProbeICMP, Name: "icmp-v6", Count: 5, Host: "fd00::2"}, ProbeSpec{Kind: ProbeTCPRTT, Name: "tcp-rtt-v6", Count: 5, Host: "fd00::3"})
		}), local, "probes aim at fd00::2 and fd00::3"},
		{"an IPv6 twin at a multicast address", peer(func(j *Job) {
			j.Probes = append(j.Probes, ProbeSpec{Kind: ProbeICMP, Name: "icmp-v6", Count: 5, Host: "ff02::1"})
		}), local, `probe icmp-v6 aims at host "ff02::1"`},
		{"a broadcast peer", peer(func(j *Job) { j.Host = "255.255.255.255" }), local, "host 255.255.255.255 is not a unicast address"},
		{"a multicast peer", peer(func(j *Job) { j.Host = "224.0.0.1" }), local, "host 224.0.0.1 is not a unicast address"},
		{"the rate probes against the peer", peer(func(j *Job) {
			j.Probes = append(j.Probes, ProbeSpec{Kind: ProbeTCPRR, Connections: 1, DurationSeconds: 2}, ProbeSpec{Kind: ProbeUDPRR, Connections: 1, DurationSeconds: 2},
				ProbeSpec{Kind: ProbeTCPCRR, Connections: 4, Count: MeshCRRCap, DurationSeconds: 2})
		}), local, ""},
		{"a tcp-crr without the cap", peer(func(j *Job) {
			j.Probes = append(j.Probes, ProbeSpec{Kind: ProbeTCPCRR, Connections: 4, DurationSeconds: 2})
		}), local, "probe tcp-crr caps its connections at 0: the matrix's is 1-500"},
		{"a tcp-crr above the cap", peer(func(j *Job) {
			j.Probes = append(j.Probes, ProbeSpec{Kind: ProbeTCPCRR, Connections: 4, Count: MeshCRRCap + 1, DurationSeconds: 2})
		}), local, "probe tcp-crr caps its connections at 501"},
		{"a tcp-crr on 64 clients", peer(func(j *Job) {
			j.Probes = append(j.Probes, ProbeSpec{Kind: ProbeTCPCRR, Connections: 64, Count: 10, DurationSeconds: 2})
		}), local, "probe tcp-crr with 64 clients"},
		{"a tcp-rr on many connections", peer(func(j *Job) {
			j.Probes = append(j.Probes, ProbeSpec{Kind: ProbeTCPRR, Connections: 128, DurationSeconds: 2})
		}), local, "probe tcp-rr with 128 clients"},
		{"a udp-rr of large datagrams", peer(func(j *Job) {
			j.Probes = append(j.Probes, ProbeSpec{Kind: ProbeUDPRR, Size: 8000, DurationSeconds: 2})
		}), local, "probe udp-rr with 0 clients, sizes 8000/0"},
		{"a long tcp-rr", peer(func(j *Job) {
			j.Probes = append(j.Probes, ProbeSpec{Kind: ProbeTCPRR, DurationSeconds: 55})
		}), local, "probe tcp-rr with 0 clients, sizes 0/0, 55s"},
		{"a tcp-crr of an address of its own", peer(func(j *Job) {
			j.Probes = append(j.Probes, ProbeSpec{Kind: ProbeTCPCRR, Connections: 4, DurationSeconds: 2, Address: "10.9.9.9:80"})
		}), local, "probe tcp-crr is not one of"},
		{"two tcp-crr for one family", peer(func(j *Job) {
			crr := ProbeSpec{Kind: ProbeTCPCRR, Connections: 4, Count: MeshCRRCap, DurationSeconds: 2}
			j.Probes = append(j.Probes, crr, crr)
		}), local, "two tcp-crr probes for one family"},
		{"tcp-crr and its IPv6 twin", peer(func(j *Job) {
			crr := ProbeSpec{Kind: ProbeTCPCRR, Connections: 4, Count: MeshCRRCap, DurationSeconds: 2}
			twin := crr
			twin.Name, twin.Host = "tcp-crr-v6", "fd00::2"
			j.Probes = append(j.Probes, crr, twin)
		}), local, ""},
		{"a loaded-rtt load", peer(func(j *Job) {
			j.Probes = append(j.Probes, ProbeSpec{Kind: ProbeLoadedRTT, Streams: 4, DurationSeconds: 5})
		}), local, "probe loaded-rtt is not one of"},
		{"too many probes", peer(func(j *Job) {
			for range 11 {
				j.Probes = append(j.Probes, ProbeSpec{Kind: ProbeICMP, Count: 5})
			}
		}), local, "14 probes, the matrix's are at most 12"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := checkMeshJob(tc.job, tc.local)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrNotAPeer) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v: want ErrNotAPeer saying %q", err, tc.want)
			}
		})
	}
}

// Posted to a serving agent, a job aimed at another port is answered 403 and not run.
func TestMeshJobElsewhereForbidden(t *testing.T) {
	a := serveInProcess(t, "run-token", "127.0.0.1:0")
	other, _ := json.Marshal(Job{APIVersion: APIVersion, Host: "127.0.0.1", Port: a + 1, Probes: []ProbeSpec{{Kind: ProbeTCPRTT, Count: 5, IntervalMillis: 5}}})
	if code, body := postMeshJob(t, a, "run-token", string(other)); code != http.StatusForbidden || !strings.Contains(body, ErrNotAPeer.Error()) {
		t.Errorf("a job aimed at another port: %d %s, want 403", code, body)
	}
}

// A mesh job goes on after an IPv6 twin fails (its family alone failed) or a rate probe does
// (the pair's RTT still stands); any other job, as path and ladder run them, ends at its first
// failed agent probe.
func TestMeshJobGoesOnAfterATwin(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close() // nothing listens there: every handshake is refused
	for _, mesh := range []bool{true, false} {
		job := Job{APIVersion: APIVersion, Host: "127.0.0.1", Port: port, mesh: mesh, Probes: []ProbeSpec{
			{Kind: ProbeTCPRTT, Name: "tcp-rtt-v6", Count: 2, Host: "127.0.0.1"},
			{Kind: ProbeTCPRR, Connections: 1, Count: 10, DurationSeconds: 0.2}, // tcp-crr would be skipped, not fail, when the host holds many TIME-WAIT sockets
			{Kind: ProbeTCPRTT, Count: 2},
		}}
		var out strings.Builder
		_ = Run(context.Background(), job, NewEmitter(&out))
		errs := strings.Count(out.String(), `"type":"error"`)
		if want := map[bool]int{true: 3, false: 1}[mesh]; errs != want {
			t.Errorf("mesh %v: %d error events, want %d:\n%s", mesh, errs, want, out.String())
		}
	}
}
