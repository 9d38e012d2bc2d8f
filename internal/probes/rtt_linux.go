//go:build linux

package probes

import (
	"net"
	"time"

	"golang.org/x/sys/unix"
)

// handshakeRTT is the kernel's smoothed RTT right after the handshake: its only sample then is
// the SYN → SYN-ACK round trip.
func handshakeRTT(c *net.TCPConn) (time.Duration, bool) {
	raw, err := c.SyscallConn()
	if err != nil {
		return 0, false
	}
	var info *unix.TCPInfo
	var gerr error
	if err := raw.Control(func(fd uintptr) {
		info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || gerr != nil || info == nil || info.Rtt == 0 {
		return 0, false
	}
	return time.Duration(info.Rtt) * time.Microsecond, true
}
