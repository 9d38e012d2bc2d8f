package main

import (
	"encoding/binary"
	"math"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A FIFO drops at its byte limit and sends in arrival order.
func TestFIFO(t *testing.T) {
	f := &fifo{limit: 3000}
	now := time.Now()
	for i := range 3 {
		if d := f.enqueue(qpacket{id: uint32(i), size: 1500, at: now}); (i < 2) != (len(d) == 0) {
			t.Fatalf("packet %d: dropped %v (limit 3000, 1500 bytes each)", i, d)
		}
	}
	for i := range 2 {
		if p, _ := f.dequeue(now); p == nil || p.id != uint32(i) {
			t.Fatalf("dequeue %d: %+v", i, p)
		}
	}
}

// FQ-CoDel serves a sparse flow's packet before a backlogged flow's queue, and CoDel drops
// from a flow whose packets waited past the target for an interval.
func TestFQCoDel(t *testing.T) {
	q := newFQCoDel(1 << 20)
	now := time.Now()
	for i := range 100 {
		q.enqueue(qpacket{id: uint32(i), size: 1500, flow: 1, at: now})
	}
	for range 3 {
		q.dequeue(now)
	}
	q.enqueue(qpacket{id: 1000, size: 100, flow: 2, at: now})
	if p, _ := q.dequeue(now); p == nil || p.id != 1000 {
		t.Fatalf("the sparse flow's packet waits behind the backlog: got %+v", p)
	}
	later := now.Add(200 * time.Millisecond)
	dropped := 0
	for range 20 {
		_, d := q.dequeue(later)
		dropped += len(d)
		later = later.Add(10 * time.Millisecond)
	}
	if dropped == 0 {
		t.Error("CoDel dropped nothing from a flow whose packets waited 200 ms and more")
	}
}

// CoDel's control law, traced as RFC 8289 has it: a flow whose packets all wait 10 ms (above
// the 5 ms target) is first dropped an interval (100 ms) after its sojourn went above the
// target (its second millisecond here: the first dequeue left one packet, which is never
// dropped from), then each next drop 100 ms / √count after the one before (count 1, 2, 3).
func TestCoDelDropSpacing(t *testing.T) {
	q := newFQCoDel(1 << 30)
	t0 := time.Now()
	var drops []time.Duration
	for ms := 0; ms < 400; ms++ {
		now := t0.Add(time.Duration(ms) * time.Millisecond)
		for range 2 {
			q.enqueue(qpacket{size: 1500, flow: 7, at: now.Add(-10 * time.Millisecond)})
		}
		_, d := q.dequeue(now)
		for range d {
			drops = append(drops, now.Sub(t0))
		}
	}
	if len(drops) < 4 || drops[0] != 101*time.Millisecond {
		t.Fatalf("drops at %v: want the first at 101 ms and three more", drops)
	}
	for c := 1; c < 4; c++ {
		want := time.Duration(float64(100*time.Millisecond) / math.Sqrt(float64(c)))
		// Dequeues come each millisecond: a drop is due at the first one not before its time.
		if gap := drops[c] - drops[c-1]; gap < want || gap > want+time.Millisecond {
			t.Errorf("drop %d came %v after the one before, want %v (count %d); all: %v", c+1, gap, want, c, drops[:4])
		}
	}
}

// An ICMP echo's flow is its identifier, not its checksum.
func TestFlowOfICMPEcho(t *testing.T) {
	echo := func(id, sum byte) []byte {
		p := make([]byte, 28)
		p[0], p[9] = 0x45, 1
		copy(p[12:20], []byte{10, 0, 0, 1, 10, 0, 0, 2})
		p[22], p[23], p[25] = sum, sum, id
		return p
	}
	if flowOf(echo(1, 1)) != flowOf(echo(1, 2)) {
		t.Error("two echoes of one identifier in two flows")
	}
}

// A read whose last message is of odd length and unpadded (a copied packet of odd length ends
// it) is walked to its end: each message once, nothing read past the buffer (the receive loop
// once sliced past it, and the bottleneck ended with a panic mid-run, letting traffic by).
func TestEachMessageUnpaddedLast(t *testing.T) {
	first := message(nfqnlMsgPacket, 3, attr(nfqaPacketHdr, []byte{0, 0, 0, 7, 8, 0, 6})) // padded by attr
	last := message(nfqnlMsgPacket, 3, []byte{0, 8, 1, 0, 0, 0, 0, 9, 0x45, 0, 0})        // 31 bytes, unpadded
	if len(last)%4 == 0 || int(binary.NativeEndian.Uint32(last[0:4])) != len(last) {
		t.Fatalf("the last message is %d bytes, its header says %d: want an odd length", len(last), binary.NativeEndian.Uint32(last[0:4]))
	}
	b := append(append([]byte{}, first...), last...)
	var lens []int
	eachMessage(b, func(typ uint16, msg []byte) { lens = append(lens, len(msg)) })
	if want := []int{len(first) - unix.NLMSG_HDRLEN, len(last) - unix.NLMSG_HDRLEN}; !slices.Equal(lens, want) {
		t.Errorf("messages of %v bytes, want %v", lens, want)
	}
	lens = nil
	eachMessage(b[:len(b)-1], func(typ uint16, msg []byte) { lens = append(lens, len(msg)) })
	if want := []int{len(first) - unix.NLMSG_HDRLEN}; !slices.Equal(lens, want) { // a truncated last message is not read
		t.Errorf("a truncated read: messages of %v bytes, want %v", lens, want)
	}
}
