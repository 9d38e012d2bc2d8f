package agent

import (
	"errors"
	"net"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
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
		{"DNS load", ProbeSpec{Kind: ProbeDNS, Names: []string{"a"}, DNSLoadSeconds: 60, DNSLoadCeilingQPS: 20000, DNSLoadP99Millis: 20}, ""},
		{"DNS load without a ceiling", ProbeSpec{Kind: ProbeDNS, Names: []string{"a"}, DNSLoadSeconds: 60, DNSLoadP99Millis: 20}, "dns load ceiling 0 queries/s"},
		{"DNS load above the bound", ProbeSpec{Kind: ProbeDNS, Names: []string{"a"}, DNSLoadSeconds: 60, DNSLoadCeilingQPS: 1e6, DNSLoadP99Millis: 20}, "dns load ceiling 1e+06"},
		{"DNS load at a trickle", ProbeSpec{Kind: ProbeDNS, Names: []string{"a"}, DNSLoadSeconds: 60, DNSLoadCeilingQPS: 10, DNSLoadP99Millis: 20}, "dns load ceiling 10 queries/s: want 100-100000"},
		{"DNS load of a loopback replica", ProbeSpec{Kind: ProbeDNS, Names: []string{"a"}, DNSReplicas: []probes.DNSReplica{{Address: "127.0.0.1"}}}, "DNS replica 127.0.0.1: not a unicast address"},
		{"DNS load of a replica twice", ProbeSpec{Kind: ProbeDNS, Names: []string{"a"}, DNSReplicas: []probes.DNSReplica{{Address: "10.0.0.1"}, {Address: "10.0.0.1"}}}, "DNS replica 10.0.0.1: twice"},
		{"DNS load for an hour", ProbeSpec{Kind: ProbeDNS, Names: []string{"a"}, DNSLoadSeconds: 3600, DNSLoadCeilingQPS: 100, DNSLoadP99Millis: 20}, "dns load of 3600s"},
		{"DNS load past its timeout", ProbeSpec{Kind: ProbeDNS, Names: []string{"a"}, DNSLoadSeconds: 60, DNSLoadCeilingQPS: 100, DNSLoadP99Millis: 1000}, "p99 budget 1000 ms"},
		{"DNS load with a capture", ProbeSpec{Kind: ProbeDNS, Names: []string{"a"}, Resolver: "glibc", ObserveSeconds: 5, DNSLoadSeconds: 60, DNSLoadCeilingQPS: 100, DNSLoadP99Millis: 20}, "not with a passive capture"},
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
