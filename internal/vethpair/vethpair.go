// Package vethpair makes two network namespaces joined by a veth pair: the project's own test
// hosts on this machine, for probe tests and benchmarks that need a real network path (not
// loopback). It needs root and iproute2.
package vethpair

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Pair is two namespaces, A and B, with addresses AddrA and AddrB on a veth link.
type Pair struct {
	NSA, NSB     string
	AddrA, AddrB string
}

// Available reports why a pair cannot be made here, or "" when it can.
func Available() string {
	if os.Geteuid() != 0 {
		return "needs root to create network namespaces"
	}
	if _, err := exec.LookPath("ip"); err != nil {
		return "needs iproute2 (ip)"
	}
	if _, err := exec.LookPath("nsenter"); err != nil {
		return "needs nsenter (util-linux)"
	}
	return ""
}

// New creates the pair. name must be short (it prefixes interface names); subnet is the third
// octet of 10.213.X.0/24, so concurrent pairs do not share addresses.
func New(name string, subnet int) (*Pair, error) {
	p := &Pair{
		NSA: name + "-a", NSB: name + "-b",
		AddrA: fmt.Sprintf("10.213.%d.1", subnet), AddrB: fmt.Sprintf("10.213.%d.2", subnet),
	}
	p.Close() // leftovers of an interrupted earlier run
	va, vb := name+"a", name+"b"
	steps := [][]string{
		{"netns", "add", p.NSA},
		{"netns", "add", p.NSB},
		{"link", "add", va, "netns", p.NSA, "type", "veth", "peer", "name", vb, "netns", p.NSB},
		{"-n", p.NSA, "addr", "add", p.AddrA + "/24", "dev", va},
		{"-n", p.NSB, "addr", "add", p.AddrB + "/24", "dev", vb},
		{"-n", p.NSA, "link", "set", va, "up"},
		{"-n", p.NSB, "link", "set", vb, "up"},
		{"-n", p.NSA, "link", "set", "lo", "up"},
		{"-n", p.NSB, "link", "set", "lo", "up"},
	}
	for _, s := range steps {
		if out, err := exec.Command("ip", s...).CombinedOutput(); err != nil {
			p.Close()
			return nil, fmt.Errorf("ip %s: %v: %s", strings.Join(s, " "), err, strings.TrimSpace(string(out)))
		}
	}
	return p, nil
}

// SetPingGroupRange sets net.ipv4.ping_group_range in namespace ns: "0 2147483647" lets every
// group open unprivileged ICMP sockets (as most distributions do), "1 0" lets none (a new
// namespace's default).
func SetPingGroupRange(ns, groupRange string) error {
	// /proc/sys/net shows the namespace of the process that opens it.
	out, err := Command(ns, "sh", "-c", "echo \""+groupRange+"\" > /proc/sys/net/ipv4/ping_group_range").CombinedOutput()
	if err != nil {
		return fmt.Errorf("setting ping_group_range in %s: %v: %s", ns, err, out)
	}
	return nil
}

// Command returns a command to be run inside namespace ns.
func Command(ns string, name string, args ...string) *exec.Cmd {
	return exec.Command("nsenter", append([]string{"--net=/run/netns/" + ns, name}, args...)...)
}

// CommandAs is Command run as uid:gid (without capabilities, like a non-root container).
func CommandAs(ns string, uid int, name string, args ...string) *exec.Cmd {
	id := fmt.Sprint(uid)
	return exec.Command("nsenter", append([]string{"--net=/run/netns/" + ns, "--setuid", id, "--setgid", id, name}, args...)...)
}

// Close deletes both namespaces (the veth goes with them). It is safe to call twice.
func (p *Pair) Close() {
	for _, ns := range []string{p.NSA, p.NSB} {
		_ = exec.Command("ip", "netns", "delete", ns).Run()
	}
}
