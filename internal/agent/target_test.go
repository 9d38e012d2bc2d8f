package agent

import "testing"

// A probe measures its address's or URL's host (a spread probe its Service's, not the DST it
// also handshakes with), else its own host (an IPv6 twin's), else the job's.
func TestTargetAddr(t *testing.T) {
	j := Job{Host: "10.0.0.5", Port: 1}
	for _, tc := range []struct {
		p    ProbeSpec
		want string
	}{
		{ProbeSpec{Kind: ProbeICMP}, "10.0.0.5"},
		{ProbeSpec{Kind: ProbeICMP, Host: "fd00::5"}, "fd00::5"},
		{ProbeSpec{Kind: ProbeTCPRTT, Address: "[fd00:10:96::1]:80"}, "fd00:10:96::1"},
		{ProbeSpec{Kind: ProbeHTTP, URL: "http://10.96.0.7:80/x"}, "10.96.0.7"},
		{ProbeSpec{Kind: ProbeHTTP, URL: "http://web.shop:80/x"}, "invalid IP"},
		{ProbeSpec{Kind: ProbeSpread, Address: "[fd00:10:96::1]:80", Host: "fd00::5", Count: 1}, "fd00:10:96::1"}, // the Service's, not DST's`
	} {
		if got := j.TargetAddr(tc.p).String(); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.p, got, tc.want)
		}
	}
}
