package main

import (
	"testing"
	"time"
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
