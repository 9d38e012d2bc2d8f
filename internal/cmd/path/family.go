package path

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// --ip-family: which of a dual-stack path's address families the probes use.
const (
	FamilyPrimary = ""     // the destination pod's primary family (its first address)
	Family4       = "4"    // IPv4
	Family6       = "6"    // IPv6
	FamilyBoth    = "both" // each, side by side: the IPv6 probes' names end in V6Suffix
)

// V6Suffix ends the names of the probes an --ip-family both run makes over IPv6 (icmp-v6,
// tcp-1-v6); their IPv4 twins keep the plain names.
const V6Suffix = v1alpha1.IPv6ProbeSuffix

// ErrNoFamily: a pod of the path has no address of the family --ip-family asks for.
var ErrNoFamily = errors.New("no address of that family")

func checkFamilyFlag(v string) error {
	switch v {
	case FamilyPrimary, Family4, Family6, FamilyBoth:
		return nil
	}
	return fmt.Errorf("--ip-family %q: want 4, 6 or both (default: the destination pod's primary family)", v)
}

// familyAddrs are the addresses of ips that --ip-family v picks, IPv4 before IPv6 for both;
// ips are a pod's, its primary first.
func familyAddrs(v string, ips []string) ([]netip.Addr, error) {
	var v4, v6, all []netip.Addr
	for _, s := range ips {
		a, err := netip.ParseAddr(s)
		if err != nil {
			continue
		}
		a = a.Unmap()
		all = append(all, a)
		if a.Is4() {
			v4 = append(v4, a)
		} else {
			v6 = append(v6, a)
		}
	}
	pick := func(as []netip.Addr, name string) ([]netip.Addr, error) {
		if len(as) == 0 {
			return nil, fmt.Errorf("%w: no %s address (it has %s)", ErrNoFamily, name, addrList(all))
		}
		return as[:1], nil
	}
	switch v {
	case Family4:
		return pick(v4, "IPv4")
	case Family6:
		return pick(v6, "IPv6")
	case FamilyBoth:
		a4, err := pick(v4, "IPv4")
		if err != nil {
			return nil, err
		}
		a6, err := pick(v6, "IPv6")
		if err != nil {
			return nil, err
		}
		return append(a4, a6...), nil
	}
	return pick(all, "IP")
}

func addrList(as []netip.Addr) string {
	if len(as) == 0 {
		return "none yet"
	}
	s := make([]string, len(as))
	for i, a := range as {
		s[i] = a.String()
	}
	return strings.Join(s, ", ")
}

// checkFamilies refuses, before anything is created, a pair whose pods lack a family the run
// needs; it returns DST's addresses to measure, one per family.
func checkFamilies(v string, src, dst *session.Target) ([]netip.Addr, error) {
	if _, err := familyAddrs(v, session.PodIPs(src.Pod)); err != nil && v != FamilyPrimary {
		return nil, fmt.Errorf("--ip-family %s: SRC pod %s/%s: %w", v, src.Namespace, src.Pod.Name, err)
	}
	return DstAddrs(v, dst)
}

// PlannedAddrs stand for DST's addresses before they are known: one per family --ip-family v
// measures.
func PlannedAddrs(v string) []netip.Addr {
	addrs := []netip.Addr{netip.IPv4Unspecified()}
	if v == FamilyBoth {
		addrs = append(addrs, netip.IPv6Unspecified())
	}
	return addrs
}

// DstAddrs are DST's addresses to measure, one per family --ip-family v asks for; refused,
// naming the flag, where DST has no address of one.
func DstAddrs(v string, dst *session.Target) ([]netip.Addr, error) {
	addrs, err := familyAddrs(v, session.PodIPs(dst.Pod))
	if err != nil {
		flag := "--ip-family " + v
		if v == FamilyPrimary {
			flag = "DST"
		}
		return nil, fmt.Errorf("%s: pod %s/%s: %w", flag, dst.Namespace, dst.Pod.Name, err)
	}
	return addrs, nil
}

// FamiliesName says which families the addresses a run measures are of, for its report.
func FamiliesName(addrs []netip.Addr) string {
	if len(addrs) > 1 {
		return "IPv4 and IPv6 (probes named *" + V6Suffix + " over IPv6)"
	}
	return FamilyName(addrs[0])
}

// FamilyName is the schema's name of an address's family.
func FamilyName(a netip.Addr) string {
	if a.Unmap().Is4() {
		return "IPv4"
	}
	return "IPv6"
}

// ServerHost is the server agent's address of like's family (a temporary pod's own, or DST's
// for an ephemeral agent); ErrNoFamily when it has none (never another family's instead).
func ServerHost(srv *session.Agent, like netip.Addr) (string, error) {
	ips := srv.IPs
	if len(ips) == 0 {
		ips = []string{srv.IP}
	}
	if ips[0] == "" { // a dry run's agent: no pod, no address
		return "", nil
	}
	for _, s := range ips {
		if a, err := netip.ParseAddr(s); err == nil && a.Unmap().Is4() == like.Unmap().Is4() {
			return a.Unmap().String(), nil
		}
	}
	return "", fmt.Errorf("the server agent's pod %s: %w: no %s address (it has %s)", srv.Pod, ErrNoFamily, FamilyName(like), strings.Join(ips, ", "))
}

// twinV6 follows each agent-to-agent probe by its IPv6 twin: named with V6Suffix, sent to the
// server agent's IPv6 address host6. Twins run one after the other, so that both families'
// figures come from the same moment of the run (not IPv6's all after every IPv4 transfer).
func twinV6(specs []agent.ProbeSpec, host6 string) []agent.ProbeSpec {
	var out []agent.ProbeSpec
	for i, twin := range V6Twins(specs) {
		twin.Host = host6
		out = append(out, specs[i], twin)
	}
	return out
}

// V6Twins names specs as IPv6 twins, in order (V6Suffix; their targets as they are: app-port
// probes made for DST's IPv6 address, or agent probes whose host is set after).
func V6Twins(specs []agent.ProbeSpec) []agent.ProbeSpec {
	out := make([]agent.ProbeSpec, len(specs))
	for i, p := range specs {
		p.Name = p.Label() + V6Suffix
		out[i] = p
	}
	return out
}
