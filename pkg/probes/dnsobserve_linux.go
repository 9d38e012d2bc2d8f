//go:build linux

package probes

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/sys/unix"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/resolver"
)

// ObserveDNS captures the DNS traffic of the network namespace for d and groups the queries
// into lookups the way resolver k walks names with configuration c.
func ObserveDNS(ctx context.Context, d time.Duration, k resolver.Kind, c resolver.Config) (*DNSObservation, error) {
	fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, int(htons(unix.ETH_P_ALL)))
	if err != nil {
		if errors.Is(err, unix.EPERM) || errors.Is(err, unix.EACCES) {
			return nil, ErrCaptureNotPermitted
		}
		return nil, fmt.Errorf("packet socket: %w", err)
	}
	defer unix.Close(fd)
	tv := unix.NsecToTimeval(int64(100 * time.Millisecond))
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)

	obs := &DNSObservation{Seconds: d.Seconds(), Start: time.Now().UTC()}
	end := obs.Start.Add(d)
	var queries []*capturedQuery
	open := map[string]*capturedQuery{} // id/name/type of queries awaiting a response
	buf := make([]byte, 65536)
	for time.Now().Before(end) && ctx.Err() == nil {
		n, from, err := unix.Recvfrom(fd, buf, 0)
		if err != nil {
			if errors.Is(err, unix.EAGAIN) || errors.Is(err, unix.EINTR) {
				continue
			}
			return nil, fmt.Errorf("capture: %w", err)
		}
		ll, ok := from.(*unix.SockaddrLinklayer)
		if !ok {
			continue
		}
		payload := dnsPayload(buf[:n], ntohs(ll.Protocol))
		if payload == nil {
			continue
		}
		m := new(dns.Msg)
		if m.Unpack(payload) != nil || len(m.Question) != 1 {
			continue
		}
		q := m.Question[0]
		key := fmt.Sprintf("%d/%s/%d", m.Id, strings.ToLower(q.Name), q.Qtype)
		if !m.Response {
			cq := &capturedQuery{at: time.Now(), id: m.Id, name: strings.ToLower(q.Name), qtype: dns.TypeToString[q.Qtype]}
			queries = append(queries, cq)
			open[key] = cq
			obs.Queries++
			continue
		}
		obs.Responses++
		if m.Rcode == dns.RcodeNameError {
			obs.NXDomains++
		}
		if cq := open[key]; cq != nil {
			cq.rcode = rcodeOf(m)
			delete(open, key)
		}
	}
	obs.End = time.Now().UTC()
	if obs.Responses > 0 {
		obs.NXShare = round3(float64(obs.NXDomains) / float64(obs.Responses))
	}
	obs.Names = groupLookups(queries, k, c)
	return obs, nil
}

// dnsPayload returns the DNS message of an IPv4/IPv6 UDP or TCP packet to or from port 53.
func dnsPayload(p []byte, proto uint16) []byte {
	var l4 []byte
	var next byte
	switch proto {
	case unix.ETH_P_IP:
		if len(p) < 20 {
			return nil
		}
		ihl := int(p[0]&0x0f) * 4
		if ihl < 20 || len(p) < ihl {
			return nil
		}
		next, l4 = p[9], p[ihl:]
	case unix.ETH_P_IPV6:
		if len(p) < 40 {
			return nil
		}
		next, l4 = p[6], p[40:]
	default:
		return nil
	}
	switch next {
	case unix.IPPROTO_UDP:
		if len(l4) < 8 {
			return nil
		}
		if binary.BigEndian.Uint16(l4[0:2]) != 53 && binary.BigEndian.Uint16(l4[2:4]) != 53 {
			return nil
		}
		return l4[8:]
	case unix.IPPROTO_TCP:
		if len(l4) < 20 {
			return nil
		}
		if binary.BigEndian.Uint16(l4[0:2]) != 53 && binary.BigEndian.Uint16(l4[2:4]) != 53 {
			return nil
		}
		off := int(l4[12]>>4) * 4
		if off < 20 || len(l4) < off+2 {
			return nil
		}
		data := l4[off:]
		// One message per segment, after its 2-byte length (the usual case for queries).
		if n := int(binary.BigEndian.Uint16(data[0:2])); n > 0 && len(data) >= 2+n {
			return data[2 : 2+n]
		}
	}
	return nil
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }
func ntohs(v uint16) uint16 { return htons(v) }
