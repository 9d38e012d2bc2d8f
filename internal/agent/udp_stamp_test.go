package agent

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
)

// The echo's answers are time-stamped as they leave, and the next answer to the same client
// says how long the previous one took to its stamp; udp-rr's answers are not stamped (a stamp
// costs a rate transaction ~12 µs) and carry nothing but the request.
func TestUDPEchoStampsOnlyEchoAnswers(t *testing.T) {
	ln, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.LocalAddr().(*net.UDPAddr).Port
	ln.Close()
	key := probes.UDPKey("tok")
	ctx, cancel := context.WithCancel(context.Background())
	wait, err := serveUDP(ctx, port, func() []byte { return key })
	if err != nil {
		t.Fatal(err)
	}
	defer func() { cancel(); wait() }()
	c, err := net.Dial("udp", ln.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ask := func(typ byte, seq uint64) (byte, []byte) {
		t.Helper()
		b := make([]byte, 100)
		probes.SealDatagram(key, b, typ, seq)
		_ = c.SetDeadline(time.Now().Add(2 * time.Second))
		if _, err := c.Write(b); err != nil {
			t.Fatal(err)
		}
		n, err := c.Read(b)
		if err != nil {
			t.Fatal(err)
		}
		got, s, err := probes.OpenDatagram(key, b[:n])
		if err != nil || s != seq {
			t.Fatalf("answer to %d: seq %d, %v", seq, s, err)
		}
		return got, b[probes.UDPHeaderLen:n]
	}
	if typ, _ := ask(probes.UDPEcho, 1); typ != 'E' {
		t.Fatalf("echo answered with type %c", typ)
	}
	typ, payload := ask(probes.UDPEcho, 2)
	if _, late, ok := probes.DwellOf(payload); typ != 'E' || !ok || late.Seq != 1 || late.Extra <= 0 {
		t.Errorf("the second echo's answer: type %c, late %+v %v; want the first answer's transmit delay", typ, late, ok)
	}
	if typ, _ := ask(probes.UDPRate, 3); typ != 'R' {
		t.Errorf("udp-rr answered with type %c", typ)
	}
	typ, payload = ask(probes.UDPEcho, 4)
	if _, late, ok := probes.DwellOf(payload); typ != 'E' || !ok || late.Seq != 2 || late.Extra <= 0 {
		t.Errorf("after a udp-rr datagram: late %+v %v; want the second echo's, kept past the udp-rr answer", late, ok)
	}
}
