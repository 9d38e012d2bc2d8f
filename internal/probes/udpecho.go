package probes

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"hash"
	"time"
)

// The UDP echo protocol between a client and an agent server (same port number as its TCP
// listener). Every datagram starts with a 32-byte header: magic "NBU1", a type, 3 bytes of
// padding, a 64-bit sequence and a 16-byte tag, the HMAC-SHA256 (truncated) of the rest of the
// datagram keyed with the run token's SHA-256 digest. The server answers only datagrams whose tag
// it can verify, with a datagram no larger than the request: it amplifies nothing and
// answers nobody without the run's token.
const (
	UDPHeaderLen = 32
	// UDPMaxDatagram bounds what the server reads and answers.
	UDPMaxDatagram = 9216
	udpMagic       = "NBU1"
	tagLen         = 16
)

// Datagram types.
const (
	UDPEcho     byte = 'e' // answered with the same datagram (type 'E'), its dwell inside
	UDPRate     byte = 'r' // udp-rr: answered with the same datagram (type 'R'), nothing added
	UDPMTUProbe byte = 'm' // padded to the probed size; answered with a header and the server's MTU (type 'M')
)

// DwellOf reads the server's dwell and its follow-up for an earlier answer from an echo
// answer's payload (zero when it has none; ok false without a follow-up).
func DwellOf(payload []byte) (dwell time.Duration, late Late, ok bool) {
	if len(payload) < echoPayload {
		return 0, Late{}, false
	}
	dwell = time.Duration(binary.BigEndian.Uint64(payload))
	s := binary.BigEndian.Uint64(payload[8:])
	return dwell, Late{Seq: s - 1, Extra: time.Duration(binary.BigEndian.Uint64(payload[16:]))}, s > 0
}

// ErrBadDatagram is returned for a datagram that is not ours or whose tag does not verify.
var ErrBadDatagram = errors.New("not an authenticated netbench datagram")

// UDPKey derives the datagram key from the run token: an HMAC of the token with a label of
// its own, so that the token's SHA-256 (which agents' specs carry, readable by anyone who may
// get pods) tells nothing about it.
func UDPKey(token string) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte("kubectl-netbench udp datagram key v1"))
	return m.Sum(nil)
}

// Sealer seals and verifies datagrams under one key, reusing its HMAC's state: a new HMAC per
// datagram costs ~0.9 µs and six allocations, and a udp-rr transaction seals two and verifies
// two. One goroutine's at a time.
type Sealer struct {
	key []byte
	mac hash.Hash
	sum []byte
}

// NewSealer is a Sealer for key (nil: one that verifies nothing).
func NewSealer(key []byte) *Sealer {
	return &Sealer{key: key, mac: hmac.New(sha256.New, key), sum: make([]byte, 0, sha256.Size)}
}

// For is s when its key is key, a new Sealer for key otherwise.
func (s *Sealer) For(key []byte) *Sealer {
	if s != nil && bytes.Equal(s.key, key) && (s.key == nil) == (key == nil) {
		return s
	}
	return NewSealer(key)
}

func (s *Sealer) tag(b []byte) []byte {
	s.mac.Reset()
	s.mac.Write(b[:16])
	s.mac.Write(b[UDPHeaderLen:])
	s.sum = s.mac.Sum(s.sum[:0])
	return s.sum[:tagLen]
}

// Seal fills b's header (b is at least UDPHeaderLen long; the rest is payload).
func (s *Sealer) Seal(b []byte, typ byte, seq uint64) {
	copy(b, udpMagic)
	b[4], b[5], b[6], b[7] = typ, 0, 0, 0
	binary.BigEndian.PutUint64(b[8:16], seq)
	copy(b[16:UDPHeaderLen], s.tag(b))
}

// Open verifies b and returns its type and sequence.
func (s *Sealer) Open(b []byte) (typ byte, seq uint64, err error) {
	if s.key == nil || len(b) < UDPHeaderLen || string(b[:4]) != udpMagic {
		return 0, 0, ErrBadDatagram
	}
	if !hmac.Equal(b[16:UDPHeaderLen], s.tag(b)) {
		return 0, 0, ErrBadDatagram
	}
	return b[4], binary.BigEndian.Uint64(b[8:16]), nil
}

// SealDatagram fills b's header under key (Sealer.Seal, once).
func SealDatagram(key, b []byte, typ byte, seq uint64) { NewSealer(key).Seal(b, typ, seq) }

// OpenDatagram verifies b under key (Sealer.Open, once).
func OpenDatagram(key, b []byte) (typ byte, seq uint64, err error) { return NewSealer(key).Open(b) }

// Late is a follow-up for an echo answered before: its sequence and how long its answer took
// from the server's own clock reading to the kernel's transmit time stamp (known only once sent).
type Late struct {
	Seq   uint64
	Extra time.Duration
}

// echoPayload is what an echo answer carries after the header: dwell, then a Late (seq+1, so
// that 0 means none).
const echoPayload = 24

// EchoReply turns a verified request of n bytes in b into the server's answer, in place, and
// returns its length (0: no answer). An echo's answer carries, in its payload (when the request
// has room), dwell: how long the request spent in the server until its answer was about to be
// sent, and late: the previous answer's remaining time to its transmit time stamp; the client
// takes both off the round trips. localMTU is what an MTU probe's answer reports.
func EchoReply(s *Sealer, b []byte, typ byte, seq uint64, n, localMTU int, dwell time.Duration, late Late) int {
	switch typ {
	case UDPEcho:
		if n >= UDPHeaderLen+echoPayload {
			binary.BigEndian.PutUint64(b[UDPHeaderLen:], uint64(max(dwell, 0)))
			binary.BigEndian.PutUint64(b[UDPHeaderLen+8:], late.Seq+1)
			binary.BigEndian.PutUint64(b[UDPHeaderLen+16:], uint64(max(late.Extra, 0)))
		}
		s.Seal(b[:n], 'E', seq)
		return n
	case UDPRate:
		s.Seal(b[:n], 'R', seq)
		return n
	case UDPMTUProbe:
		binary.BigEndian.PutUint32(b[UDPHeaderLen:], uint32(n))
		binary.BigEndian.PutUint32(b[UDPHeaderLen+4:], uint32(localMTU))
		s.Seal(b[:UDPHeaderLen+8], 'M', seq)
		return UDPHeaderLen + 8
	}
	return 0
}
