package agent

import (
	"bufio"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net/netip"
	"os"
	"strings"
)

// Route tables of the agent's network namespace (Linux's procfs; elsewhere absent: no gateway).
var (
	routeFile  = "/proc/self/net/route"
	route6File = "/proc/self/net/ipv6_route"
)

// isGateway says whether addr is a default gateway of this network namespace: in a pod, the
// node's own address in the pod network (the address a node's SNAT to its pods gives, with a
// bridge CNI, say).
func isGateway(addr string) bool {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return false
	}
	a = a.Unmap()
	for _, gw := range defaultGateways() {
		if gw == a {
			return true
		}
	}
	return false
}

// defaultGateways reads the default routes' next hops, IPv4 and IPv6.
func defaultGateways() []netip.Addr {
	var out []netip.Addr
	if f, err := os.Open(routeFile); err == nil {
		out = append(out, gateways4(io.LimitReader(f, 1<<20))...)
		_ = f.Close()
	}
	if f, err := os.Open(route6File); err == nil {
		out = append(out, gateways6(io.LimitReader(f, 1<<20))...)
		_ = f.Close()
	}
	return out
}

// gateways4 parses /proc/net/route: "Iface Destination Gateway …", hex in host (little-endian) order.
func gateways4(r io.Reader) []netip.Addr {
	var out []netip.Addr
	s := bufio.NewScanner(r)
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 8 || f[1] != "00000000" || f[7] != "00000000" {
			continue
		}
		b, err := hex.DecodeString(f[2])
		if err != nil || len(b) != 4 {
			continue
		}
		var a [4]byte
		binary.BigEndian.PutUint32(a[:], binary.LittleEndian.Uint32(b))
		if gw := netip.AddrFrom4(a); !gw.IsUnspecified() {
			out = append(out, gw)
		}
	}
	return out
}

// gateways6 parses /proc/net/ipv6_route: "dest plen src splen nexthop …", hex in network order.
func gateways6(r io.Reader) []netip.Addr {
	var out []netip.Addr
	s := bufio.NewScanner(r)
	for s.Scan() {
		f := strings.Fields(s.Text())
		if len(f) < 5 || f[1] != "00" || strings.Trim(f[0], "0") != "" {
			continue
		}
		b, err := hex.DecodeString(f[4])
		if err != nil || len(b) != 16 {
			continue
		}
		if gw := netip.AddrFrom16([16]byte(b)); !gw.IsUnspecified() {
			out = append(out, gw)
		}
	}
	return out
}
