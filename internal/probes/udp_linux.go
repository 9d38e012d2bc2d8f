package probes

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/netip"
	"os"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/internal/ifstat"
)

// Methods of the UDP probes.
const (
	MethodUDPEcho = "udp-echo"
	MethodUDPDF   = "udp-df-probe"
)

// udpSocket is a UDP socket connected to an agent server, stamped by the kernel on receive.
type udpSocket struct {
	fd   int
	v6   bool
	key  []byte
	out  []byte
	peer netip.AddrPort
	// dwell is, per sequence, the server's reported dwell; late the follow-ups: the time from the
	// server's clock reading to its answer's transmit stamp.
	dwell, late map[int]time.Duration
}

func dialUDP(ctx context.Context, target string, key []byte, size int) (*udpSocket, error) {
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		return nil, fmt.Errorf("udp target %q: %w", target, err)
	}
	ips, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(ips) == 0 {
		return nil, fmt.Errorf("resolving %s: %v", host, err)
	}
	p, err := net.DefaultResolver.LookupPort(ctx, "udp", port)
	if err != nil {
		return nil, err
	}
	s := &udpSocket{v6: !ips[0].Unmap().Is4(), key: key, out: make([]byte, max(size, UDPHeaderLen)), peer: netip.AddrPortFrom(ips[0].Unmap(), uint16(p)),
		dwell: map[int]time.Duration{}, late: map[int]time.Duration{}}
	family := unix.AF_INET
	if s.v6 {
		family = unix.AF_INET6
	}
	if s.fd, err = unix.Socket(family, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0); err != nil {
		return nil, fmt.Errorf("udp socket: %w", err)
	}
	tv := unix.NsecToTimeval(int64(20 * time.Millisecond)) // wake up now and then to notice the end
	if err := errors.Join(unix.SetsockoptInt(s.fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1),
		unix.SetsockoptTimeval(s.fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv),
		unix.Connect(s.fd, sockaddr(s.peer))); err != nil {
		s.close()
		return nil, fmt.Errorf("udp socket to %s: %w", s.peer, err)
	}
	return s, nil
}

func sockaddr(ap netip.AddrPort) unix.Sockaddr {
	if ap.Addr().Is4() {
		return &unix.SockaddrInet4{Addr: ap.Addr().As4(), Port: int(ap.Port())}
	}
	return &unix.SockaddrInet6{Addr: ap.Addr().As16(), Port: int(ap.Port())}
}

func (s *udpSocket) close() { unix.Close(s.fd) }

func (s *udpSocket) sendTyped(typ byte, seq, size int) (time.Time, error) {
	b := s.out[:max(size, UDPHeaderLen)]
	SealDatagram(s.key, b, typ, uint64(seq))
	t := time.Now()
	_, err := unix.Write(s.fd, b)
	return t, err
}

func (s *udpSocket) send(seq int) (time.Time, error) { return s.sendTyped(UDPEcho, seq, len(s.out)) }

// recvTyped waits up to the receive timeout for an authenticated answer of type typ.
func (s *udpSocket) recvTyped(buf, oob []byte, typ byte) (int, []byte, time.Time, string, bool, error) {
	n, oobn, _, _, err := unix.Recvmsg(s.fd, buf, oob, 0)
	ifstat.CountOwn(int64(n))
	now := time.Now()
	if err != nil {
		if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
			return 0, nil, now, "", false, nil
		}
		return 0, nil, now, "", false, err
	}
	at, source := ReceivedAt(oob[:oobn], now)
	t, seq, err := OpenDatagram(s.key, buf[:n])
	if err != nil || t != typ || seq > math.MaxInt32 {
		return 0, nil, at, source, false, nil
	}
	return int(seq), buf[UDPHeaderLen:n], at, source, true, nil
}

// recv returns an answer's arrival less the server's dwell: when it would have arrived had the
// server answered at once, as the kernel answers ICMP echo.
func (s *udpSocket) recv(buf, oob []byte) (int, time.Time, string, bool, error) {
	seq, payload, at, src, ok, err := s.recvTyped(buf, oob, 'E')
	if ok {
		d, late, hasLate := DwellOf(payload)
		s.dwell[seq] = d
		if !fault.On(fault.UDPDwellKept) {
			at = at.Add(-d)
		}
		if hasLate && late.Extra < time.Second && late.Seq < math.MaxInt32 {
			s.late[int(late.Seq)] = late.Extra
		}
	}
	return seq, at, src, ok, err
}

// UDPSpec configures the UDP probe: RTTSpec's count, interval and timeout, the datagram size
// and the run token's key.
type UDPSpec struct {
	RTTSpec
	Size int
	Key  []byte
}

// UDPRTT sends Count authenticated datagrams of Size bytes at Interval to an agent server's UDP
// echo and reports round trips (kernel receive time stamps, less the time each datagram dwelt in
// the server, which it reports), loss and the RFC 3550 jitter of successive round trips.
func UDPRTT(ctx context.Context, spec UDPSpec) (*RTTResult, error) {
	r, _, err := udpEcho(ctx, spec)
	return r, err
}

// udpEcho is UDPRTT with the answered round trips, in the order sent.
func udpEcho(ctx context.Context, spec UDPSpec) (*RTTResult, []time.Duration, error) {
	spec.defaults()
	if spec.Size < UDPHeaderLen || spec.Size > UDPMaxDatagram {
		return nil, nil, fmt.Errorf("udp datagram size %d: want %d-%d bytes", spec.Size, UDPHeaderLen, UDPMaxDatagram)
	}
	sock, err := dialUDP(ctx, spec.Target, spec.Key, spec.Size)
	if err != nil {
		return nil, nil, err
	}
	defer sock.close()
	start := time.Now()
	n, bySeq, source, err := echoRounds(ctx, spec.RTTSpec, sock)
	if err != nil {
		return nil, nil, fmt.Errorf("udp echo to %s: %w", sock.peer, err)
	}
	var dwells []time.Duration
	for seq, d := range sock.dwell {
		if extra, ok := sock.late[seq]; ok && seq < len(bySeq) && bySeq[seq] > extra {
			bySeq[seq] -= extra
			d += extra
		}
		dwells = append(dwells, d)
	}
	rtts := answered(bySeq)
	if len(rtts) == 0 && n > 0 {
		return nil, nil, fmt.Errorf("no answer to any of %d datagrams from %s: UDP to the agent's port does not get through (or the token is wrong): %w", n, sock.peer, os.ErrDeadlineExceeded)
	}
	r := rttResult(MethodUDPEcho, spec.RTTSpec, n, rtts, time.Since(start))
	r.Timestamps, r.JitterMicros = source, jitter(bySeq)
	dwell := LatencyFromSamples(dwells)
	r.ServerDwell = &dwell
	return r, rtts, nil
}

// jitter is RFC 3550's interarrival jitter estimator over the round trips of successive
// answered datagrams: J += (|D| − J) / 16.
func jitter(bySeq []time.Duration) float64 {
	var j float64
	prev := time.Duration(-1)
	for _, d := range bySeq {
		if d < 0 {
			continue
		}
		if prev >= 0 {
			j += (math.Abs(float64(d-prev)) - j) / 16
		}
		prev = d
	}
	return math.Round(j/1e3*1000) / 1000
}
