package agent

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-netbench/kubectl-netbench/internal/vethpair"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// The test binary doubles as the agent binary: with this variable set it runs the agent command
// with its arguments, so every test drives real agent processes over real sockets.
const asAgentEnv = "NETBENCH_TEST_AS_AGENT"

func TestMain(m *testing.M) {
	if os.Getenv(asAgentEnv) == "1" {
		cmd := NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
		cmd.SetArgs(os.Args[1:])
		if err := cmd.Execute(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	code := m.Run()
	if sharedSelfDir != "" {
		os.RemoveAll(sharedSelfDir)
	}
	os.Exit(code)
}

var (
	sharedSelfOnce sync.Once
	sharedSelfDir  string
	sharedSelf     string
)

// worldExecutable returns a copy of the test binary that an unprivileged user may execute
// (go test's own build directory is private to root).
func worldExecutable(t *testing.T, self string) string {
	t.Helper()
	sharedSelfOnce.Do(func() {
		dir, err := os.MkdirTemp("", "netbench-agent-test")
		if err != nil {
			return
		}
		sharedSelfDir = dir
		data, err := os.ReadFile(self)
		if err != nil || os.Chmod(dir, 0o755) != nil || os.WriteFile(filepath.Join(dir, "agent.test"), data, 0o755) != nil {
			return
		}
		sharedSelf = filepath.Join(dir, "agent.test")
	})
	if sharedSelf == "" {
		t.Fatal("could not copy the test binary for an unprivileged user")
	}
	return sharedSelf
}

// agentCmd returns a command that runs the agent, inside netns when it is not "".
func agentCmd(t *testing.T, netns string, args ...string) *exec.Cmd {
	return agentCmdAs(t, netns, 0, args...)
}

// agentCmdAs is agentCmd as user uid (inside netns) when uid is not 0.
func agentCmdAs(t *testing.T, netns string, uid int, args ...string) *exec.Cmd {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := exec.Command(self, args...)
	switch {
	case uid != 0:
		c = vethpair.CommandAs(netns, uid, worldExecutable(t, self), args...)
	case netns != "":
		c = vethpair.Command(netns, self, args...)
	}
	c.Env = append(os.Environ(), asAgentEnv+"=1")
	c.Stderr = os.Stderr
	return c
}

type server struct {
	cmd    *exec.Cmd
	port   int
	events chan Event
	exited chan error
}

// startServer starts `agent serve` and waits for its ready event.
func startServer(t *testing.T, netns, token string, deadline time.Duration) *server {
	t.Helper()
	c := agentCmd(t, netns, "serve", "--token", token, "--deadline", deadline.String())
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: c, events: make(chan Event, 16), exited: make(chan error, 1)}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var ev Event
			if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
				t.Errorf("server printed a line that is not an event: %q", sc.Text())
				continue
			}
			s.events <- ev
		}
		close(s.events)
		s.exited <- c.Wait()
	}()
	t.Cleanup(func() {
		if c.ProcessState == nil {
			_ = c.Process.Kill()
		}
	})
	select {
	case ev := <-s.events:
		if ev.Type != EventReady || ev.Port == 0 || ev.APIVersion != APIVersion {
			t.Fatalf("first server event %+v, want ready with a port", ev)
		}
		s.port = ev.Port
	case <-time.After(10 * time.Second):
		t.Fatal("server not ready in 10 s")
	}
	return s
}

// waitExit waits for the server to exit by itself, and returns its last event.
func (s *server) waitExit(t *testing.T, within time.Duration) Event {
	t.Helper()
	var last Event
	timeout := time.After(within)
	for {
		select {
		case ev, ok := <-s.events:
			if !ok {
				select {
				case err := <-s.exited:
					if err != nil {
						t.Errorf("server exit: %v", err)
					}
				case <-timeout:
					t.Fatalf("server did not exit within %s", within)
				}
				return last
			}
			last = ev
		case <-timeout:
			t.Fatalf("server still running after %s", within)
		}
	}
}

// runJob runs `agent run` with the job and returns its events and exit error.
// uid, when not 0, runs the client as that user inside netns.
func runJob(t *testing.T, netns string, job Job, uid int) ([]Event, error) {
	t.Helper()
	data, _ := json.Marshal(job)
	c := agentCmdAs(t, netns, uid, "run", "--job", "-", "--deadline", "2m")
	c.Stdin = strings.NewReader(string(data))
	out, err := c.Output()
	var events []Event
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if line == "" {
			continue
		}
		var ev Event
		if jerr := json.Unmarshal([]byte(line), &ev); jerr != nil {
			t.Fatalf("run printed a line that is not an event: %q", line)
		}
		events = append(events, ev)
	}
	return events, err
}

func results(events []Event) map[string]*ProbeResult {
	m := map[string]*ProbeResult{}
	for _, ev := range events {
		if ev.Type == EventResult {
			m[ev.Probe] = ev.Result
		}
	}
	return m
}

func fullJob(host string, port int, token string) Job {
	return Job{
		APIVersion: APIVersion, Host: host, Port: port, Token: token, Done: true,
		Probes: []ProbeSpec{
			{Kind: ProbeICMP, Count: 10, IntervalMillis: 10},
			{Kind: ProbeTCPRTT, Count: 10, IntervalMillis: 10},
			{Kind: ProbeHTTP, QPS: 200, Connections: 2, DurationSeconds: 0.5},
			{Kind: ProbeHTTPNewConn, QPS: 100, Connections: 2, DurationSeconds: 0.5},
			{Kind: ProbeHTTPMax, Connections: 4, DurationSeconds: 0.5},
			{Kind: ProbeGRPC, QPS: 200, Connections: 2, DurationSeconds: 0.5},
			{Kind: ProbeTCP, Streams: 1, DurationSeconds: 0.5},
			{Kind: ProbeTCP, Name: "tcp-4", Streams: 4, DurationSeconds: 1, ReportIntervalSeconds: 0.25},
			{Kind: ProbeUDP, Count: 200, IntervalMillis: 1, Size: 100},
			{Kind: ProbePMTU},
			{Kind: ProbeTCPRR, Connections: 2, DurationSeconds: 0.3, Size: 100, ResponseSize: 1000},
			{Kind: ProbeTCPCRR, Connections: 2, DurationSeconds: 0.3},
			{Kind: ProbeUDPRR, Connections: 2, DurationSeconds: 0.3, Size: 64},
			// One client alone waits in blocking reads, and the server's answers from the third.
			{Kind: ProbeTCPRR, Name: "tcp-rr-1", Connections: 1, DurationSeconds: 0.3, Size: 100, ResponseSize: 1000},
			{Kind: ProbeUDPRR, Name: "udp-rr-1", Connections: 1, DurationSeconds: 0.3, Size: 64},
			{Kind: ProbeLoadedRTT, Streams: 2, DurationSeconds: 2.5, IntervalMillis: 10},
		},
	}
}

// checkFullJob asserts every probe's result is present and sane.
func checkFullJob(t *testing.T, events []Event, wantICMP bool) {
	t.Helper()
	res := results(events)
	for _, p := range fullJob("h", 1, "t").Probes {
		r := res[p.Label()]
		if r == nil {
			t.Errorf("no result for %s", p.Label())
			continue
		}
		if r.Name != p.Label() || r.Kind != p.Kind {
			t.Errorf("%s: result labelled %s/%s", p.Label(), r.Name, r.Kind)
		}
	}
	if r := res[ProbeICMP]; r != nil {
		switch {
		case wantICMP && (r.RTT == nil || r.RTT.Received != 10 || r.RTT.RTT.P50Micros <= 0):
			t.Errorf("icmp: %+v", r)
		case !wantICMP && (r.Skipped == "" || r.RTT != nil):
			t.Errorf("icmp should be skipped without permission: %+v", r)
		}
	}
	if r := res[ProbeUDP]; r != nil && (r.RTT == nil || r.RTT.Sent != 200 || r.RTT.Received != 200 || r.RTT.LossPercent != 0 ||
		r.RTT.Timestamps != "kernel" || r.RTT.RTT.MinMicros <= 0 || r.RTT.RTT.P99Micros > 1e5 ||
		r.RTT.ServerDwell == nil || r.RTT.ServerDwell.Count != 200 || r.RTT.ServerDwell.P50Micros <= 0) {
		t.Errorf("udp: %+v", r.RTT)
	}
	// Nothing narrower on the way: the interface's MTU crosses at the first try (loopback's
	// 65536 tops out at the largest datagram the server answers).
	if r := res[ProbePMTU]; r != nil && (r.PMTU == nil || r.PMTU.PathMTU != min(r.PMTU.LocalMTU, 9216) || r.PMTU.LocalMTU < 1500 || r.PMTU.Probes != 1) {
		t.Errorf("path-mtu: %+v", r.PMTU)
	}
	for _, k := range []string{ProbeTCPRR, ProbeTCPCRR, ProbeUDPRR, "tcp-rr-1", "udp-rr-1"} {
		if r := res[k]; r != nil && (r.Rate == nil || r.Rate.Transactions < 50 || r.Rate.Errors != 0 || r.Rate.PerSecond <= 0 || r.Rate.Latency.Count != r.Rate.Transactions) {
			t.Errorf("%s through the agent server: %+v", k, r.Rate)
		}
		if r := res[k]; r != nil && r.Rate != nil && r.Rate.ClientWait != v1alpha1.WaitBlockingRead && (r.Rate.ClientWait != v1alpha1.WaitPoller || k == "udp-rr-1" && runtime.GOOS == "linux") {
			t.Errorf("%s: the client waited in %q", k, r.Rate.ClientWait) // the UDP echo never holds a processor
		}
	}
	if r := res[ProbeLoadedRTT]; r != nil && (r.Loaded == nil || r.Loaded.Idle == nil || r.Loaded.Loaded == nil || r.Loaded.Loaded.Received < 50 ||
		r.Loaded.Throughput == nil || r.Loaded.Throughput.BytesReceived == 0 || r.Loaded.RPM <= 0 || !r.Loaded.SampledFrom.Before(r.Loaded.SampledUntil)) {
		t.Errorf("loaded-rtt through the agent server: %+v", r.Loaded)
	}
	if r := res[ProbeTCPRTT]; r != nil && (r.RTT == nil || r.RTT.Received != 10 || r.RTT.RTT.MinMicros <= 0 || r.RTT.RTT.MaxMicros > 1e6) {
		t.Errorf("tcp-rtt: %+v", r.RTT)
	}
	for _, k := range []string{ProbeHTTP, ProbeHTTPNewConn, ProbeHTTPMax} {
		r := res[k]
		if r == nil || r.HTTP == nil {
			continue
		}
		h := r.HTTP
		if h.Errors != 0 || h.Requests < 20 || h.Latency.P50Micros <= 0 || h.Latency.ResolutionMicros != 0 || h.Latency.P50Micros > h.Latency.P99Micros {
			t.Errorf("%s: %+v", k, h)
		}
	}
	if r := res[ProbeHTTPMax]; r != nil && r.HTTP != nil {
		if ratio := r.HTTP.AchievedQPS / r.HTTP.LittleLawQPS; ratio < 0.7 || ratio > 1.3 {
			t.Errorf("closed loop achieved %v qps, Little's law says %v", r.HTTP.AchievedQPS, r.HTTP.LittleLawQPS)
		}
	}
	if r := res[ProbeGRPC]; r != nil && (r.GRPC == nil || r.GRPC.Errors != 0 || r.GRPC.Requests < 50 || r.GRPC.Latency.P50Micros <= 0) {
		t.Errorf("grpc: %+v", r.GRPC)
	}
	for _, k := range []string{ProbeTCP, "tcp-4"} {
		r := res[k]
		if r == nil || r.Throughput == nil {
			continue
		}
		tp := r.Throughput
		if tp.BytesSent == 0 || tp.BytesReceived != tp.BytesSent || tp.BitsPerSecondReceived <= 0 || tp.ServerCPUPercent <= 0 || tp.ClientCPUPercent <= 0 {
			t.Errorf("%s: %+v", k, tp)
		}
		for _, s := range tp.PerStream {
			if s.MSSBytes == 0 || s.MeanRTTMicros <= 0 {
				t.Errorf("%s: stream without TCP_INFO: %+v", k, s)
			}
		}
	}
	if tp := res["tcp-4"]; tp != nil && tp.Throughput != nil && (len(tp.Throughput.PerStream) != 4 || len(tp.Throughput.Intervals) < 3) {
		t.Errorf("tcp-4: %d streams, %d intervals", len(tp.Throughput.PerStream), len(tp.Throughput.Intervals))
	}
	if last := events[len(events)-1]; last.Type != EventExit {
		t.Errorf("last event %+v, want exit", last)
	}
	// Before it tells its server to stop, the client says what both processes cost.
	if fp := events[len(events)-2]; fp.Type != EventFootprint {
		t.Errorf("event before exit %+v, want the footprint", fp)
	} else {
		for _, role := range []string{"client", "server"} {
			f := fp.Footprints[role]
			t.Logf("%s: %.2f CPU s, peak RSS %.1f MiB", role, f.CPUSeconds, float64(f.PeakRSSBytes)/(1<<20))
			if f.CPUSeconds <= 0 || f.PeakRSSBytes < 1<<20 || f.PeakRSSBytes > 1<<30 {
				t.Errorf("%s footprint %+v: want CPU time and a peak RSS of some MiB", role, f)
			}
		}
	}
}

func TestAgentLoopbackEveryProbe(t *testing.T) {
	s := startServer(t, "", "tok-loop", time.Minute)
	events, err := runJob(t, "", fullJob("127.0.0.1", s.port, "tok-loop"), 0)
	if err != nil {
		t.Fatalf("agent run: %v (events %+v)", err, events)
	}
	canICMP := os.Geteuid() == 0 || unprivilegedICMP()
	checkFullJob(t, events, canICMP)
	if ev := s.waitExit(t, 5*time.Second); ev.Message != "client said done" {
		t.Errorf("server exit %+v, want client said done", ev)
	}
}

func unprivilegedICMP() bool {
	c, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		return false
	}
	c.Close()
	b, _ := os.ReadFile("/proc/sys/net/ipv4/ping_group_range")
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return false
	}
	lo, _ := strconv.Atoi(f[0])
	hi, _ := strconv.Atoi(f[1])
	return os.Getegid() >= lo && os.Getegid() <= hi
}

func TestAgentRefusesClientsWithoutToken(t *testing.T) {
	s := startServer(t, "", "right-token", time.Minute)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))

	// HTTP, without and with a wrong token.
	for _, tok := range []string{"", "wrong-token"} {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		if tok != "" {
			req.Header.Set(TokenHeader, tok)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("http with token %q: %s, want 401", tok, resp.Status)
		}
	}
	// Each probe through the runner, with the wrong token.
	for _, p := range []ProbeSpec{
		{Kind: ProbeHTTP, QPS: 50, Connections: 1, DurationSeconds: 0.2},
		{Kind: ProbeGRPC, QPS: 50, Connections: 1, DurationSeconds: 0.2},
		{Kind: ProbeTCP, DurationSeconds: 0.2},
		{Kind: ProbeTCPRR, DurationSeconds: 0.2},
		{Kind: ProbeTCPCRR, DurationSeconds: 0.2},
	} {
		job := Job{APIVersion: APIVersion, Host: "127.0.0.1", Port: s.port, Token: "wrong-token", Probes: []ProbeSpec{p}}
		events, err := runJob(t, "", job, 0)
		if err == nil {
			t.Errorf("%s with a wrong token succeeded: %+v", p.Kind, events)
			continue
		}
		if last := events[len(events)-1]; last.Type != EventError || last.Probe != p.Kind {
			t.Errorf("%s: last event %+v, want an error event", p.Kind, last)
		}
	}
	// UDP datagrams sealed with another token get no answer: the probes come back skipped,
	// never measured.
	for _, p := range []ProbeSpec{{Kind: ProbeUDP, Count: 20, IntervalMillis: 1, Size: 64}, {Kind: ProbePMTU}, {Kind: ProbeUDPRR, DurationSeconds: 0.3}} {
		job := Job{APIVersion: APIVersion, Host: "127.0.0.1", Port: s.port, Token: "wrong-token", Probes: []ProbeSpec{p}}
		events, err := runJob(t, "", job, 0)
		r := results(events)[p.Kind]
		if err != nil || r == nil || r.Skipped == "" || r.RTT != nil || r.PMTU != nil || r.Rate != nil {
			t.Errorf("%s with a wrong token: %v %+v", p.Kind, err, r)
		}
	}
	// Nor may a stranger stop the server.
	resp, err := http.Post("http://"+addr+PathDone, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("done without token: %s", resp.Status)
	}
	select {
	case ev := <-s.events:
		t.Errorf("server emitted %+v after refused clients; want it still serving", ev)
	case <-time.After(200 * time.Millisecond):
	}
}

func TestAgentServerExitsAtDeadlineWithoutClient(t *testing.T) {
	start := time.Now()
	s := startServer(t, "", "tok", 1500*time.Millisecond)
	ev := s.waitExit(t, 6*time.Second)
	if ev.Type != EventExit || ev.Message != "deadline reached" {
		t.Errorf("last event %+v, want exit: deadline reached", ev)
	}
	if el := time.Since(start); el < 1400*time.Millisecond {
		t.Errorf("exited after %s, before its 1.5 s deadline", el)
	}
}

func TestAgentKilledClientLeavesNoServer(t *testing.T) {
	s := startServer(t, "", "tok-kill", 3*time.Second)
	job := Job{APIVersion: APIVersion, Host: "127.0.0.1", Port: s.port, Token: "tok-kill", Done: true,
		Probes: []ProbeSpec{{Kind: ProbeTCP, Streams: 2, DurationSeconds: 60}}}
	data, _ := json.Marshal(job)
	c := agentCmd(t, "", "run", "--job", string(data))
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond)
	_ = c.Process.Kill() // SIGKILL: the client can say nothing to the server
	_ = c.Wait()
	ev := s.waitExit(t, 8*time.Second)
	if ev.Message != "deadline reached" {
		t.Errorf("server exit %+v, want deadline reached", ev)
	}
}

func TestAgentRejectsBadJobs(t *testing.T) {
	tests := []struct {
		name, job, wantErr string
	}{
		{"not json", "{", "decoding the job"},
		{"unknown field", `{"apiVersion":"` + APIVersion + `","probez":[]}`, "unknown field"},
		{"wrong version", `{"apiVersion":"v0","probes":[{"kind":"tcp"}]}`, "this agent speaks"},
		{"no probes", `{"apiVersion":"` + APIVersion + `"}`, "no probes"},
		{"unknown probe", `{"apiVersion":"` + APIVersion + `","host":"h","port":1,"probes":[{"kind":"quic"}]}`, "unknown probe kind"},
		{"no target", `{"apiVersion":"` + APIVersion + `","probes":[{"kind":"http"}]}`, "no agent host"},
		{"rate elsewhere", `{"apiVersion":"` + APIVersion + `","probes":[{"kind":"tcp-crr","address":"10.0.0.1:80"}]}`, "against the agent server only"},
		{"loaded-rtt too short", `{"apiVersion":"` + APIVersion + `","host":"h","port":1,"probes":[{"kind":"loaded-rtt","durationSeconds":1}]}`, "needs 2.5s at least"},
		{"crr clients", `{"apiVersion":"` + APIVersion + `","host":"h","port":1,"probes":[{"kind":"tcp-crr","connections":65}]}`, "65 clients: want 1-64"},
		{"rate too large", `{"apiVersion":"` + APIVersion + `","host":"h","port":1,"probes":[{"kind":"tcp-rr","responseSize":9000}]}`, "want up to 8192 each"},
		{"udp-rr too small", `{"apiVersion":"` + APIVersion + `","host":"h","port":1,"probes":[{"kind":"udp-rr","size":8}]}`, "size 8: want 32-9216"},
		{"response size elsewhere", `{"apiVersion":"` + APIVersion + `","host":"h","port":1,"probes":[{"kind":"http","responseSize":10}]}`, "tcp-rr and tcp-crr probes only"},
		{"egress without port", `{"apiVersion":"` + APIVersion + `","probes":[{"kind":"egress","url":"tcp://db.example"}]}`, "a tcp destination is tcp://HOST:PORT"},
		{"egress with a server", `{"apiVersion":"` + APIVersion + `","host":"h","port":1,"probes":[{"kind":"egress","url":"https://db.example/","host":"10.0.0.1"}]}`, "with no agent server"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := agentCmd(t, "", "run", "--job", tc.job)
			c.Stderr = nil
			out, err := c.Output()
			if err == nil {
				t.Fatal("want a non-zero exit")
			}
			var ev Event
			if jerr := json.Unmarshal(out, &ev); jerr != nil || ev.Type != EventError || !strings.Contains(ev.Message, tc.wantErr) {
				t.Errorf("output %q, want an error event containing %q", out, tc.wantErr)
			}
		})
	}
}

// An egress probe measures a URL with no agent behind it: an HTTP server of this test.
func TestAgentEgressProbe(t *testing.T) {
	var requests atomic.Int64
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { requests.Add(1) }))
	defer s.Close()
	events, err := runJob(t, "", Job{APIVersion: APIVersion, Probes: []ProbeSpec{{Kind: ProbeEgress, URL: s.URL + "/health", Count: 3, IntervalMillis: 1}}}, 0)
	if err != nil {
		t.Fatalf("%v: %+v", err, events)
	}
	r := results(events)[ProbeEgress]
	if r == nil || r.Egress == nil || r.Egress.NewConnections != 3 || r.Egress.FirstByteReused == nil || r.Egress.FirstByteReused.Count != 3 || r.Egress.Status != 200 {
		t.Fatalf("egress result %+v", r)
	}
	if n := requests.Load(); n != 7 {
		t.Errorf("the server answered %d requests, want 3 new, 1 to open the kept-alive connection and 3 on it", n)
	}
}

// A flood of datagrams without the token costs the agent little CPU, and a token holder's probe
// still gets answers during it.
func TestAgentUDPFloodIsBounded(t *testing.T) {
	s := startServer(t, "", "tok-flood", time.Minute)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	conn, err := net.Dial("udp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	junk := make([]byte, 64)
	copy(junk, "NBU1e") // our magic, a forged tag
	stop := make(chan struct{})
	sent := make(chan int)
	go func() {
		n := 0
		for {
			select {
			case <-stop:
				sent <- n
				return
			default:
			}
			if _, err := conn.Write(junk); err == nil {
				n++
			}
		}
	}()
	cpu0 := processCPU(t, s.pid())
	job := Job{APIVersion: APIVersion, Host: "127.0.0.1", Port: s.port, Token: "tok-flood",
		Probes: []ProbeSpec{{Kind: ProbeUDP, Count: 500, IntervalMillis: 2, Size: 64}}}
	events, err := runJob(t, "", job, 0)
	close(stop)
	n := <-sent
	used := processCPU(t, s.pid()) - cpu0
	r := results(events)[ProbeUDP]
	if err != nil || r == nil || r.RTT == nil || r.RTT.Received == 0 {
		t.Fatalf("udp probe during the flood: %v %+v", err, r)
	}
	t.Logf("%d forged datagrams in ~1 s; the server used %v of CPU; the probe got %d/%d answers", n, used, r.RTT.Received, r.RTT.Sent)
	if used > 600*time.Millisecond {
		t.Errorf("the server used %v of CPU under a flood of %d forged datagrams", used, n)
	}
}

func (s *server) pid() int { return s.cmd.Process.Pid }

// processCPU is the user+system CPU time a process has used (from /proc, in clock ticks of 10 ms).
func processCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.Atoi(f[11])
	stime, _ := strconv.Atoi(f[12])
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
