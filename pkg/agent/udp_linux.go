package agent

import (
	"context"
	"errors"
	"runtime"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/probes"
)

// serveUDP answers the UDP echo and MTU probes of token holders on port (the TCP listener's
// number), until ctx ends. It reads on a thread of its own blocked in recvmsg. What a user-space
// echo adds over the kernel's own ICMP echo is that thread's wake-up (on the lab's 2-vCPU machine
// ~60 µs: benchmarks/UDP.md); each answer says how long its datagram dwelt here, from the
// kernel's receive time stamp to the answer's send, and the client takes it off the round trip
// (as a TWAMP reflector's time stamps do). It does not spin instead: an agent in the
// application's pod must not burn the pod's CPU quota. Datagrams that fail authentication get no
// answer.
func serveUDP(ctx context.Context, port int, key []byte) (func(), error) {
	fd, err := unix.Socket(unix.AF_INET6, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	family6 := err == nil
	if err != nil {
		if fd, err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
			return nil, err
		}
	}
	var sa unix.Sockaddr = &unix.SockaddrInet4{Port: port}
	if family6 {
		_ = unix.SetsockoptInt(fd, unix.IPPROTO_IPV6, unix.IPV6_V6ONLY, 0)
		sa = &unix.SockaddrInet6{Port: port}
	}
	tv := unix.NsecToTimeval(int64(100 * time.Millisecond))
	if err := errors.Join(unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv),
		unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1), unix.Bind(fd, sa)); err != nil {
		unix.Close(fd)
		return nil, err
	}
	mtu := probes.InterfaceMTU(nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer unix.Close(fd)
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		buf, oob := make([]byte, probes.UDPMaxDatagram), make([]byte, 128)
		var strangers strangerBudget
		for ctx.Err() == nil {
			n, oobn, _, from, err := unix.Recvmsg(fd, buf, oob, 0)
			if err != nil {
				continue
			}
			arrived, _ := probes.ReceivedAt(oob[:oobn], time.Now())
			typ, seq, err := probes.OpenDatagram(key, buf[:n])
			if err != nil {
				strangers.spend(arrived)
				continue
			}
			if m := probes.EchoReply(key, buf, typ, seq, n, mtu, time.Since(arrived)); m > 0 {
				_ = unix.Sendto(fd, buf[:m], 0, from)
			}
		}
	}()
	return func() { <-done }, nil
}

// strangerBudget bounds what datagrams without the token cost: at most strangersPerWindow are
// checked in each window; past that the echo sleeps out the window, and the kernel drops what
// overflows the socket's buffer. A flood then costs the pod a small share of one CPU, not a core.
type strangerBudget struct {
	windowStart time.Time
	spent       int
}

const (
	strangerWindow     = 100 * time.Millisecond
	strangersPerWindow = 1000
)

func (b *strangerBudget) spend(now time.Time) {
	if now.Sub(b.windowStart) >= strangerWindow {
		b.windowStart, b.spent = now, 0
	}
	b.spent++
	if b.spent >= strangersPerWindow {
		time.Sleep(strangerWindow - time.Since(b.windowStart))
	}
}
