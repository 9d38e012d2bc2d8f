package egress

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// An address alone stands for icmp://ADDRESS; anything else is not one.
func TestBare(t *testing.T) {
	for in, want := range map[string]string{"198.51.100.10": "icmp://198.51.100.10", "2001:db8::1": "icmp://[2001:db8::1]",
		"::ffff:10.0.0.1": "icmp://10.0.0.1", "fe80::1%eth0": "", "app": "", "10.0.0.1:80": "", "deploy/x": ""} {
		got, ok := Bare(in)
		if (want == "") == ok || ok && got != want {
			t.Errorf("Bare(%q) = %q, %v; want %q", in, got, ok, want)
		}
		if ok {
			if err := Check(got); err != nil {
				t.Errorf("Check(%q): %v", got, err)
			}
		}
	}
	for _, bad := range []string{"icmp://h:7", "icmp://h/x", "icmp://h/", "icmp://h#f", "icmp://h?q=1", "icmp://", "icmp://[fe80::1%25lo]",
		"icmp://127.0.0.1", "icmp://[::1]", "icmp://0.0.0.0", "icmp://224.0.0.1", "icmp://169.254.169.254", "icmp://[fe80::1]"} {
		if err := Check(bad); !errors.Is(err, ErrTarget) {
			t.Errorf("Check(%q) = %v, want ErrTarget", bad, err)
		}
	}
}

// icmpOrSkip measures spec, skipping (with the reason) where this process may not send ICMP echo.
func icmpOrSkip(t *testing.T, spec Spec) *v1alpha1.EgressResult {
	t.Helper()
	if _, err := probes.ICMPMethod(); err != nil {
		t.Skipf("ICMP echo not permitted to this process (run as root, or widen net.ipv4.ping_group_range): %v", err)
	}
	r, err := Measure(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A name is looked up Count times, then its first address echoed Count times (an address alone
// is echoed without a lookup: TestPathPingsAnOutsideHost, as only the lab has one to echo).
func TestMeasureICMP(t *testing.T) {
	res, queries := resolverFor(t, "host.outside.test")
	r := icmpOrSkip(t, Spec{Target: "icmp://host.outside.test.", Count: 3, Interval: time.Millisecond, Resolver: res})
	if r.ICMP == nil || r.ICMP.Sent != 3 || r.ICMP.Received != 3 || r.ICMP.RTT.Count != 3 || r.DNS == nil || r.DNS.Count != 3 ||
		r.RemoteAddress != "127.0.0.1" || r.Connect.Count != 0 || r.FirstByteNew != nil {
		t.Errorf("result %+v (icmp %+v)", r, r.ICMP)
	}
	if n := queries.Load(); n != 6 {
		t.Errorf("%d queries, want an A and an AAAA per lookup (6)", n)
	}
	if _, host := SchemeHost("icmp://[::ffff:198.51.100.10]"); host != "198.51.100.10" {
		t.Errorf("an IPv4-mapped address: host %q, want the IPv4 address it is", host)
	}
	if _, err := Measure(context.Background(), Spec{Target: "icmp://missing.test.", Count: 1, Resolver: res}); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "missing.test. does not resolve") {
		t.Errorf("NXDOMAIN: %v", err)
	}
}
