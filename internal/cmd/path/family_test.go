package path

import (
	"errors"
	"io"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestFamilyAddrs(t *testing.T) {
	dual := []string{"10.0.0.5", "fd00::5"}
	v6first := []string{"fd00::5", "10.0.0.5"}
	for _, c := range []struct {
		flag string
		ips  []string
		want []string
		err  error
	}{
		{FamilyPrimary, dual, []string{"10.0.0.5"}, nil},
		{FamilyPrimary, v6first, []string{"fd00::5"}, nil},
		{Family4, v6first, []string{"10.0.0.5"}, nil},
		{Family6, dual, []string{"fd00::5"}, nil},
		{FamilyBoth, v6first, []string{"10.0.0.5", "fd00::5"}, nil},
		{Family6, []string{"10.0.0.5"}, nil, ErrNoFamily},
		{FamilyBoth, []string{"10.0.0.5"}, nil, ErrNoFamily},
		{Family4, []string{"::ffff:10.0.0.5"}, []string{"10.0.0.5"}, nil},
		{FamilyPrimary, nil, nil, ErrNoFamily},
	} {
		got, err := familyAddrs(c.flag, c.ips)
		if !errors.Is(err, c.err) {
			t.Errorf("%q %v: error %v, want %v", c.flag, c.ips, err, c.err)
		}
		var s []string
		for _, a := range got {
			s = append(s, a.String())
		}
		if diff := cmp.Diff(c.want, s); diff != "" {
			t.Errorf("%q %v: (-want +got)\n%s", c.flag, c.ips, diff)
		}
	}
	if err := checkFamilyFlag("5"); err == nil {
		t.Error("--ip-family 5 accepted")
	}
}

// Every agent-to-agent probe gets an IPv6 twin sent to the server's IPv6 address.
func TestTwinV6(t *testing.T) {
	o := NewPathOptions(nil, genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
	o.Probes, o.Port = []string{"rtt", "tcp"}, 8080
	r := &pathRun{o: o}
	probes, app, _ := r.o.FamilySpecs([]netip.Addr{netip.MustParseAddr("10.0.0.5"), netip.MustParseAddr("fd00::5")}, nil)
	var names []string
	for _, p := range probes {
		names = append(names, p.Label()+"@"+p.Host)
	}
	want := []string{"icmp@", "icmp-v6@fd00::5", "tcp-rtt@", "tcp-rtt-v6@fd00::5", "tcp-1@", "tcp-1-v6@fd00::5", "tcp-8@", "tcp-8-v6@fd00::5"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("probes (-want +got)\n%s", diff)
	}
	if len(app) != 4 || app[2].Name != "app-tcp-rtt-v6" || app[2].Address != "[fd00::5]:8080" || app[3].URL != "http://[fd00::5]:8080/" {
		t.Errorf("app-port probes: %+v", app)
	}
}
