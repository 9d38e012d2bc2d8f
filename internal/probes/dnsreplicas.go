package probes

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// DNSReplica is one server behind the pod's nameserver (a CoreDNS pod behind kube-dns), to be
// asked directly.
type DNSReplica struct {
	Address string `json:"address"`
	Pod     string `json:"pod,omitempty"`
	Node    string `json:"node,omitempty"`
	Zone    string `json:"zone,omitempty"`
}

// DNSReplicaLatency is how fast one replica (or the nameserver itself) answered the same query.
type DNSReplicaLatency struct {
	DNSReplica
	Latency Latency `json:"latency"`
	// Errors counts queries that got no answer within the timeout.
	Errors int `json:"errors,omitempty"`
}

// DNSReplicaView is the same query asked of the nameserver and of each replica behind it, in
// turns, with caches warm.
type DNSReplicaView struct {
	// Query is the name asked (type A): the first name's answering candidate.
	Query      string              `json:"query"`
	Nameserver DNSReplicaLatency   `json:"nameserver"`
	Replicas   []DNSReplicaLatency `json:"replicas"`
}

// MaxDNSReplicas bounds how many replicas one probe asks.
const MaxDNSReplicas = 64

// maxSilent is how many queries in a row a server that never answered may leave unanswered.
const maxSilent = 3

// timeReplicas asks the nameserver and every replica for query repeats times each, one query at a
// time, going round the servers so that drift hits them alike; the first round warms the caches
// and is not counted. A server that has not answered maxSilent queries in a row, and never
// answered, is not asked again (a replica a NetworkPolicy hides would cost a timeout per round).
func timeReplicas(ctx context.Context, c *dns.Client, nameserver string, replicas []DNSReplica, query string, repeats int) *DNSReplicaView {
	servers := append([]DNSReplica{{Address: nameserver}}, replicas...)
	samples := make([][]time.Duration, len(servers))
	errs := make([]int, len(servers))
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(query), dns.TypeA)
	m.RecursionDesired = true
	for round := 0; round <= repeats && ctx.Err() == nil; round++ {
		for i, s := range servers {
			if errs[i] >= maxSilent && len(samples[i]) == 0 {
				continue
			}
			_, rtt, err := c.ExchangeContext(ctx, m, net.JoinHostPort(s.Address, "53"))
			switch {
			case err != nil:
				errs[i]++
			case round == 0:
			default:
				samples[i] = append(samples[i], rtt)
			}
		}
	}
	view := &DNSReplicaView{Query: dns.Fqdn(query)}
	for i, s := range servers {
		l := DNSReplicaLatency{DNSReplica: s, Latency: LatencyFromSamples(samples[i]), Errors: errs[i]}
		if i == 0 {
			view.Nameserver = l
			continue
		}
		view.Replicas = append(view.Replicas, l)
	}
	return view
}

// replicaQuery is the name to ask every replica: the first name's answering candidate, else the
// name itself made absolute.
func replicaQuery(r *DNSResult) string {
	if len(r.Names) == 0 {
		return ""
	}
	n := r.Names[0]
	for _, v := range n.Variants {
		if v.AnsweredBy != "" {
			return v.AnsweredBy
		}
	}
	return strings.TrimSuffix(n.Name, ".") + "."
}
