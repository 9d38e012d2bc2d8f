package agent

import (
	"errors"
	"net"
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
		{"DNS with a host", ProbeSpec{Kind: ProbeDNS, Name: "dns", Names: []string{"example.com"}, Host: "fd00::5"}, "a DNS probe asks the pod's nameservers"},
		{"host not an IP", ProbeSpec{Kind: ProbeSpread, Name: "svc-spread-v6", Address: "[fd00:10:96::9]:80", Host: "web", Count: 10}, "host \"web\""},
		{"DNS of AAAA only, what-if both", ProbeSpec{Kind: ProbeDNS, Names: []string{"a"}, LookupFamily: "6", WhatIfLookupFamily: "both"}, ""},
		{"DNS lookup family unknown", ProbeSpec{Kind: ProbeDNS, Names: []string{"a"}, LookupFamily: "inet6"}, `lookup family "inet6"`},
		{"DNS what-if family unknown", ProbeSpec{Kind: ProbeDNS, Names: []string{"a"}, WhatIfLookupFamily: "7"}, `what-if lookup family "7"`},
		{"DNS race of one family", ProbeSpec{Kind: ProbeDNS, Names: []string{"a"}, LookupFamily: "4", DNSRace: 10}, "no A/AAAA race"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := job(tc.p).Validate()
			if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
				t.Errorf("err %v, want %q", err, tc.want)
			}
		})
	}
}

// A peer's job (the matrix's) aims at the peer alone: a probe Host is refused like an address.
func TestMeshJobRefusesHost(t *testing.T) {
	job := Job{APIVersion: APIVersion, Host: "10.0.0.5", Port: 7000, Probes: []ProbeSpec{{Kind: ProbeTCPRTT, Count: 3, Host: "192.0.2.9"}}}
	if err := checkMeshJob(job, &net.TCPAddr{IP: net.ParseIP("10.0.0.4"), Port: 7000}); !errors.Is(err, ErrNotAPeer) {
		t.Errorf("err %v, want ErrNotAPeer", err)
	}
}
