package agent

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/probes"
)

// MaxAgentRSS is the resident memory the agent server stays under whatever peers without the
// token send (docs/security.md states it).
const MaxAgentRSS = 64 << 20

// siegeKinds are the ways a peer without the token holds a connection.
var siegeKinds = []struct {
	name string
	hold func(c net.Conn, gone <-chan struct{}) // returns once gone is closed
}{
	{"raw TCP, silent", func(c net.Conn, gone <-chan struct{}) { <-gone }},
	{"HTTP/1 header trickled byte by byte", trickleHTTP1},
	{"HTTP/2 endless header block", endlessHeaders},
	{"HTTP/2 CONTINUATION flood", continuationFlood},
	{"gRPC, many streams without the token", manyStreams},
}

func trickleHTTP1(c net.Conn, gone <-chan struct{}) {
	_, _ = c.Write([]byte("GET / HTTP/1.1\r\nHost: x\r\nX-Long: "))
	for {
		select {
		case <-gone:
			return
		case <-time.After(100 * time.Millisecond):
			if _, err := c.Write([]byte("a")); err != nil {
				return
			}
		}
	}
}

// h2Open writes the client preface and an empty SETTINGS frame.
func h2Open(c net.Conn) *http2.Framer {
	_, _ = c.Write([]byte(http2.ClientPreface))
	fr := http2.NewFramer(c, c)
	_ = fr.WriteSettings()
	return fr
}

// endlessHeaders sends one header whose value never ends: a 15 MB value announced, sent in
// frames without END_HEADERS until the peer gives up.
func endlessHeaders(c net.Conn, gone <-chan struct{}) {
	fr := h2Open(c)
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	_ = enc.WriteField(hpack.HeaderField{Name: ":method", Value: "POST"})
	_ = enc.WriteField(hpack.HeaderField{Name: "x-big", Value: strings.Repeat("v", 15<<20)})
	b := block.Bytes()
	if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: b[:16000]}) != nil {
		return
	}
	for off := 16000; off+16000 < len(b); off += 16000 {
		select {
		case <-gone:
			return
		default:
		}
		if fr.WriteContinuation(1, false, b[off:off+16000]) != nil {
			return
		}
	}
	<-gone
}

// continuationFlood sends empty CONTINUATION frames as fast as the peer takes them.
func continuationFlood(c net.Conn, gone <-chan struct{}) {
	fr := h2Open(c)
	var block bytes.Buffer
	_ = hpack.NewEncoder(&block).WriteField(hpack.HeaderField{Name: ":method", Value: "POST"})
	if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: block.Bytes()}) != nil {
		return
	}
	for {
		select {
		case <-gone:
			return
		default:
		}
		if fr.WriteContinuation(1, false, nil) != nil {
			return
		}
	}
}

// manyStreams opens gRPC calls without the token, as many as the peer lets it.
func manyStreams(c net.Conn, gone <-chan struct{}) {
	fr := h2Open(c)
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	for _, f := range [][2]string{{":method", "POST"}, {":scheme", "http"}, {":path", "/fgrpc.PingServer/Ping"},
		{":authority", "x"}, {"content-type", "application/grpc"}, {"te", "trailers"}} {
		_ = enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1]})
	}
	for id := uint32(1); id < 4000; id += 2 {
		select {
		case <-gone:
			return
		default:
		}
		if fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block.Bytes(), EndHeaders: true}) != nil {
			return
		}
	}
	<-gone
}

// siege holds up to perSource connections from each source address at addr, of every kind,
// re-opening each as soon as it is closed, until stop. It counts the connections opened.
func siege(addr string, sources []string, perSource int, stop <-chan struct{}) (opened *atomic.Int64, wait func()) {
	opened = &atomic.Int64{}
	var wg sync.WaitGroup
	for _, src := range sources {
		for i := range perSource {
			wg.Add(1)
			go func() {
				defer wg.Done()
				kind := siegeKinds[i%len(siegeKinds)]
				d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}, Timeout: time.Second}
				for {
					select {
					case <-stop:
						return
					default:
					}
					c, err := d.Dial("tcp", addr)
					if err != nil {
						time.Sleep(20 * time.Millisecond)
						continue
					}
					opened.Add(1)
					gone, done := make(chan struct{}), make(chan struct{})
					go func() { kind.hold(c, gone); close(done) }()
					go func() {
						select {
						case <-stop:
							c.Close()
						case <-done:
						}
					}()
					_, _ = io.Copy(io.Discard, c) // until the agent closes it
					close(gone)
					c.Close()
					<-done
				}
			}()
		}
	}
	return opened, wg.Wait
}

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
	opened, wait := siege(addr, sources, 40, stop)
	peak := watchRSS(s.cmd.Process.Pid, stop)
	defer func() { close(stop); wait() }()
	time.Sleep(3 * time.Second) // every slot held, and the first windows passed

	events, err := runJob(t, "", fullJob("127.0.0.1", s.port, "tok-siege"), 0)
	if err != nil {
		t.Fatalf("agent run under siege: %v (events %+v)", err, events)
	}
	checkFullJob(t, events, os.Geteuid() == 0 || unprivilegedICMP())
	t.Logf("peers without the token opened %d connections; agent peak RSS %.1f MiB", opened.Load(), float64(peak.Load())/(1<<20))
	if opened.Load() < int64(len(sources)*40) {
		t.Errorf("the siege opened only %d connections: not every peer got in once", opened.Load())
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
