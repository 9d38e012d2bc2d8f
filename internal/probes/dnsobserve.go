package probes

import (
	"errors"

	"github.com/miekg/dns"

	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// ErrCaptureNotPermitted means the process may not open a packet socket (it needs CAP_NET_RAW).
var ErrCaptureNotPermitted = errors.New("capturing packets needs CAP_NET_RAW")

// DNSObservedName is v1alpha1.DNSObservedName, a type of the reports' schema.
type DNSObservedName = v1alpha1.DNSObservedName

// DNSObservation is v1alpha1.DNSObservation, a type of the reports' schema.
type DNSObservation = v1alpha1.DNSObservation

func rcodeOf(m *dns.Msg) resolver.Rcode {
	switch m.Rcode {
	case dns.RcodeNameError:
		return resolver.NXDomain
	case dns.RcodeSuccess:
		for _, a := range m.Answer {
			if t := a.Header().Rrtype; t == dns.TypeA || t == dns.TypeAAAA {
				return resolver.NoError
			}
		}
		return resolver.NoData
	}
	return resolver.ServFail
}
