package agent

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// freebind lets a socket bind an address the interface does not hold yet: a new pod's IPv6
// address is "tentative" (duplicate address detection) for a moment after the pod starts, and
// a plain bind fails then. Packets reach the socket once the address is usable.
func freebind(network, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		if network == "tcp6" {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IPV6, unix.IPV6_FREEBIND, 1)
		} else {
			serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_FREEBIND, 1)
		}
	})
	if err != nil {
		return err
	}
	return serr
}
