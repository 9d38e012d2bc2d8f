package agent

import (
	"strings"
	"testing"
)

// A probe's Host (the server's address of the other family) is for probes to the server agent,
// and for a spread probe, which has its Service address and Host for its straight handshakes to
// DST; any other probe with an address or URL and a Host is refused.
func TestJobProbeHost(t *testing.T) {
	job := func(p ProbeSpec) *Job {
		return &Job{APIVersion: APIVersion, Host: "10.0.0.5", Port: 7000, Token: "t", Probes: []ProbeSpec{p}}
	}
	for _, tc := range []struct {
		name string
		p    ProbeSpec
		want string // "" = accepted
	}{
		{"twin to the server", ProbeSpec{Kind: ProbeTCPRTT, Name: "tcp-rtt-v6", Host: "fd00::5", Count: 3}, ""},
		{"spread through an IPv6 ClusterIP", ProbeSpec{Kind: ProbeSpread, Name: "svc-spread-v6", Address: "[fd00:10:96::9]:80", Host: "fd00::5", Count: 10,
			Direct: map[string]string{"web-1": "[fd00::7]:23456"}}, ""},
		{"app port with a host", ProbeSpec{Kind: ProbeTCPRTT, Name: "app-tcp-rtt", Address: "10.0.0.5:8080", Host: "fd00::5", Count: 3}, "host \"fd00::5\""},
		{"URL with a host", ProbeSpec{Kind: ProbeHTTP, Name: "app-http", URL: "http://10.0.0.5:8080/", Host: "fd00::5", QPS: 10, Connections: 1, DurationSeconds: 1}, "host \"fd00::5\""},
		{"host not an IP", ProbeSpec{Kind: ProbeSpread, Name: "svc-spread-v6", Address: "[fd00:10:96::9]:80", Host: "web", Count: 10}, "host \"web\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := job(tc.p).Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}
