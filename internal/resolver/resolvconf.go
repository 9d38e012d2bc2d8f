// Package resolver models how the C libraries' and Go's stub resolvers turn one lookup into DNS
// queries: which candidate names, in which order, which query types, which answers stop the walk
// and how many times a failing query is retried. It is pure logic; fidelity tests run the real
// resolvers against a real DNS server and compare what they sent with what the model predicts.
package resolver

import (
	"strconv"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// Config is what a stub resolver reads from /etc/resolv.conf: v1alpha1.ResolverConfig, a
// type of the reports' schema (its String method renders it as resolv.conf text).
type Config = v1alpha1.ResolverConfig

// ParseResolvConf reads resolv.conf text with the defaults all three resolvers share
// (ndots 1, attempts 2, timeout 5 s). "domain" is the one-entry form of "search"; the last of
// the two wins, as in glibc.
func ParseResolvConf(text string) Config {
	c := Config{Ndots: 1, Attempts: 2, TimeoutSeconds: 5}
	for _, line := range strings.Split(text, "\n") {
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) > 1 {
				c.Nameservers = append(c.Nameservers, f[1])
			}
		case "search":
			c.Search = append([]string(nil), f[1:]...)
		case "domain":
			if len(f) > 1 {
				c.Search = []string{f[1]}
			}
		case "options":
			for _, o := range f[1:] {
				k, v, _ := strings.Cut(o, ":")
				n, err := strconv.Atoi(v)
				switch {
				case k == "ndots" && err == nil:
					c.Ndots = min(max(n, 0), 15)
				case k == "attempts" && err == nil:
					c.Attempts = min(max(n, 1), 5)
				case k == "timeout" && err == nil:
					c.TimeoutSeconds = min(max(n, 1), 30)
				case k == "single-request" || k == "single-request-reopen":
					c.SingleRequest = true
					c.SingleRequestReopen = c.SingleRequestReopen || k == "single-request-reopen"
				case k == "use-vc":
					c.UseVC = true
				case k == "rotate":
					c.Rotate = true
				}
			}
		}
	}
	return c
}
