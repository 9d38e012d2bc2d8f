package probes

import (
	"context"
	"net"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// DNSReplica is v1alpha1.DNSReplica, a type of the reports' schema.
type DNSReplica = v1alpha1.DNSReplica

// DNSReplicaLatency is v1alpha1.DNSReplicaLatency, a type of the reports' schema.
type DNSReplicaLatency = v1alpha1.DNSReplicaLatency

// DNSReplicaView is v1alpha1.DNSReplicaView, a type of the reports' schema.
type DNSReplicaView = v1alpha1.DNSReplicaView

// MaxDNSReplicas bounds how many replicas one probe asks.
const MaxDNSReplicas = 64

// maxSilent is how many queries in a row a server that never answered may leave unanswered.
const maxSilent = 3

// timeReplicas asks the nameserver and every replica for query (of type qtype) repeats times each, one query at a
// time, going round the servers so that drift hits them alike; the first round warms the caches
// and is not counted. A server that has not answered maxSilent queries in a row, and never
// answered, is not asked again (a replica a NetworkPolicy hides would cost a timeout per round).
func timeReplicas(ctx context.Context, c *dns.Client, nameserver string, replicas []DNSReplica, query, qtype string, repeats int) *DNSReplicaView {
	servers := append([]DNSReplica{{Address: nameserver}}, replicas...)
	samples := make([][]time.Duration, len(servers))
	errs := make([]int, len(servers))
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(query), dns.StringToType[qtype])
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
	view := &DNSReplicaView{Query: dns.Fqdn(query), QueryType: qtype}
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
