//go:build linux

package probes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/internal/ifstat"
)

const icmpPayloadLen = 56 // iputils ping's default

// icmpSocket is an ICMP echo socket whose receive path is stamped by the kernel. Userspace
// receive times include the wake-up of the receiving thread, which on an idle virtual machine
// is tens of microseconds — more than a whole veth round trip (see benchmarks/RESULTS.md).
type icmpSocket struct {
	fd  int
	v6  bool
	raw bool
	dst unix.Sockaddr
	ip  net.IP
}

func openICMP(ip net.IP, raw bool) (*icmpSocket, error) {
	s := &icmpSocket{v6: ip.To4() == nil, raw: raw, ip: ip}
	family, proto := unix.AF_INET, unix.IPPROTO_ICMP
	if s.v6 {
		family, proto = unix.AF_INET6, unix.IPPROTO_ICMPV6
	}
	typ := unix.SOCK_DGRAM
	if raw {
		typ = unix.SOCK_RAW
	}
	fd, err := unix.Socket(family, typ|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, ErrICMPNotPermitted
		}
		return nil, fmt.Errorf("icmp socket: %w", err)
	}
	s.fd = fd
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1); err != nil {
		s.close()
		return nil, fmt.Errorf("SO_TIMESTAMPNS: %w", err)
	}
	// Wake up now and then to notice the end of the run.
	tv := unix.NsecToTimeval(int64(20 * time.Millisecond))
	if err := unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv); err != nil {
		s.close()
		return nil, err
	}
	if s.v6 {
		var a [16]byte
		copy(a[:], ip.To16())
		s.dst = &unix.SockaddrInet6{Addr: a}
	} else {
		var a [4]byte
		copy(a[:], ip.To4())
		s.dst = &unix.SockaddrInet4{Addr: a}
	}
	return s, nil
}

func (s *icmpSocket) close() { unix.Close(s.fd) }

func (s *icmpSocket) send(id, seq int) (time.Time, error) {
	var typ icmp.Type = ipv4.ICMPTypeEcho
	if s.v6 {
		typ = ipv6.ICMPTypeEchoRequest
	}
	payload := make([]byte, icmpPayloadLen)
	for i := range payload {
		payload[i] = byte(i)
	}
	b, err := (&icmp.Message{Type: typ, Body: &icmp.Echo{ID: id, Seq: seq, Data: payload}}).Marshal(nil)
	if err != nil {
		return time.Time{}, err
	}
	t := time.Now()
	if err = unix.Sendto(s.fd, b, 0, s.dst); err == nil {
		ifstat.CountOwn(int64(len(b)))
	}
	return t, err
}

// recv waits (up to SO_RCVTIMEO) for one echo reply and returns its id, sequence and kernel
// receive time. ok is false on a timeout or a packet that is not an echo reply from the target.
func (s *icmpSocket) recv(buf, oob []byte) (id, seq int, at time.Time, source string, ok bool, err error) {
	n, oobn, _, from, err := unix.Recvmsg(s.fd, buf, oob, 0)
	ifstat.CountOwn(int64(n))
	now := time.Now()
	if err != nil {
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			return 0, 0, time.Time{}, "", false, nil
		}
		return 0, 0, time.Time{}, "", false, err
	}
	at, source = ReceivedAt(oob[:oobn], now)
	if !s.fromTarget(from) {
		return 0, 0, time.Time{}, "", false, nil
	}
	b := buf[:n]
	proto := 1
	if s.v6 {
		proto = 58
	} else if s.raw && len(b) > 0 {
		ihl := int(b[0]&0x0f) * 4 // a raw IPv4 socket receives the IP header too
		if ihl > len(b) {
			return 0, 0, time.Time{}, "", false, nil
		}
		b = b[ihl:]
	}
	m, err := icmp.ParseMessage(proto, b)
	if err != nil {
		return 0, 0, time.Time{}, "", false, nil
	}
	echo, isEcho := m.Body.(*icmp.Echo)
	if !isEcho || (m.Type != ipv4.ICMPTypeEchoReply && m.Type != ipv6.ICMPTypeEchoReply) {
		return 0, 0, time.Time{}, "", false, nil
	}
	return echo.ID, echo.Seq, at, source, true, nil
}

func (s *icmpSocket) fromTarget(from unix.Sockaddr) bool {
	switch a := from.(type) {
	case *unix.SockaddrInet4:
		return net.IP(a.Addr[:]).Equal(s.ip)
	case *unix.SockaddrInet6:
		return net.IP(a.Addr[:]).Equal(s.ip)
	}
	return false
}

// ICMPRTT sends Count echo requests at Interval and reports the round trips, each measured from
// just before the send to the kernel's receive time stamp of the reply (as iputils ping does).
func ICMPRTT(ctx context.Context, spec RTTSpec) (*RTTResult, error) {
	spec.defaults()
	if spec.Count > 65535 {
		return nil, fmt.Errorf("icmp: at most 65535 probes per run")
	}
	method := MethodICMPRaw
	if !spec.Raw {
		m, err := ICMPMethod()
		if err != nil {
			return nil, err
		}
		method = m
	}
	ips, err := net.DefaultResolver.LookupIP(ctx, "ip", spec.Target)
	if err != nil || len(ips) == 0 {
		return nil, fmt.Errorf("resolving %s: %v", spec.Target, err)
	}
	sock, err := openICMP(ips[0], method == MethodICMPRaw)
	if err != nil {
		return nil, err
	}
	defer sock.close()

	// A raw socket sees every echo reply on the host: ours carry our id. An unprivileged socket
	// sees only its own (the kernel sets the id to the socket's port).
	start := time.Now()
	n, bySeq, source, err := echoRounds(ctx, spec, &icmpEcho{sock: sock, id: os.Getpid() & 0xffff})
	if err != nil {
		return nil, fmt.Errorf("icmp echo to %s: %w", spec.Target, err)
	}
	rtts := answered(bySeq)
	if fault.On(fault.RTTHalved) {
		for i := range rtts {
			rtts[i] /= 2
		}
	}
	if fault.On(fault.RTTWakeUp) {
		for i := range rtts {
			woke := time.Now()
			time.Sleep(300 * time.Microsecond)
			rtts[i] += time.Since(woke)
		}
	}
	r := rttResult(method, spec, n, rtts, time.Since(start))
	r.Target = ips[0].String()
	r.Timestamps = source
	return r, nil
}

// icmpEcho numbers ICMP echo requests by their sequence.
type icmpEcho struct {
	sock *icmpSocket
	id   int
}

func (e *icmpEcho) send(seq int) (time.Time, error) { return e.sock.send(e.id, seq) }

func (e *icmpEcho) recv(buf, oob []byte) (int, time.Time, string, bool, error) {
	rid, seq, at, src, ok, err := e.sock.recv(buf, oob)
	return seq, at, src, ok && (!e.sock.raw || rid == e.id), err
}
