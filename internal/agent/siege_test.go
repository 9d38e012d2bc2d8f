package agent

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/hostile"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
)

// The run completes while peers without the token (8 source addresses, 40 connections each, of
// every kind: silent, trickled HTTP/1 headers, endless HTTP/2 header blocks, CONTINUATION
// floods, many gRPC streams) hold every slot they can and re-open whatever is closed: every
// probe of a token holder succeeds, and the agent's memory stays under MaxAgentRSS.
func TestAgentServesTokenHoldersUnderSiege(t *testing.T) {
	s := startServer(t, "", "tok-siege", 2*time.Minute)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	var sources []string
	for i := 2; i < 10; i++ {
		sources = append(sources, fmt.Sprintf("127.0.0.%d", i))
	}
	stop := make(chan struct{})
	opened, wait := hostile.Siege(addr, sources, 40, stop)
	peak := watchRSS(s.cmd.Process.Pid, stop)
	defer func() { close(stop); wait() }()
	time.Sleep(3 * time.Second) // every slot held, and the first windows passed

	events, err := runJob(t, "", fullJob("127.0.0.1", s.port, "tok-siege"), 0)
	if err != nil {
		t.Fatalf("agent run under siege: %v (events %+v)", err, events)
	}
	checkFullJob(t, events, os.Geteuid() == 0 || unprivilegedICMP())
	t.Logf("peers without the token opened %d connections; agent peak RSS %.1f MiB", opened.Load(), float64(peak.Load())/(1<<20))
	if min := int64(len(sources) * DefaultLimits.StrangersPerSource); opened.Load() < min {
		t.Errorf("the siege opened only %d connections: fewer than its sources' slots (%d)", opened.Load(), min)
	}
	if p := peak.Load(); p > MaxAgentRSS {
		t.Errorf("agent peak RSS %d bytes under siege, want under %d", p, MaxAgentRSS)
	}
}

// watchRSS samples a process's resident memory every 50 ms until stop, keeping the peak.
func watchRSS(pid int, stop <-chan struct{}) *atomic.Int64 {
	var peak atomic.Int64
	go func() {
		for {
			if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status"); err == nil {
				for _, line := range strings.Split(string(b), "\n") {
					if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmRSS:" {
						kb, _ := strconv.ParseInt(f[1], 10, 64)
						if kb<<10 > peak.Load() {
							peak.Store(kb << 10)
						}
					}
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}()
	return &peak
}

// The spec carries the token's SHA-256 only, and nothing derived from it opens the UDP echo: a
// datagram sealed with the digest as key (which anyone who may get pods can read) is never
// answered; one sealed with the token's key is answered only after a token holder presented the
// token over TCP (the plugin's first lease renewal).
func TestAgentUDPKeyNotInTheSpec(t *testing.T) {
	const token = "tok-udp-secret"
	c := agentCmd(t, "", "serve", "--token-sha256", TokenDigest(token), "--deadline", "1m")
	port := startedPort(t, c)
	target := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	digest, err := hex.DecodeString(TokenDigest(token)) // the key before: the digest's bytes
	if err != nil {
		t.Fatal(err)
	}
	echo := func(key []byte) int {
		r, err := probes.UDPRTT(context.Background(), probes.UDPSpec{RTTSpec: probes.RTTSpec{Target: target, Count: 3,
			Interval: 20 * time.Millisecond, Timeout: 200 * time.Millisecond}, Size: 64, Key: key})
		if err != nil {
			return 0 // no answer at all
		}
		return r.Received
	}
	got := []int{echo(digest), echo(probes.UDPKey(token))}
	req, _ := http.NewRequest(http.MethodPost, "http://"+target+PathLease, nil)
	req.Header.Set(TokenHeader, token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("lease renewal with the token: %v %v", resp, err)
	}
	got = append(got, echo(digest), echo(probes.UDPKey(token)))
	if want := []int{0, 0, 0, 3}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("answered of 3: digest-keyed, token-keyed before the token was seen, digest-keyed, token-keyed after: %v, want %v", got, want)
	}
}

// startedPort starts an agent and returns the port of its ready event.
func startedPort(t *testing.T, c *exec.Cmd) int {
	t.Helper()
	out, err := c.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Process.Kill(); _ = c.Wait() })
	var ready Event
	if err := json.NewDecoder(out).Decode(&ready); err != nil || ready.Type != EventReady || ready.Port == 0 {
		t.Fatalf("no ready event: %+v %v", ready, err)
	}
	return ready.Port
}

// The spread probe reaches whichever pod a Service picks, so it never sends the token: an
// agent answers a proof of it with its identity and a proof of its own, each proof once; before
// the agent has learnt the token (its first lease renewal) it answers none.
func TestWhoAmIByProof(t *testing.T) {
	const token = "tok-spread"
	c := agentCmd(t, "", "serve", "--token-sha256", TokenDigest(token), "--deadline", "1m", "--pod", "web-1", "--zone", "zone-b")
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(startedPort(t, c)))
	spread := func() *probes.SpreadResult {
		r, _ := probes.Spread(context.Background(), probes.SpreadSpec{Address: addr, Path: PathWhoAmI, Connections: 5, Token: token})
		return r
	}
	before := spread()
	req, _ := http.NewRequest(http.MethodPost, "http://"+addr+PathLease, nil)
	req.Header.Set(TokenHeader, token)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("lease renewal with the token: %v %v", resp, err)
	}
	after := spread()
	if before.Answered != 0 || after.Answered != 5 || after.ByPod["web-1"] != 5 || after.ByZone["zone-b"] != 5 {
		t.Errorf("answered before the token was learnt: %+v; after: %+v", before, after)
	}
	proof, _ := probes.NewProof(token, time.Now())
	codes := []int{}
	for range 2 {
		r, _ := http.NewRequest(http.MethodGet, "http://"+addr+PathWhoAmI, nil)
		r.Header.Set(probes.ProofHeader, proof)
		resp, err := http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		codes = append(codes, resp.StatusCode)
	}
	if fmt.Sprint(codes) != "[200 401]" {
		t.Errorf("the same proof twice: %v, want [200 401]", codes)
	}
}
