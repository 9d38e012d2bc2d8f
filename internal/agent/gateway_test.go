package agent

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDefaultGatewaysParsed(t *testing.T) {
	v4 := `Iface	Destination	Gateway 	Flags	RefCnt	Use	Metric	Mask		MTU	Window	IRTT
eth0	00000000	0103F40A	0003	0	0	0	00000000	0	0	0
eth0	0003F40A	00000000	0001	0	0	0	00FFFFFF	0	0	0
eth0	00000000	00000000	0001	0	0	0	00000000	0	0	0
`
	v6 := `fd000010024400030000000000000000 40 00000000000000000000000000000000 00 00000000000000000000000000000000 00000100 00000001 00000000 00000001     eth0
00000000000000000000000000000000 00 00000000000000000000000000000000 00 fd000010024400030000000000000001 00000400 00000001 00000000 00000003     eth0
`
	got := append(gateways4(strings.NewReader(v4)), gateways6(strings.NewReader(v6))...)
	want := []netip.Addr{netip.MustParseAddr("10.244.3.1"), netip.MustParseAddr("fd00:10:244:3::1")}
	if d := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); d != "" {
		t.Errorf("gateways (-want +got):\n%s", d)
	}
}

func TestIsGatewayReadsTheNamespacesRoutes(t *testing.T) {
	dir := t.TempDir()
	routeFile, route6File = filepath.Join(dir, "route"), filepath.Join(dir, "none")
	if err := os.WriteFile(routeFile, []byte("Iface\tDestination\tGateway\tFlags\tRefCnt\tUse\tMetric\tMask\nethX\t00000000\t0103F40A\t0003\t0\t0\t0\t00000000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { routeFile, route6File = "/proc/self/net/route", "/proc/self/net/ipv6_route" })
	for addr, want := range map[string]bool{"10.244.3.1": true, "::ffff:10.244.3.1": true, "10.244.3.2": false, "nonsense": false} {
		if got := isGateway(addr); got != want {
			t.Errorf("isGateway(%s) = %v, want %v", addr, got, want)
		}
	}
}
