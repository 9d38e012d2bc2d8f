package agent

import (
	"context"
	"encoding/binary"
	"errors"
	"net/netip"
	"strconv"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/kubectl-netbench/kubectl-netbench/internal/ifstat"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
)

// serveUDP answers the UDP echo, udp-rr and MTU probes of token holders on port (the TCP
// listener's number), until ctx ends. It waits blocked in recvmsg, its goroutine not locked to
// its thread (locked, udp-rr on loopback read 27,900/s, unlocked 30,400/s, sockperf 32,000/s).
// What a user-space echo adds over the kernel's own ICMP echo is that thread's wake-up (on the
// lab's 2-vCPU machine ~60 µs: benchmarks/notes/2026-11-30-udp-results.md); each answer says
// how long its datagram dwelt here, from the kernel's receive time stamp to the answer's send, and the next answer to the same client how
// long that answer then took to its transmit time stamp; the client takes both off the round
// trip (as a TWAMP reflector's time stamps allow). It does not spin instead: an agent in the
// application's pod must not burn the pod's CPU quota. Datagrams that fail authentication get no
// answer, nor does any datagram while the key is unknown (keyOf returns nil).
func serveUDP(ctx context.Context, port int, keyOf func() []byte) (func(), error) {
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
	// Software transmit time stamps, when an answer reached the interface (best effort): reported
	// for the socket, generated only for the echo's answers (stampRequest): on every answer they
	// cost udp-rr a third of its rate (~12 µs per transaction on loopback).
	txStamps := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPING,
		unix.SOF_TIMESTAMPING_SOFTWARE|unix.SOF_TIMESTAMPING_OPT_TSONLY) == nil
	mtu := probes.InterfaceMTU(nil)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer unix.Close(fd)
		sock := datagramSocket{fd: fd}
		buf, oob, eoob := make([]byte, probes.UDPMaxDatagram), make([]byte, 128), make([]byte, 128)
		stampReq := stampRequest()
		var strangers strangerBudget
		var pending followUp
		var sealer *probes.Sealer
		for ctx.Err() == nil {
			n, oobn, from, err := sock.recv(buf, oob)
			ifstat.CountOwn(int64(n))
			if err != nil {
				continue
			}
			arrived, _ := probes.ReceivedAt(oob[:oobn], time.Now())
			sealer = sealer.For(keyOf())
			typ, seq, err := sealer.Open(buf[:n])
			if err != nil {
				strangers.spend(arrived)
				continue
			}
			var late probes.Late
			var stamp []byte
			if typ == probes.UDPEcho { // the follow-up is owed to the peer's next echo only
				late = pending.take(from)
				if txStamps {
					stamp = stampReq
				}
			}
			now := time.Now()
			if m := probes.EchoReply(sealer, buf, typ, seq, n, mtu, now.Sub(arrived), late); m > 0 {
				_, err := sock.send(buf[:m], stamp, from)
				if errors.Is(err, unix.EINVAL) && stamp != nil {
					// A kernel without per-message time stamps: answer without, and from now on
					// if that went (EINVAL again is the peer's, not the stamp's).
					if _, err = sock.send(buf[:m], nil, from); err == nil {
						txStamps = false
					}
					stamp = nil
				}
				if err == nil {
					ifstat.CountOwn(int64(m))
					if stamp != nil {
						pending.stamp(fd, eoob, from, seq, now)
					}
				}
			}
		}
	}()
	return func() { <-done }, nil
}

// datagramSocket receives and sends on a UDP socket, peers as netip.AddrPort. Through the
// standard library's calls: x/sys/unix's Recvmsg asks the kernel for the socket's protocol on
// every datagram (a getsockopt, for L2TP's addresses), a syscall more per answer.
type datagramSocket struct{ fd int }

func (s datagramSocket) recv(buf, oob []byte) (n, oobn int, from netip.AddrPort, err error) {
	n, oobn, _, sa, err := syscall.Recvmsg(s.fd, buf, oob, 0)
	switch a := sa.(type) {
	case *syscall.SockaddrInet6:
		addr := netip.AddrFrom16(a.Addr)
		if a.ZoneId != 0 { // a link-local peer: answered through its interface
			addr = addr.WithZone(strconv.FormatUint(uint64(a.ZoneId), 10))
		}
		from = netip.AddrPortFrom(addr, uint16(a.Port))
	case *syscall.SockaddrInet4:
		from = netip.AddrPortFrom(netip.AddrFrom4(a.Addr), uint16(a.Port))
	}
	return n, oobn, from, err
}

// send answers to, in the socket's family (an IPv4 peer of a dual-stack socket is IPv4-mapped).
func (s datagramSocket) send(b, oob []byte, to netip.AddrPort) (int, error) {
	zone, _ := strconv.ParseUint(to.Addr().Zone(), 10, 32)
	var sa syscall.Sockaddr = &syscall.SockaddrInet6{Addr: to.Addr().As16(), Port: int(to.Port()), ZoneId: uint32(zone)}
	if to.Addr().Is4() {
		sa = &syscall.SockaddrInet4{Addr: to.Addr().As4(), Port: int(to.Port())}
	}
	return syscall.SendmsgN(s.fd, b, oob, sa, 0)
}

// stampRequest is the control message asking for one datagram's software transmit time stamp
// (SO_TIMESTAMPING per message, Linux ≥ 4.13).
func stampRequest() []byte {
	b := make([]byte, unix.CmsgSpace(4))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = unix.SOL_SOCKET, unix.SO_TIMESTAMPING
	h.SetLen(unix.CmsgLen(4))
	binary.NativeEndian.PutUint32(b[unix.CmsgLen(0):], unix.SOF_TIMESTAMPING_TX_SOFTWARE)
	return b
}

// followUp is the last answer's transmit delay, owed to its peer in the next answer: the kernel
// stamps an answer as it reaches the interface, after it was sent (veth stamps it within the
// sendto). ~6 µs on the lab, mostly the send path of a just-woken CPU.
type followUp struct {
	peer netip.AddrPort
	late probes.Late
	ok   bool
}

func (f *followUp) take(peer netip.AddrPort) probes.Late {
	if !f.ok || f.peer != peer {
		return probes.Late{}
	}
	f.ok = false
	return f.late
}

// stamp reads the transmit stamp of the answer just sent (without waiting) and keeps it for
// the peer's next answer; older stamps left in the error queue are read and dropped.
func (f *followUp) stamp(fd int, oob []byte, peer netip.AddrPort, seq uint64, sent time.Time) {
	f.ok = false
	for range 4 {
		_, oobn, _, _, err := unix.Recvmsg(fd, nil, oob, unix.MSG_ERRQUEUE|unix.MSG_DONTWAIT)
		if err != nil {
			return
		}
		if tx, ok := probes.TransmitStamp(oob[:oobn]); ok && tx.After(sent) {
			f.peer, f.late, f.ok = peer, probes.Late{Seq: seq, Extra: tx.Sub(sent)}, true
		}
	}
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
