package probes

import (
	"encoding/binary"
	"net/netip"
)

// Bounds of the TCP reassembly, whatever the pod's traffic.
const (
	maxTCPStreams = 1024
	// maxTCPBuffered is one whole DNS message with its 2-byte length.
	maxTCPBuffered = 2 + 65535
	// maxTCPTotal bounds the bytes buffered over all streams: 64 messages of the largest size at
	// once. Past it the stream holding the most is given up, so that segments nobody asked for
	// (the pod's other traffic, or a peer sending to port 53) cannot hold more.
	maxTCPTotal = 64 * maxTCPBuffered
)

// tcpFlow is one direction of a TCP connection.
type tcpFlow struct{ src, dst netip.AddrPort }

// tcpSegment is what the reassembly needs of one captured TCP segment.
type tcpSegment struct {
	flow     tcpFlow
	seq      uint32
	syn, end bool // end: FIN or RST
	payload  []byte
}

type tcpStream struct {
	next uint32 // sequence number expected next
	buf  []byte // bytes of messages not yet complete
}

// tcpReassembler turns the segments of DNS-over-TCP connections (RFC 7766: each message after
// its 2-byte length, several per connection, split anywhere) back into whole messages, in
// order, once each: retransmitted bytes are dropped, and a stream with a gap (a segment the
// capture lost) starts again at the next segment.
type tcpReassembler struct {
	streams  map[tcpFlow]*tcpStream
	buffered int // bytes buffered over all streams
	// Lost counts streams given up: a gap, a message over the bound, or too many streams.
	Lost int
}

func newTCPReassembler() *tcpReassembler {
	return &tcpReassembler{streams: map[tcpFlow]*tcpStream{}}
}

// Segment takes one segment and returns the DNS messages it completes.
func (r *tcpReassembler) Segment(s tcpSegment) [][]byte {
	st := r.streams[s.flow]
	if s.syn {
		st = r.open(s.flow, s.seq+1)
	}
	if st == nil && len(s.payload) > 0 {
		st = r.open(s.flow, s.seq) // joined mid-connection: assume a message starts here
	}
	var msgs [][]byte
	if st != nil && len(s.payload) > 0 {
		msgs = r.take(s.flow, st, s.seq, s.payload)
	}
	if s.end {
		r.drop(s.flow)
	}
	return msgs
}

// drop forgets a stream and what it buffered.
func (r *tcpReassembler) drop(f tcpFlow) {
	if st, ok := r.streams[f]; ok {
		r.buffered -= len(st.buf)
		delete(r.streams, f)
	}
}

// makeRoom gives up the streams holding the most until n more bytes fit the total bound.
func (r *tcpReassembler) makeRoom(n int) {
	for r.buffered+n > maxTCPTotal {
		var big tcpFlow
		most := -1
		for f, st := range r.streams {
			if len(st.buf) > most {
				big, most = f, len(st.buf)
			}
		}
		if most <= 0 {
			return
		}
		r.drop(big)
		r.Lost++
	}
}

func (r *tcpReassembler) open(f tcpFlow, next uint32) *tcpStream {
	if _, ok := r.streams[f]; !ok && len(r.streams) >= maxTCPStreams {
		for old := range r.streams { // any one: a full table means the pod is not a DNS client
			r.drop(old)
			r.Lost++
			break
		}
	}
	st := &tcpStream{next: next}
	r.streams[f] = st
	return st
}

func (r *tcpReassembler) take(f tcpFlow, st *tcpStream, seq uint32, p []byte) [][]byte {
	switch d := int32(seq - st.next); {
	case d > 0: // a gap: what is buffered can never complete
		r.buffered -= len(st.buf)
		st.buf, st.next = st.buf[:0], seq
		r.Lost++
	case d < 0: // a retransmission, whole or in part
		if -int(d) >= len(p) {
			return nil
		}
		p = p[-d:]
	}
	st.next += uint32(len(p))
	if len(st.buf)+len(p) > maxTCPBuffered {
		r.drop(f)
		r.Lost++
		return nil
	}
	r.makeRoom(len(p))
	if r.streams[f] != st { // this stream was the one given up
		return nil
	}
	st.buf = append(st.buf, p...)
	r.buffered += len(p)
	var msgs [][]byte
	for len(st.buf) >= 2 {
		n := int(binary.BigEndian.Uint16(st.buf))
		if len(st.buf) < 2+n {
			break
		}
		msgs = append(msgs, append([]byte(nil), st.buf[2:2+n]...))
		st.buf = st.buf[2+n:]
		r.buffered -= 2 + n
	}
	if len(st.buf) == 0 {
		st.buf = nil // let a large finished buffer go
	}
	return msgs
}
