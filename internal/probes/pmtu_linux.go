package probes

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"

	"golang.org/x/sys/unix"
)

// pmtuTries is how often each size is sent before it counts as not crossing the path.
const pmtuTries = 3

// PathMTU finds the largest IP packet that reaches the agent server at target with "don't
// fragment" set: authenticated UDP datagrams padded to each size (binary search between the
// protocol's minimum and the local interface's MTU), each answered by the server with a short
// datagram. A size counts as crossing once the server answers it; a size the path drops (a
// black hole) or refuses with ICMP "fragmentation needed" gets no answer in pmtuTries × timeout.
func PathMTU(ctx context.Context, target string, key []byte, timeout time.Duration) (*PMTUResult, error) {
	sock, err := dialUDP(ctx, target, key, UDPMaxDatagram)
	if err != nil {
		return nil, err
	}
	defer sock.close()
	level, opt, val, hdr, minMTU := unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_PROBE, 28, 576
	if sock.v6 {
		level, opt, val, hdr, minMTU = unix.IPPROTO_IPV6, unix.IPV6_MTU_DISCOVER, unix.IPV6_PMTUDISC_PROBE, 48, 1280
	}
	if err := unix.SetsockoptInt(sock.fd, level, opt, val); err != nil {
		return nil, fmt.Errorf("setting don't-fragment: %w", err)
	}
	r := &PMTUResult{Method: MethodUDPDF, LocalMTU: localMTU(sock.fd)}
	if r.LocalMTU < minMTU {
		return nil, fmt.Errorf("the local interface's MTU %d is below the minimum %d", r.LocalMTU, minMTU)
	}
	p := &pmtuProber{sock: sock, hdr: hdr, timeout: timeout, r: r, buf: make([]byte, UDPMaxDatagram), oob: make([]byte, 128)}
	lo, hi := minMTU, min(r.LocalMTU, UDPMaxDatagram)
	if ok, err := p.crosses(ctx, hi); err != nil || ok {
		r.PathMTU = hi
		return p.done(err)
	}
	if ok, err := p.crosses(ctx, lo); err != nil || !ok {
		return nil, errors.Join(err, fmt.Errorf("no answer from %s even at %d bytes: UDP to the agent's port does not get through: %w", sock.peer, lo, os.ErrDeadlineExceeded))
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		ok, err := p.crosses(ctx, mid)
		if err != nil {
			return nil, err
		}
		if ok {
			lo = mid
		} else {
			hi = mid
		}
	}
	r.PathMTU = lo
	if fault.On(fault.PMTUOffByOne) {
		r.PathMTU = hi
	}
	return p.done(nil)
}

type pmtuProber struct {
	sock     *udpSocket
	hdr      int
	timeout  time.Duration
	r        *PMTUResult
	seq      int
	buf, oob []byte
}

// crosses sends an IP packet of size bytes up to pmtuTries times and says whether the server
// answered one.
func (p *pmtuProber) crosses(ctx context.Context, size int) (bool, error) {
	for try := 0; try < pmtuTries; try++ {
		if err := ctx.Err(); err != nil {
			return false, err
		}
		p.seq++
		p.r.Probes++
		if _, err := p.sock.sendTyped(UDPMTUProbe, p.seq, size-p.hdr); err != nil {
			if errors.Is(err, unix.EMSGSIZE) {
				return false, nil // larger than the kernel lets out: the local MTU
			}
			if errors.Is(err, unix.ECONNREFUSED) {
				return false, fmt.Errorf("udp to %s: %w", p.sock.peer, err)
			}
			continue
		}
		deadline := time.Now().Add(p.timeout)
		for time.Now().Before(deadline) {
			seq, body, _, _, ok, err := p.sock.recvTyped(p.buf, p.oob, 'M')
			if errors.Is(err, unix.EMSGSIZE) {
				// A hop answered with ICMP "fragmentation needed": the size does not cross.
				p.r.FragNeeded = true
				return false, nil
			}
			if err != nil && !errors.Is(err, unix.ECONNREFUSED) {
				return false, err
			}
			if ok && seq == p.seq && len(body) >= 8 {
				p.r.RemoteMTU = int(binary.BigEndian.Uint32(body[4:8]))
				return true, nil
			}
		}
	}
	return false, nil
}

func (p *pmtuProber) done(err error) (*PMTUResult, error) {
	if err != nil {
		return nil, err
	}
	level, opt := unix.IPPROTO_IP, unix.IP_MTU
	if p.sock.v6 {
		level, opt = unix.IPPROTO_IPV6, unix.IPV6_MTU
	}
	if v, err := unix.GetsockoptInt(p.sock.fd, level, opt); err == nil {
		p.r.KernelPMTU = v
	}
	return p.r, nil
}

// localMTU is the MTU of the interface holding the socket's local address.
func localMTU(fd int) int {
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return 0
	}
	var ip net.IP
	switch a := sa.(type) {
	case *unix.SockaddrInet4:
		ip = a.Addr[:]
	case *unix.SockaddrInet6:
		ip = a.Addr[:]
	}
	return InterfaceMTU(ip)
}

// InterfaceMTU is the MTU of the interface holding ip, or, for nil, the largest MTU among the
// up, non-loopback interfaces (a pod's eth0).
func InterfaceMTU(ip net.IP) int {
	ifs, err := net.Interfaces()
	if err != nil {
		return 0
	}
	best := 0
	for _, i := range ifs {
		if i.Flags&net.FlagUp == 0 {
			continue
		}
		if ip == nil {
			if i.Flags&net.FlagLoopback == 0 {
				best = max(best, i.MTU)
			}
			continue
		}
		addrs, _ := i.Addrs()
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
				return i.MTU
			}
		}
	}
	return best
}
