package probes

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"
)

// loadSockets is how many UDP sockets (source ports) one step sends from: a Service balances
// by flow, so a few flows would load its replicas unevenly (8 flows put 6 or more on one of two
// replicas 29 % of the time; of 256, one replica's share is within 3 % of half in two thirds of
// the steps); a pod's resolver opens a new port for nearly every lookup. Each
// socket has its own 16-bit ID space, which a step never wraps (maxStepQueries).
const loadSockets = LoadSockets

// LoadSockets is loadSockets, for a reference generator sent from as many sockets.
const LoadSockets = 256

// maxStepQueries bounds one step's queries: below loadSockets × 65,536, so no socket reuses an ID.
const maxStepQueries = loadSockets * 60000

// packedQuery is a mix entry ready to send: the message (its ID to be set) and its question
// section, which an answer must repeat.
type packedQuery struct {
	msg      []byte
	question []byte
}

// packMix packs every query of the mix once.
func packMix(mix []DNSLoadQuery) ([]packedQuery, error) {
	out := make([]packedQuery, 0, len(mix))
	for _, q := range mix {
		t, ok := dns.StringToType[q.Type]
		if !ok {
			return nil, fmt.Errorf("dns load: query type %q", q.Type)
		}
		m := new(dns.Msg)
		m.SetQuestion(dns.Fqdn(q.Name), t)
		m.RecursionDesired = true
		b, err := m.Pack()
		if err != nil {
			return nil, fmt.Errorf("dns load: %s %s: %w", q.Name, q.Type, err)
		}
		out = append(out, packedQuery{msg: b, question: b[dnsHeaderLen:]})
	}
	return out, nil
}

const dnsHeaderLen = 12

// loadSocket is one source port of a step, the index'th of the step's sockets: query number n
// of the step goes out on socket n % loadSockets with ID n / loadSockets, so that sentAt (when
// each query was sent, nanoseconds since the step's start plus 1; 0 answered) is one slice of
// the step's queries shared by all sockets.
type loadSocket struct {
	c      net.Conn
	index  int
	sentAt []atomic.Int64
	// key is XORed into every ID of the step, so that a late answer to an earlier step's query
	// on a reused port does not pass for this step's.
	key uint16
	buf []byte

	latencies []time.Duration
	arrivals  []time.Duration // since the step's start, in the order of latencies
	answered  atomic.Int64
	errors    atomic.Int64
}

// loadStep sends rate queries per second for d, then waits up to timeout for the answers.
type loadStep struct {
	server  string
	mix     []packedQuery
	rate    float64
	d       time.Duration
	timeout time.Duration
	// behind is how many queries may be outstanding past the timeout's share before the step
	// stops early as falling behind (the server's queue is growing: it is past its knee).
	behind int
}

// stepCounts is what a step measured.
type stepCounts struct {
	sent, answered, errors int
	elapsed                time.Duration
	latencies, arrivals    []time.Duration
	stoppedEarly           string
}

// keptPace is the answers' rate over the second half of the sending time as a share of the rate
// sent: under 1 when the server answers slower than it is asked (its queue grows), about 1 below
// its capacity, however late a throttled period holds some answers.
func (c stepCounts) keptPace(rate float64) float64 {
	half := c.elapsed / 2
	n := 0
	for _, a := range c.arrivals {
		if a > half && a <= c.elapsed {
			n++
		}
	}
	return float64(n) / (c.elapsed - half).Seconds() / rate
}

// run sends the step and collects its answers.
func (s loadStep) run(ctx context.Context) (stepCounts, error) {
	socks := make([]*loadSocket, loadSockets)
	sentAt := make([]atomic.Int64, min(int(s.rate*s.d.Seconds()), maxStepQueries))
	key := uint16(rand.Uint32())
	for i := range socks {
		c, err := (&net.Dialer{}).DialContext(ctx, "udp", s.server)
		if err != nil {
			closeSockets(socks[:i])
			return stepCounts{}, fmt.Errorf("dns load: %w", err)
		}
		socks[i] = &loadSocket{c: c, index: i, sentAt: sentAt, key: key}
	}
	defer closeSockets(socks)
	start := time.Now()
	var wg sync.WaitGroup
	for _, k := range socks {
		wg.Add(1)
		go func() { defer wg.Done(); k.read(s, start) }()
	}
	counts := stepCounts{}
	counts.sent, counts.stoppedEarly = s.send(ctx, socks, start)
	counts.elapsed = time.Since(start)
	s.drain(socks, counts.sent)
	deadline := time.Now()
	for _, k := range socks {
		_ = k.c.SetReadDeadline(deadline)
	}
	wg.Wait()
	for _, k := range socks {
		counts.answered += int(k.answered.Load())
		counts.errors += int(k.errors.Load())
		counts.latencies = append(counts.latencies, k.latencies...)
		counts.arrivals = append(counts.arrivals, k.arrivals...)
	}
	return counts, nil
}

func closeSockets(socks []*loadSocket) {
	for _, k := range socks {
		k.c.Close()
	}
}

// send paces the queries: every half millisecond it sends what the rate owes by then. It stops
// early when the run ends or when more queries are outstanding than the step allows.
func (s loadStep) send(ctx context.Context, socks []*loadSocket, start time.Time) (int, string) {
	sent, total := 0, min(int(s.rate*s.d.Seconds()), maxStepQueries)
	burst := int(s.rate*loadMaxBurst.Seconds()) + 1
	lastCheck := start
	for sent < total {
		now := time.Now()
		switch {
		case ctx.Err() != nil:
			return sent, "cancelled"
		case now.Sub(start) > s.d*3/2:
			return sent, "stopped: the agent could not send the rate in time"
		}
		// What the rate owes by now, but never more than loadMaxBurst of it at once: after a
		// stall the step falls behind (and is judged by the generator) rather than flood.
		due := min(int(s.rate*now.Sub(start).Seconds())+1, total, sent+burst)
		for ; sent < due; sent++ {
			socks[sent%len(socks)].send(s.mix[sent%len(s.mix)], sent, time.Since(start))
		}
		if now.Sub(lastCheck) >= 50*time.Millisecond {
			lastCheck = now
			if n := outstanding(socks, sent); n > s.behind {
				return sent, fmt.Sprintf("stopped early: %d queries outstanding (the server is falling behind)", n)
			}
			if n := serverErrors(socks); n > 0 {
				return sent, fmt.Sprintf("stopped at once: %d answers SERVFAIL or REFUSED", n)
			}
		}
		time.Sleep(500 * time.Microsecond)
	}
	return sent, ""
}

// loadMaxBurst bounds how much of the rate one pass of the sending loop may catch up on.
const loadMaxBurst = 10 * time.Millisecond

// serverErrors is how many answers were SERVFAIL or REFUSED so far.
func serverErrors(socks []*loadSocket) int {
	n := 0
	for _, k := range socks {
		n += int(k.errors.Load())
	}
	return n
}

// outstanding is how many of sent are not answered yet.
func outstanding(socks []*loadSocket, sent int) int {
	n := sent
	for _, k := range socks {
		n -= int(k.answered.Load())
	}
	return n
}

// drain waits until every query sent is answered or the timeout has passed since the last send.
func (s loadStep) drain(socks []*loadSocket, sent int) {
	end := time.Now().Add(s.timeout)
	for time.Now().Before(end) && outstanding(socks, sent) > 0 {
		time.Sleep(2 * time.Millisecond)
	}
}

// send writes the step's query number n. A failed write (a full socket buffer) counts as a query
// sent and never answered, as a lost one.
func (k *loadSocket) send(q packedQuery, n int, at time.Duration) {
	id := uint16(n/loadSockets) ^ k.key
	b := append(k.buf[:0], q.msg...)
	k.buf = b
	b[0], b[1] = byte(id>>8), byte(id)
	k.sentAt[n].Store(int64(at) + 1)
	_, _ = k.c.Write(b)
}

// read collects answers until its socket's deadline: an answer counts once, for the ID and
// question it was sent with, within the timeout.
func (k *loadSocket) read(s loadStep, start time.Time) {
	buf := make([]byte, 4096) // answers to queries without EDNS are at most 512 bytes
	for {
		n, err := k.c.Read(buf)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, net.ErrClosed) {
				return
			}
			continue // ICMP errors surface on a connected socket: the query is lost
		}
		at := time.Since(start)
		if n < dnsHeaderLen || buf[2]&0x80 == 0 {
			continue
		}
		q := int(uint16(buf[0])<<8|uint16(buf[1])^k.key)*loadSockets + k.index
		if q >= len(k.sentAt) || !bytes.HasPrefix(buf[dnsHeaderLen:n], s.mix[q%len(s.mix)].question) {
			continue // not a query of ours, or not its question
		}
		sent := k.sentAt[q].Swap(0)
		if sent == 0 {
			continue // not sent yet, or already answered
		}
		rtt := at - time.Duration(sent-1)
		if rtt > s.timeout {
			continue // late: lost
		}
		if rc := buf[3] & 0x0f; rc == dns.RcodeServerFailure || rc == dns.RcodeRefused {
			k.errors.Add(1)
		}
		k.latencies = append(k.latencies, rtt)
		k.arrivals = append(k.arrivals, at)
		k.answered.Add(1)
	}
}
