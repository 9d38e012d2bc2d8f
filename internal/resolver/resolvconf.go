// Package resolver models how the C libraries' and Go's stub resolvers turn one lookup into DNS
// queries: which candidate names, in which order, which query types, which answers stop the walk
// and how many times a failing query is retried. It is pure logic; fidelity tests run the real
// resolvers against a real DNS server and compare what they sent with what the model predicts.
package resolver

import (
	"strconv"
	"strings"
)

// Config is what a stub resolver reads from /etc/resolv.conf.
type Config struct {
	Nameservers []string `json:"nameservers"`
	Search      []string `json:"search"`
	Ndots       int      `json:"ndots"`
	Attempts    int      `json:"attempts"`
	// TimeoutSeconds per attempt.
	TimeoutSeconds int `json:"timeoutSeconds"`
	// SingleRequest sends A and AAAA one after the other instead of together (glibc, Go).
	SingleRequest bool `json:"singleRequest,omitempty"`
	// SingleRequestReopen (glibc) also sends the second query from a new socket; UseVC (glibc)
	// asks over TCP.
	SingleRequestReopen bool `json:"singleRequestReopen,omitempty"`
	UseVC               bool `json:"useVC,omitempty"`
	Rotate              bool `json:"rotate,omitempty"`
	// LocalDomain is the search list glibc and Go fall back to when resolv.conf has none: the
	// domain part of the host name (usually empty in a pod).
	LocalDomain string `json:"localDomain,omitempty"`
}

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

// String renders the configuration as resolv.conf text.
func (c Config) String() string {
	var b strings.Builder
	if len(c.Search) > 0 {
		b.WriteString("search " + strings.Join(c.Search, " ") + "\n")
	}
	for _, n := range c.Nameservers {
		b.WriteString("nameserver " + n + "\n")
	}
	opts := []string{"ndots:" + strconv.Itoa(c.Ndots), "attempts:" + strconv.Itoa(c.Attempts), "timeout:" + strconv.Itoa(c.TimeoutSeconds)}
	switch {
	case c.SingleRequestReopen:
		opts = append(opts, "single-request-reopen")
	case c.SingleRequest:
		opts = append(opts, "single-request")
	}
	if c.UseVC {
		opts = append(opts, "use-vc")
	}
	if c.Rotate {
		opts = append(opts, "rotate")
	}
	b.WriteString("options " + strings.Join(opts, " ") + "\n")
	return b.String()
}
