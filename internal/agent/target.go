package agent

import (
	"net"
	"net/netip"
	"net/url"
)

// TargetAddr is the IP address probe p of job j measures: the host of its Address or URL (a
// Service's, an app port's), else its own Host (an IPv6 twin's), else the job's Host; invalid
// where that is a name, not an address.
func (j Job) TargetAddr(p ProbeSpec) netip.Addr {
	host := j.Host
	switch {
	case p.Address != "":
		host, _, _ = net.SplitHostPort(p.Address)
	case p.URL != "":
		if u, err := url.Parse(p.URL); err == nil {
			host = u.Hostname()
		}
	case p.Host != "":
		host = p.Host
	}
	a, _ := netip.ParseAddr(host)
	return a.Unmap()
}
