//go:build linux

package probes

import (
	"encoding/binary"
	"errors"
	"net"
	"strconv"
	"testing"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

func ipv4Packet(proto byte, ihl int, frag uint16, src, dst uint16) []byte {
	p := make([]byte, ihl*4+20)
	p[0] = 0x40 | byte(ihl)
	binary.BigEndian.PutUint16(p[6:], frag)
	p[9] = proto
	binary.BigEndian.PutUint16(p[ihl*4:], src)
	binary.BigEndian.PutUint16(p[ihl*4+2:], dst)
	return p
}

func ipv6Packet(next byte, src, dst uint16) []byte {
	p := make([]byte, 60)
	p[0] = 0x60
	p[6] = next
	binary.BigEndian.PutUint16(p[40:], src)
	binary.BigEndian.PutUint16(p[42:], dst)
	return p
}

// The kernel filter lets through exactly the packets the decoder wants.
func TestPort53Filter(t *testing.T) {
	vm, err := bpf.NewVM(port53Filter)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		packet []byte
		want   bool
	}{
		{"v4 udp query", ipv4Packet(unix.IPPROTO_UDP, 5, 0, 40000, 53), true},
		{"v4 udp answer", ipv4Packet(unix.IPPROTO_UDP, 5, 0, 53, 40000), true},
		{"v4 tcp query", ipv4Packet(unix.IPPROTO_TCP, 5, 0, 40000, 53), true},
		{"v4 with options", ipv4Packet(unix.IPPROTO_UDP, 7, 0, 40000, 53), true},
		{"v4 first fragment (more fragments set)", ipv4Packet(unix.IPPROTO_UDP, 5, 0x2000, 53, 40000), true},
		{"v4 later fragment", ipv4Packet(unix.IPPROTO_UDP, 5, 0x0010, 53, 40000), false},
		{"v4 http", ipv4Packet(unix.IPPROTO_TCP, 5, 0, 40000, 80), false},
		{"v4 icmp", ipv4Packet(unix.IPPROTO_ICMP, 5, 0, 53, 53), false},
		{"v6 udp query", ipv6Packet(unix.IPPROTO_UDP, 40000, 53), true},
		{"v6 tcp answer", ipv6Packet(unix.IPPROTO_TCP, 53, 40000), true},
		{"v6 udp other", ipv6Packet(unix.IPPROTO_UDP, 40000, 443), false},
		{"v6 icmp", ipv6Packet(unix.IPPROTO_ICMPV6, 53, 53), false},
		{"not ip", []byte{0x20, 0, 0, 0, 0, 0, 0, 0, 0, 0}, false},
		{"truncated v4", []byte{0x45, 0, 0}, false},
	} {
		n, err := vm.Run(tc.packet)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if got := n > 0; got != tc.want {
			t.Errorf("%s: accepted %v, want %v", tc.name, got, tc.want)
		}
	}
}

// On a real packet socket, a datagram to port 53 on loopback is delivered and one to another
// port is not.
func TestDNSCaptureSocketFilters(t *testing.T) {
	fd, err := openDNSCapture()
	if errors.Is(err, ErrCaptureNotPermitted) {
		t.Skip("needs CAP_NET_RAW")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	send := func(port int, payload string) {
		c, err := net.Dial("udp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		_, _ = c.Write([]byte(payload))
	}
	send(9, "netbench-filter-other")
	send(53, "netbench-filter-dns")
	buf := make([]byte, 65536)
	deadline := time.Now().Add(2 * time.Second)
	var sawDNS bool
	for time.Now().Before(deadline) && !sawDNS {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			continue
		}
		switch string(udpPayload(buf[:n])) {
		case "netbench-filter-other":
			t.Fatal("the packet to port 9 passed the filter")
		case "netbench-filter-dns":
			sawDNS = true
		}
	}
	if !sawDNS {
		t.Fatal("the packet to port 53 was not captured")
	}
}

func udpPayload(p []byte) []byte {
	if len(p) < 28 || p[0]>>4 != 4 {
		return nil
	}
	return p[int(p[0]&0x0f)*4+8:]
}
