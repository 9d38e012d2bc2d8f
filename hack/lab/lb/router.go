package main

import (
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// router sets routes in the router's network namespace with ip(8), on its leg on the nodes'
// bridge (eth0).
type router struct {
	netns string
}

// set routes a to the nodes hops (equal cost), or makes it unreachable when there are none.
func (r router) set(a netip.Addr, hops []netip.Addr) error {
	args := []string{"route", "replace"}
	if len(hops) == 0 {
		args = append(args, "unreachable", hostPrefix(a))
	} else {
		args = append(args, hostPrefix(a))
		for _, h := range hops {
			args = append(args, "nexthop", "via", h.String(), "dev", "eth0")
		}
	}
	return r.ip(a, args...)
}

// del takes a's route away.
func (r router) del(a netip.Addr) error {
	return r.ip(a, "route", "del", hostPrefix(a))
}

// flush takes away every route within p.
func (r router) flush(p netip.Prefix) error {
	return r.ip(p.Addr(), "route", "flush", "root", p.String())
}

func (r router) ip(a netip.Addr, args ...string) error {
	family := "-4"
	if a.Is6() {
		family = "-6"
	}
	out, err := exec.Command("ip", append([]string{"-n", r.netns, family}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

func hostPrefix(a netip.Addr) string {
	return netip.PrefixFrom(a, a.BitLen()).String()
}
