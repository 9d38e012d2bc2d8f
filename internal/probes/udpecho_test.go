package probes

import (
	"bytes"
	"errors"
	"testing"
	"time"
)

func TestDatagramsAuthenticate(t *testing.T) {
	key, other := UDPKey("run-token"), UDPKey("another")
	b := make([]byte, 100)
	for i := UDPHeaderLen; i < len(b); i++ {
		b[i] = byte(i)
	}
	SealDatagram(key, b, UDPEcho, 42)
	if typ, seq, err := OpenDatagram(key, b); err != nil || typ != UDPEcho || seq != 42 {
		t.Fatalf("open: %c %d %v", typ, seq, err)
	}
	if _, _, err := OpenDatagram(other, b); !errors.Is(err, ErrBadDatagram) {
		t.Errorf("another run's key opened it: %v", err)
	}
	for _, i := range []int{0, 4, 8, 20, 60, 99} {
		c := bytes.Clone(b)
		c[i] ^= 1
		if _, _, err := OpenDatagram(key, c); !errors.Is(err, ErrBadDatagram) {
			t.Errorf("byte %d flipped, still opened", i)
		}
	}
	for _, n := range []int{0, 3, UDPHeaderLen - 1} {
		if _, _, err := OpenDatagram(key, b[:n]); !errors.Is(err, ErrBadDatagram) {
			t.Errorf("%d bytes opened", n)
		}
	}
	// The answers are no larger than the requests: an echo is the same size, an MTU probe's a
	// short header.
	if n := EchoReply(NewSealer(key), b, UDPEcho, 42, len(b), 1500, 1234*time.Nanosecond, Late{Seq: 41, Extra: 7 * time.Microsecond}); n != len(b) {
		t.Errorf("echo answer %d bytes", n)
	}
	typ, _, err := OpenDatagram(key, b)
	dwell, late, ok := DwellOf(b[UDPHeaderLen:])
	if err != nil || typ != 'E' || dwell != 1234*time.Nanosecond || !ok || late != (Late{Seq: 41, Extra: 7 * time.Microsecond}) {
		t.Errorf("echo answer: %c %v, dwell %v, late %+v %v", typ, err, dwell, late, ok)
	}
	if _, _, ok := DwellOf(make([]byte, echoPayload)); ok {
		t.Error("a zero payload carries no follow-up")
	}
	big := make([]byte, 1400)
	SealDatagram(key, big, UDPMTUProbe, 7)
	if n := EchoReply(NewSealer(key), big, UDPMTUProbe, 7, len(big), 1500, 0, Late{}); n != UDPHeaderLen+8 {
		t.Errorf("mtu answer %d bytes", n)
	}
	if typ, seq, err := OpenDatagram(key, big[:UDPHeaderLen+8]); err != nil || typ != 'M' || seq != 7 {
		t.Errorf("mtu answer: %c %d %v", typ, seq, err)
	}
	if n := EchoReply(NewSealer(key), b, 'x', 1, len(b), 1500, 0, Late{}); n != 0 {
		t.Errorf("unknown type answered with %d bytes", n)
	}
}

func BenchmarkEchoServerWork(b *testing.B) {
	key := UDPKey("run-token")
	buf := make([]byte, 100)
	for i := 0; i < b.N; i++ {
		SealDatagram(key, buf, UDPEcho, uint64(i))
		typ, seq, _ := OpenDatagram(key, buf)
		EchoReply(NewSealer(key), buf, typ, seq, len(buf), 1500, time.Microsecond, Late{})
	}
}

// No datagram makes the server panic or answer with more bytes than it received, and only a
// sealed one is answered.
func FuzzOpenDatagram(f *testing.F) {
	key := UDPKey("run-token")
	ok := make([]byte, 64)
	SealDatagram(key, ok, UDPEcho, 1)
	f.Add(ok)
	f.Add([]byte("NBU1"))
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > UDPMaxDatagram {
			return
		}
		buf := make([]byte, UDPMaxDatagram)
		n := copy(buf, b)
		typ, seq, err := OpenDatagram(key, buf[:n])
		if err != nil {
			return
		}
		if m := EchoReply(NewSealer(key), buf, typ, seq, n, 1500, time.Microsecond, Late{}); m > n && !(typ == UDPMTUProbe && m == UDPHeaderLen+8) {
			t.Errorf("answered %d bytes to %d", m, n)
		}
	})
}
