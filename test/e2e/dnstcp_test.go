package e2e

import (
	"bufio"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

// big.example.com's answer (40 A records, about 670 bytes) does not fit UDP's 512 bytes: the
// cluster DNS answers it truncated, and glibc asks both of the candidate's queries again over TCP
// on one connection. The active report shows the truncated answer and the TCP queries in the
// timeline and counts them; --observe reassembles the TCP messages (glibc writes both queries
// in one segment) and counts each once, per lookup: 1 truncated answer and 2 TCP queries, and
// its UDP queries are the ones a capture on the node saw over the same window.
func TestDNSTruncatedAnswerOverTCP(t *testing.T) {
	cs, ns := lab(t)
	ip := looper(t, cs, ns, "--count", "0", "--every", "200", "big.example.com")
	// The wire: the pod's UDP queries, and the TCP connections it opens to port 53 (their SYNs).
	// (tcp[] reads IPv4 only: over IPv6 the flags are byte 13 after the 40-byte header.)
	syn := "tcp[tcpflags] & tcp-syn != 0"
	if strings.Contains(ip, ":") {
		syn = "ip6[53] & 2 != 0"
	}
	capture, stdout := tcpdumpPod(t, ip, "src host "+ip+" and (udp dst port 53 or (tcp dst port 53 and "+syn+"))")
	type pkt struct {
		at  time.Time
		syn bool
	}
	sent := make(chan pkt, 100000)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) == 0 {
				continue
			}
			if sec, err := strconv.ParseFloat(f[0], 64); err == nil {
				sent <- pkt{at: time.Unix(0, int64(sec*1e9)), syn: strings.Contains(sc.Text(), "Flags [S]")}
			}
		}
		close(sent)
	}()
	time.Sleep(time.Second)
	r := dnsJSON(t, "-n", ns, "deploy/looper", "big.example.com", "--observe", "8s", "--repeats", "3")
	time.Sleep(500 * time.Millisecond)
	_ = capture.Process.Kill()
	_ = capture.Wait()

	v := r.Result.Names[0].Variants[0]
	t.Logf("as configured: %d queries, %d truncated, %d over TCP", v.Queries, v.Truncated, v.TCPQueries)
	if v.Label != "as configured" || v.Queries != 10 || v.Truncated != 1 || v.TCPQueries != 2 || v.AnsweredBy != "big.example.com." {
		t.Errorf("as configured %+v: want 10 queries (6 NXDOMAIN, A truncated, AAAA, A and AAAA again over TCP)", v)
	}
	var tc, tcp int
	for _, q := range r.Result.Names[0].Timeline {
		t.Logf("%9.0f µs %s %s %s %s truncated=%v", q.SentMicros, q.Name, q.Type, q.Transport, q.Rcode, q.Truncated)
		if q.Truncated {
			tc++
		}
		if q.Transport == "tcp" && q.Name == "big.example.com." {
			tcp++
		}
	}
	if tc != 1 || tcp != 2 {
		t.Errorf("timeline: %d truncated answers, %d TCP queries; want 1 and 2", tc, tcp)
	}

	o := r.Result.Observed
	if o == nil {
		t.Fatalf("no observation: %s", r.Result.ObserveSkipped)
	}
	var udp, syns int
	for p := range sent {
		switch {
		case p.at.Before(o.Start) || p.at.After(o.End):
		case p.syn:
			syns++
		default:
			udp++
		}
	}
	t.Logf("observed: %d queries (%d over TCP), %d responses (%d over TCP), %d truncated; capture: %d UDP queries, %d TCP connections", o.Queries, o.TCPQueries, o.Responses, o.TCPResponses, o.Truncated, udp, syns)
	if udp < 150 || syns < 25 {
		t.Fatalf("the capture on the node saw only %d UDP queries and %d TCP connections over the window: the looper or tcpdump did not run", udp, syns)
	}
	if abs(o.Queries-o.TCPQueries-udp) > 8 {
		t.Errorf("the agent counted %d UDP queries, the capture on the node %d over the same window", o.Queries-o.TCPQueries, udp)
	}
	// glibc asks A and AAAA again in one TCP connection after a truncated answer.
	if abs(o.TCPQueries-2*syns) > 8 {
		t.Errorf("the agent counted %d TCP queries; the capture saw %d TCP connections over the same window, 2 queries each", o.TCPQueries, syns)
	}
	if len(o.Names) != 1 || o.Names[0].Name != "big.example.com" {
		t.Fatalf("observed names %+v: want big.example.com alone", o.Names)
	}
	n := o.Names[0]
	per := func(x int) float64 { return float64(x) / float64(n.Lookups) }
	if n.Lookups < 25 || math.Abs(per(n.Queries)-10) > 0.5 || math.Abs(per(n.TCPQueries)-2) > 0.1 || math.Abs(per(n.Truncated)-1) > 0.1 || n.AnsweredBy != "big.example.com." {
		t.Errorf("observed %+v: want per lookup 10 queries, 2 of them over TCP, 1 truncated answer", n)
	}
	if abs(o.TCPResponses-o.TCPQueries) > 2 {
		t.Errorf("%d TCP queries but %d TCP responses: each message once", o.TCPQueries, o.TCPResponses)
	}
}
