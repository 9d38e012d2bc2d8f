package main

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// A bottleneck queue sends its packets on at a link rate, one after another, holding the rest
// in a queueing discipline: a FIFO of a byte limit (tail drop), or FQ-CoDel (RFC 8290: a queue
// per flow served round robin by byte deficit, new flows first, each queue kept short by CoDel,
// RFC 8289; the byte limit drops from the largest flow). This kernel has no fq_codel qdisc.
//
//	delay 3=50mbit/fifo/1000000 3=50mbit/fq_codel/1000000
const (
	nfqaPayload     = 10
	nfqaCapLen      = 13
	nfDrop          = 0
	nfqnlCopyPacket = 2
	headerCopy      = 64 // enough of each packet for its addresses and ports
	quantum         = 1514
	codelTarget     = 5 * time.Millisecond
	codelInterval   = 100 * time.Millisecond
	fqFlows         = 1024
	catchUp         = 2 * time.Millisecond
	maxPacket       = 1514 // RFC 8289's MAXPACKET: a queue holding no more is never dropped from
)

type qpacket struct {
	id   uint32
	size int
	flow int
	at   time.Time // enqueued
}

// discipline is a queueing discipline; the link serialises calls.
type discipline interface {
	enqueue(p qpacket) (dropped []qpacket)
	dequeue(now time.Time) (p *qpacket, dropped []qpacket)
}

// link is a bottleneck queue: packets leave at bitsPerSecond through disc.
type link struct {
	num           uint16
	bitsPerSecond float64
	mu            sync.Mutex
	disc          discipline
	wake          chan struct{}
	send          func([]byte) error
}

// parseBottleneck reads RATE/fifo|fq_codel/BYTES.
func parseBottleneck(num uint16, v string) (*link, error) {
	f := strings.Split(v, "/")
	if len(f) != 3 {
		return nil, fmt.Errorf("want RATE/fifo|fq_codel/BYTES")
	}
	rate, err := parseRate(f[0])
	limit, err2 := strconv.Atoi(f[2])
	if err != nil || err2 != nil || limit < 3000 {
		return nil, fmt.Errorf("rate %q or limit %q: want e.g. 50mbit and 3000 bytes at least", f[0], f[2])
	}
	l := &link{num: num, bitsPerSecond: rate, wake: make(chan struct{}, 1)}
	switch f[1] {
	case "fifo":
		l.disc = &fifo{limit: limit}
	case "fq_codel":
		l.disc = newFQCoDel(limit)
	default:
		return nil, fmt.Errorf("discipline %q: want fifo or fq_codel", f[1])
	}
	return l, nil
}

func parseRate(s string) (float64, error) {
	for unit, f := range map[string]float64{"gbit": 1e9, "mbit": 1e6, "kbit": 1e3} {
		if n, ok := strings.CutSuffix(s, unit); ok {
			v, err := strconv.ParseFloat(n, 64)
			if err != nil || v <= 0 {
				return 0, fmt.Errorf("rate %q", s)
			}
			return v * f, nil
		}
	}
	return 0, fmt.Errorf("rate %q: want e.g. 50mbit", s)
}

// arrive queues one packet (its attributes from nfnetlink_queue).
func (l *link) arrive(attrs []byte, now time.Time) {
	id, size, flow, ok := packetInfo(attrs)
	if !ok {
		return
	}
	l.mu.Lock()
	dropped := l.disc.enqueue(qpacket{id: id, size: size, flow: flow, at: now})
	l.mu.Unlock()
	l.verdicts(nfDrop, dropped)
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// run sends packets on, each once the link has carried the one before it.
func (l *link) run() {
	runtime.LockOSThread()
	free := time.Now()
	for {
		now := time.Now()
		l.mu.Lock()
		p, dropped := l.disc.dequeue(now)
		l.mu.Unlock()
		l.verdicts(nfDrop, dropped)
		if p == nil {
			<-l.wake
			free = time.Now()
			continue
		}
		// Backlogged, each packet leaves one transmit time after the one before (the time this
		// loop's own work and wake-ups take is not lost to the link); after a pause of more than
		// catchUp, from now.
		if now.Sub(free) > catchUp {
			free = now
		}
		free = free.Add(time.Duration(float64(p.size*8) / l.bitsPerSecond * float64(time.Second)))
		sleepUntil(free)
		l.verdicts(nfAccept, []qpacket{*p})
	}
}

func (l *link) verdicts(verdict uint32, ps []qpacket) {
	for _, p := range ps {
		v := make([]byte, 8)
		binary.BigEndian.PutUint32(v[0:4], verdict)
		binary.BigEndian.PutUint32(v[4:8], p.id)
		if err := l.send(message(nfqnlMsgVerdict, l.num, attr(nfqaVerdictHdr, v))); err != nil {
			fmt.Fprintln(os.Stderr, "bottleneck: verdict:", err)
		}
	}
}

// sleepUntil sleeps on this locked thread, then spins the last stretch (see release).
func sleepUntil(t time.Time) {
	if wait := time.Until(t); wait > spinBelow {
		ts := unix.NsecToTimespec(int64(wait - spinBelow))
		for unix.Nanosleep(&ts, &ts) == unix.EINTR {
		}
	}
	for time.Now().Before(t) {
	}
}

// packetInfo reads a queued packet's id, its length (NFQA_CAP_LEN when the copy was cut) and
// its flow's bucket (addresses, protocol and ports of IPv4 or IPv6).
func packetInfo(attrs []byte) (id uint32, size, flow int, ok bool) {
	var payload []byte
	for len(attrs) >= 4 {
		l := int(binary.NativeEndian.Uint16(attrs[0:2]))
		t := binary.NativeEndian.Uint16(attrs[2:4]) & 0x3fff
		if l < 4 || l > len(attrs) {
			break
		}
		switch v := attrs[4:l]; {
		case t == nfqaPacketHdr && len(v) >= 4:
			id, ok = binary.BigEndian.Uint32(v[0:4]), true
		case t == nfqaPayload:
			payload = v
		case t == nfqaCapLen && len(v) >= 4:
			size = int(binary.BigEndian.Uint32(v))
		}
		attrs = attrs[min(align(l), len(attrs)):]
	}
	if size == 0 {
		size = len(payload)
	}
	return id, max(size, 1), flowOf(payload), ok
}

// flowOf hashes a packet's 5-tuple into one of fqFlows buckets.
func flowOf(p []byte) int {
	h := fnv.New32a()
	switch {
	case len(p) >= 20 && p[0]>>4 == 4:
		ihl := int(p[0]&0xf) * 4
		h.Write(p[12:20])
		h.Write(p[9:10])
		if ihl <= len(p) {
			h.Write(transportKey(p[ihl:], p[9] == 1))
		}
	case len(p) >= 40 && p[0]>>4 == 6:
		h.Write(p[8:40])
		h.Write(p[6:7])
		h.Write(transportKey(p[40:], p[6] == 58))
	}
	return int(h.Sum32() % fqFlows)
}

// transportKey is what tells a packet's flow apart past its addresses: the ports (the first
// 4 bytes of TCP and UDP), or an ICMP echo's identifier (bytes 4-5; its checksum changes with
// every packet).
func transportKey(t []byte, icmp bool) []byte {
	switch {
	case icmp && len(t) >= 6:
		return t[4:6]
	case !icmp && len(t) >= 4:
		return t[:4]
	}
	return nil
}

// fifo is one queue with tail drop at limit bytes.
type fifo struct {
	limit, bytes int
	q            []qpacket
}

func (f *fifo) enqueue(p qpacket) []qpacket {
	if f.bytes+p.size > f.limit {
		return []qpacket{p}
	}
	f.q = append(f.q, p)
	f.bytes += p.size
	return nil
}

func (f *fifo) dequeue(time.Time) (*qpacket, []qpacket) {
	if len(f.q) == 0 {
		return nil, nil
	}
	p := f.q[0]
	f.q = f.q[1:]
	f.bytes -= p.size
	return &p, nil
}

// codelFlow is one FQ-CoDel flow queue with its CoDel state.
type codelFlow struct {
	q              []qpacket
	bytes, deficit int
	listed         bool
	firstAbove     time.Time
	dropNext       time.Time
	count, last    int
	dropping       bool
}

type fqCoDel struct {
	limit, bytes int
	flows        [fqFlows]codelFlow
	newFlows     []int
	oldFlows     []int
}

func newFQCoDel(limit int) *fqCoDel { return &fqCoDel{limit: limit} }

func (q *fqCoDel) enqueue(p qpacket) (dropped []qpacket) {
	f := &q.flows[p.flow]
	f.q = append(f.q, p)
	f.bytes += p.size
	q.bytes += p.size
	if !f.listed {
		f.listed, f.deficit = true, quantum
		q.newFlows = append(q.newFlows, p.flow)
	}
	for q.bytes > q.limit { // drop from the head of the largest flow
		fat := 0
		for i := range q.flows {
			if q.flows[i].bytes > q.flows[fat].bytes {
				fat = i
			}
		}
		dropped = append(dropped, q.pop(&q.flows[fat]))
	}
	return dropped
}

func (q *fqCoDel) pop(f *codelFlow) qpacket {
	p := f.q[0]
	f.q = f.q[1:]
	f.bytes -= p.size
	q.bytes -= p.size
	return p
}

func (q *fqCoDel) dequeue(now time.Time) (*qpacket, []qpacket) {
	var dropped []qpacket
	for {
		list := &q.newFlows
		if len(*list) == 0 {
			list = &q.oldFlows
		}
		if len(*list) == 0 {
			return nil, dropped
		}
		i := (*list)[0]
		f := &q.flows[i]
		if f.deficit <= 0 {
			f.deficit += quantum
			*list = (*list)[1:]
			q.oldFlows = append(q.oldFlows, i)
			continue
		}
		p, d := q.codel(f, now)
		dropped = append(dropped, d...)
		if p == nil {
			*list = (*list)[1:]
			if list == &q.newFlows {
				q.oldFlows = append(q.oldFlows, i)
			} else {
				f.listed = false
			}
			continue
		}
		f.deficit -= p.size
		return p, dropped
	}
}

// codel takes the flow's next packet, dropping from its head as CoDel's control law says
// (RFC 8289's dequeue, its pseudo-code step by step).
func (q *fqCoDel) codel(f *codelFlow, now time.Time) (*qpacket, []qpacket) {
	var dropped []qpacket
	p, ok := q.codelHead(f, now)
	switch {
	case f.dropping:
		if !ok {
			f.dropping = false
		}
		for f.dropping && !now.Before(f.dropNext) {
			dropped = append(dropped, *p)
			f.count++
			if p, ok = q.codelHead(f, now); !ok {
				f.dropping = false
			} else {
				f.dropNext = controlLaw(f.dropNext, f.count)
			}
		}
	case ok:
		dropped = append(dropped, *p)
		p, _ = q.codelHead(f, now)
		f.dropping = true
		delta := f.count - f.last
		f.count = 1
		if delta > 1 && now.Sub(f.dropNext) < 16*codelInterval {
			f.count = delta
		}
		f.dropNext = controlLaw(now, f.count)
		f.last = f.count
	}
	return p, dropped
}

// codelHead is RFC 8289's dodequeue: the flow's head packet (nil when empty) and whether its
// sojourn has been above the target for an interval (ok to drop).
func (q *fqCoDel) codelHead(f *codelFlow, now time.Time) (*qpacket, bool) {
	if len(f.q) == 0 {
		f.firstAbove = time.Time{}
		return nil, false
	}
	p := q.pop(f)
	switch {
	case now.Sub(p.at) < codelTarget || f.bytes <= maxPacket:
		f.firstAbove = time.Time{}
	case f.firstAbove.IsZero():
		f.firstAbove = now.Add(codelInterval)
	case !now.Before(f.firstAbove):
		return &p, true
	}
	return &p, false
}

func controlLaw(t time.Time, count int) time.Time {
	return t.Add(time.Duration(float64(codelInterval) / math.Sqrt(float64(count))))
}
