//go:build linux

package probes

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
)

// ObserveDNS captures the DNS traffic of the network namespace for d and folds the queries
// into lookups the way resolver k walks names with configuration c, as they arrive: memory
// is bounded and nothing is left to do at the deadline. Messages over TCP are reassembled from
// the segments they span and counted once.
func ObserveDNS(ctx context.Context, d time.Duration, k resolver.Kind, c resolver.Config) (*DNSObservation, error) {
	fd, err := openDNSCapture()
	if err != nil {
		return nil, err
	}
	defer unix.Close(fd)

	opened := time.Now()
	o := &observer{obs: &DNSObservation{Seconds: d.Seconds(), Start: opened.UTC()}, fold: newLookupFolder(k, c), tcp: newTCPReassembler()}
	o.fold.first = opened // a walk the opening cut shows up within idle of it, not of the first packet
	end := opened.Add(d)
	buf, oob := make([]byte, 65536), make([]byte, 128)
	for {
		// Past the end, what is still queued is read without waiting: the window is the
		// packets' arrival (the kernel's time stamps), not when this loop got to them.
		over := !time.Now().Before(end) || ctx.Err() != nil
		flags := 0
		if over {
			flags = unix.MSG_DONTWAIT
		}
		n, oobn, _, from, err := unix.Recvmsg(fd, buf, oob, flags)
		switch {
		case over && err != nil: // all read (ctx may have ended it early)
			if now := time.Now(); now.Before(end) {
				return o.finish(now), nil
			}
			return o.finish(end), nil
		case errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return nil, fmt.Errorf("capture: %w", err)
		}
		at, _ := ReceivedAt(oob[:oobn], time.Now())
		if !at.Before(end) {
			if over {
				return o.finish(end), nil
			}
			continue
		}
		if ll, ok := from.(*unix.SockaddrLinklayer); ok {
			o.packet(buf[:n], ntohs(ll.Protocol), at)
		}
	}
}

// observer counts and folds the messages of captured packets.
type observer struct {
	obs  *DNSObservation
	fold *lookupFolder
	tcp  *tcpReassembler
}

func (o *observer) packet(p []byte, proto uint16, at time.Time) {
	udp, seg := dnsPacket(p, proto)
	if udp != nil {
		o.message(udp, false, at)
		if fault.On(fault.ObserveUDPTwice) {
			o.message(udp, false, at)
		}
		return
	}
	if seg != nil && !fault.On(fault.ObserveNoTCP) {
		for _, m := range o.tcp.Segment(*seg) {
			o.message(m, true, at)
		}
	}
}

func (o *observer) message(b []byte, tcp bool, at time.Time) {
	m := new(dns.Msg)
	if m.Unpack(b) != nil || len(m.Question) != 1 {
		return
	}
	q := m.Question[0]
	name, qtype := strings.ToLower(q.Name), dns.TypeToString[q.Qtype]
	switch {
	case !m.Response && tcp:
		o.obs.Queries++
		o.obs.TCPQueries++
		o.fold.QueryTCP(at, m.Id, name, qtype)
	case !m.Response:
		o.obs.Queries++
		o.fold.Query(at, m.Id, name, qtype)
	case m.Truncated && !tcp:
		o.obs.Responses++
		o.obs.Truncated++
		o.fold.Truncated(at, m.Id, name, qtype)
	default:
		o.obs.Responses++
		if tcp {
			o.obs.TCPResponses++
		}
		if m.Rcode == dns.RcodeNameError {
			o.obs.NXDomains++
		}
		o.fold.Answer(at, m.Id, name, qtype, rcodeOf(m))
	}
}

// finish closes the window at end.
func (o *observer) finish(end time.Time) *DNSObservation {
	obs := o.obs
	obs.End = end.UTC()
	if obs.Responses > 0 {
		obs.NXShare = round3(float64(obs.NXDomains) / float64(obs.Responses))
	}
	obs.Names = o.fold.Names()
	obs.Overflow = o.fold.Overflow + o.tcp.Lost
	return obs
}

// openDNSCapture opens a packet socket on every interface that the kernel lets through only
// UDP and TCP packets to or from port 53: the filter is attached before the socket is bound,
// so no other traffic of the pod is ever copied to the agent.
func openDNSCapture() (int, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return -1, ErrCaptureNotPermitted
		}
		return -1, fmt.Errorf("packet socket: %w", err)
	}
	if err := attachFilter(fd, port53Filter); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("attaching the port-53 filter: %w", err)
	}
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(unix.ETH_P_ALL)}); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("binding the packet socket: %w", err)
	}
	tv := unix.NsecToTimeval(int64(100 * time.Millisecond))
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1) // each packet's arrival
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	return fd, nil
}

// port53Filter accepts IPv4 (unfragmented or first fragment) and IPv6 UDP or TCP packets
// whose source or destination port is 53; a SOCK_DGRAM packet socket filters from the
// network header. Jumps skip instructions: the comments give their targets.
var port53Filter = []bpf.Instruction{
	/* 0 */ bpf.LoadAbsolute{Off: 0, Size: 1},
	/* 1 */ bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 4},
	/* 2 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 4, SkipFalse: 10}, // → 13 (not IPv4)
	/* 3 */ bpf.LoadAbsolute{Off: 9, Size: 1},
	/* 4 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.IPPROTO_UDP, SkipTrue: 1}, // → 6
	/* 5 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.IPPROTO_TCP, SkipFalse: 18}, // → drop
	/* 6 */ bpf.LoadAbsolute{Off: 6, Size: 2},
	/* 7 */ bpf.JumpIf{Cond: bpf.JumpBitsSet, Val: 0x1fff, SkipTrue: 16}, // later fragment → drop
	/* 8 */ bpf.LoadMemShift{Off: 0}, // X = IPv4 header length
	/* 9 */ bpf.LoadIndirect{Off: 0, Size: 2},
	/* 10 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 53, SkipTrue: 12}, // → accept
	/* 11 */ bpf.LoadIndirect{Off: 2, Size: 2},
	/* 12 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 53, SkipTrue: 10, SkipFalse: 11}, // → accept / drop
	/* 13 */ bpf.LoadAbsolute{Off: 0, Size: 1},
	/* 14 */ bpf.ALUOpConstant{Op: bpf.ALUOpShiftRight, Val: 4},
	/* 15 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 6, SkipFalse: 8}, // → drop
	/* 16 */ bpf.LoadAbsolute{Off: 6, Size: 1},
	/* 17 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.IPPROTO_UDP, SkipTrue: 1}, // → 19
	/* 18 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: unix.IPPROTO_TCP, SkipFalse: 5}, // → drop
	/* 19 */ bpf.LoadAbsolute{Off: 40, Size: 2},
	/* 20 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 53, SkipTrue: 2}, // → accept
	/* 21 */ bpf.LoadAbsolute{Off: 42, Size: 2},
	/* 22 */ bpf.JumpIf{Cond: bpf.JumpEqual, Val: 53, SkipFalse: 1}, // → accept / drop
	/* 23 */ bpf.RetConstant{Val: 1 << 18},
	/* 24 */ bpf.RetConstant{Val: 0},
}

func attachFilter(fd int, prog []bpf.Instruction) error {
	raw, err := bpf.Assemble(prog)
	if err != nil {
		return err
	}
	filter := make([]unix.SockFilter, len(raw))
	for i, ins := range raw {
		filter[i] = unix.SockFilter{Code: ins.Op, Jt: ins.Jt, Jf: ins.Jf, K: ins.K}
	}
	return unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &unix.SockFprog{Len: uint16(len(filter)), Filter: &filter[0]})
}

// dnsPacket returns the DNS message of an IPv4/IPv6 UDP packet to or from port 53, or the
// segment of a TCP packet to or from port 53 (its messages need reassembly).
func dnsPacket(p []byte, proto uint16) ([]byte, *tcpSegment) {
	var l4 []byte
	var next byte
	var src, dst netip.Addr
	switch proto {
	case unix.ETH_P_IP:
		if len(p) < 20 {
			return nil, nil
		}
		ihl := int(p[0]&0x0f) * 4
		if ihl < 20 || len(p) < ihl {
			return nil, nil
		}
		next, l4 = p[9], p[ihl:]
		src, dst = netip.AddrFrom4([4]byte(p[12:16])), netip.AddrFrom4([4]byte(p[16:20]))
	case unix.ETH_P_IPV6:
		if len(p) < 40 {
			return nil, nil
		}
		next, l4 = p[6], p[40:]
		src, dst = netip.AddrFrom16([16]byte(p[8:24])), netip.AddrFrom16([16]byte(p[24:40]))
	default:
		return nil, nil
	}
	if len(l4) < 4 {
		return nil, nil
	}
	sport, dport := binary.BigEndian.Uint16(l4[0:2]), binary.BigEndian.Uint16(l4[2:4])
	if sport != 53 && dport != 53 {
		return nil, nil
	}
	switch next {
	case unix.IPPROTO_UDP:
		if len(l4) < 8 {
			return nil, nil
		}
		return l4[8:], nil
	case unix.IPPROTO_TCP:
		if len(l4) < 20 {
			return nil, nil
		}
		off := int(l4[12]>>4) * 4
		if off < 20 || len(l4) < off {
			return nil, nil
		}
		flags := l4[13]
		return nil, &tcpSegment{
			flow: tcpFlow{netip.AddrPortFrom(src, sport), netip.AddrPortFrom(dst, dport)},
			seq:  binary.BigEndian.Uint32(l4[4:8]),
			syn:  flags&0x02 != 0, end: flags&0x05 != 0, // SYN; FIN or RST
			payload: l4[off:],
		}
	}
	return nil, nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
func ntohs(v uint16) uint16 { return htons(v) }
