package resolver

import "testing"

// The parser reads a file the application controls: it must take anything without panicking
// and keep its numbers in range.
func FuzzParseResolvConf(f *testing.F) {
	f.Add("search a.svc.cluster.local svc.cluster.local\nnameserver 10.96.0.10\noptions ndots:5 timeout:2 attempts:3\n")
	f.Add("options ndots:99999999999999999999 rotate single-request-reopen\ndomain x\n")
	f.Add("nameserver\n\x00\xff search")
	f.Fuzz(func(t *testing.T, text string) {
		c := ParseResolvConf(text)
		if c.Ndots < 0 || c.Ndots > 15 {
			t.Errorf("ndots %d out of resolver range for %q", c.Ndots, text)
		}
	})
}
