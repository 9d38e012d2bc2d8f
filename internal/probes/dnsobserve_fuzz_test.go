//go:build linux

package probes

import (
	"testing"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"
)

// Captured packets are whatever the pod's traffic holds: decoding must take any bytes.
func FuzzDNSPayload(f *testing.F) {
	ip := []byte{0x45, 0, 0, 40, 0, 0, 0, 0, 64, 17, 0, 0, 10, 0, 0, 1, 10, 0, 0, 2}
	udp := []byte{0x9c, 0x40, 0, 53, 0, 20, 0, 0}
	f.Add(append(append(ip, udp...), 0x12, 0x34, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0), true)
	f.Add([]byte{0x60, 0, 0, 0}, false)
	f.Fuzz(func(t *testing.T, p []byte, v4 bool) {
		proto := uint16(unix.ETH_P_IPV6)
		if v4 {
			proto = unix.ETH_P_IP
		}
		udp, seg := dnsPacket(p, proto)
		if udp != nil {
			var m dns.Msg
			_ = m.Unpack(udp)
		}
		if seg != nil {
			r := newTCPReassembler()
			for _, msg := range r.Segment(*seg) {
				var m dns.Msg
				_ = m.Unpack(msg)
			}
		}
	})
}
