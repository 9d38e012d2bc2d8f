package egress

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
)

// An icmp://HOST destination (or a bare address) has no port to connect to: it is looked up
// Count times through the client's resolver, then sent Count ICMP echo requests, Interval apart,
// each timed from just before its send to the kernel's receive time stamp of its reply (as
// iputils ping times them), to the first address of the first lookup.

// Bare is the destination an address alone stands for (icmp://ADDRESS), and whether raw is one.
func Bare(raw string) (string, bool) {
	a, err := netip.ParseAddr(raw)
	if err != nil || a.Zone() != "" {
		return raw, false
	}
	if a.Is6() && !a.Is4In6() {
		return "icmp://[" + a.String() + "]", true
	}
	return "icmp://" + a.Unmap().String(), true
}

// ErrNotPermitted: this process may not send ICMP echo requests.
var ErrNotPermitted = errors.New("ICMP echo not permitted here")

// icmp looks the host up Count times, then echoes to the address of the first lookup.
func (m *meter) icmp(ctx context.Context) error {
	if _, err := probes.ICMPMethod(); err != nil {
		return fmt.Errorf("%w: the pod's net.ipv4.ping_group_range does not hold the agent's group, and the agent has no CAP_NET_RAW (it never does in an ephemeral container): allow the group in the pod's sysctls, or measure from a temporary pod (--mode pod) where the cluster allows that: %w", ErrNotPermitted, err)
	}
	addr, err := m.lookups(ctx)
	if err != nil {
		return err
	}
	r, err := probes.ICMPRTT(ctx, probes.RTTSpec{Target: addr, Count: m.spec.Count, Interval: m.spec.Interval, Timeout: m.spec.Timeout})
	switch {
	case err != nil:
		return classify(ctx, m.t, m.spec.Timeout, err)
	case r.Received == 0:
		return fmt.Errorf("%w: %s answered none of %d ICMP echo requests within %s each", ErrUnreachable, addr, r.Sent, m.spec.Timeout)
	}
	m.echo, m.remote = r, addr
	return nil
}

// lookups times Count lookups of the host (none for an address) and returns the first one's
// first address.
func (m *meter) lookups(ctx context.Context) (string, error) {
	if a, err := netip.ParseAddr(m.t.host); err == nil {
		return a.String(), nil
	}
	var first string
	for i := range m.spec.Count {
		if err := pause(ctx, i, m.spec.Interval); err != nil {
			return "", err
		}
		lctx, cancel := context.WithTimeout(ctx, m.spec.Timeout)
		start := time.Now()
		ips, err := m.spec.Resolver.LookupIP(lctx, "ip", m.t.host)
		took := time.Since(start)
		cancel()
		if err != nil {
			return "", classify(ctx, m.t, m.spec.Timeout, err)
		}
		m.dns = append(m.dns, took)
		if first == "" {
			for _, ip := range ips {
				m.addrs = append(m.addrs, ip.String())
			}
			first = ips[0].String()
		}
	}
	return first, nil
}
