package path

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

func TestValidate(t *testing.T) {
	tests := []struct {
		name    string
		change  func(*PathOptions)
		wantErr string
	}{
		{name: "defaults", change: func(*PathOptions) {}},
		{name: "mode", change: func(o *PathOptions) { o.Mode = "daemonset" }, wantErr: `--mode "daemonset": want ephemeral, pod or auto`},
		{name: "profile", change: func(o *PathOptions) { o.Profile = "slow" }, wantErr: `--profile "slow": want quick or seed`},
		{name: "unknown probe", change: func(o *PathOptions) { o.Probes = []string{"rtt", "quic"} }, wantErr: `--probes: unknown probe "quic"`},
		{name: "no probes", change: func(o *PathOptions) { o.Probes = nil }, wantErr: "--probes is empty"},
		{name: "output", change: func(o *PathOptions) { o.Output = "wide" }, wantErr: `--output "wide": want json, yaml, openmetrics or junit`},
		{name: "http path without port", change: func(o *PathOptions) { o.HTTPPath = "/healthz" }, wantErr: "--http-path needs --port"},
		{name: "port range", change: func(o *PathOptions) { o.Port = 70000 }, wantErr: "--port 70000: want 1-65535"},
		{name: "interval longer than duration", change: func(o *PathOptions) { o.Interval, o.Duration = 20*time.Second, 10*time.Second },
			wantErr: "--interval 20s is longer than --duration 10s"},
		{name: "negative", change: func(o *PathOptions) { o.QPS = -1 }, wantErr: "--qps -1: want 1-1e+06"},
		{name: "empty image", change: func(o *PathOptions) { o.Image = "" }, wantErr: "--image is empty"},
		{name: "agent memory too small", change: func(o *PathOptions) { o.AgentResources = "cpu=1,memory=16Mi" }, wantErr: `--agent-resources "cpu=1,memory=16Mi": memory=16Mi: the agent needs at least 40Mi`},
		{name: "agent resources none", change: func(o *PathOptions) { o.AgentResources = "none" }},
		{name: "no rounds", change: func(o *PathOptions) { o.Rounds = 0 }, wantErr: "--repeat 0: want 1-20"},
		{name: "too many rounds", change: func(o *PathOptions) { o.Rounds = 21 }, wantErr: "--repeat 21: want 1-20"},
		{name: "rate probes", change: func(o *PathOptions) { o.Probes = []string{"tcp-rr", "udp-rr", "tcp-crr", "loaded-rtt"} }},
		{name: "loaded-rtt too short", change: func(o *PathOptions) { o.Probes, o.Duration = []string{"loaded-rtt"}, 2*time.Second }, wantErr: "--duration 2s: loaded-rtt needs 2.5s at least"},
		{name: "too many crr clients", change: func(o *PathOptions) { o.Probes, o.Connections = []string{"tcp-crr"}, 65 }, wantErr: "--connections 65: tcp-crr and udp-rr take 1-64 clients"},
		{name: "request too large", change: func(o *PathOptions) { o.Probes, o.RequestSize = []string{"tcp-rr"}, 9000 }, wantErr: "--request-size 9000: want 1-8192 bytes"},
		{name: "response too large", change: func(o *PathOptions) { o.ResponseSize = 8193 }, wantErr: "--response-size 8193: want 1-8192 bytes"},
		{name: "egress", change: func(o *PathOptions) { o.DstArg, o.Requests = "https://api.example.com/v1?key=secret", 50 }},
		{name: "egress bad scheme", change: func(o *PathOptions) { o.DstArg = "ftp://files.example.com/" }, wantErr: `DST: not a destination: "ftp://files.example.com/": scheme "ftp", want tcp, http, https, grpc, grpcs or icmp`},
		{name: "egress credentials never shown", change: func(o *PathOptions) { o.DstArg = "https://user:hunter2@api.example.com/" }, wantErr: "credentials in a destination"},
		{name: "egress tcp without port", change: func(o *PathOptions) { o.DstArg = "tcp://db.example.com" }, wantErr: "a tcp destination is tcp://HOST:PORT"},
		{name: "egress requests", change: func(o *PathOptions) { o.DstArg, o.Requests = "http://a.example.com/", 0 }, wantErr: "--requests 0: want 1-1000"},
		{name: "egress with --port", change: func(o *PathOptions) { o.DstArg, o.Port = "http://a.example.com/", 8080 }, wantErr: "are for a workload DST; a URL names its own port and path"},
		{name: "egress with --probes", change: func(o *PathOptions) { o.DstArg, o.Probes = "http://a.example.com/", []string{"rtt"} }, wantErr: "it is measured by the egress probe alone"},
		{name: "egress CA file missing", change: func(o *PathOptions) { o.DstArg, o.CAFile = "https://a.example.com/", "/nonexistent/ca.pem" }, wantErr: "--ca-file /nonexistent/ca.pem: open"},
		{name: "egress CA file not PEM", change: func(o *PathOptions) { o.DstArg, o.CAFile = "https://a.example.com/", "path_test.go" }, wantErr: "--ca-file path_test.go: bad root certificates: no PEM certificate found"},
		{name: "egress price", change: func(o *PathOptions) { o.DstArg, o.EgressPricePerGB = "http://a.example.com/", -1 }, wantErr: "--egress-price-per-gb -1: want a price from 0 to 1000 USD"},
		{name: "egress price for a workload", change: func(o *PathOptions) { o.DstArg, o.EgressPricePerGB = "deploy/backend", 0.09 }, wantErr: "--egress-price-per-gb is for a destination outside the cluster"},
		{name: "egress repeat", change: func(o *PathOptions) { o.DstArg, o.Rounds = "http://a.example.com/", 3 }, wantErr: "--repeat 3: a destination outside the cluster is measured once"},
		{name: "egress CA file for http", change: func(o *PathOptions) { o.DstArg, o.CAFile = "http://a.example.com/", "ca.pem" }, wantErr: "--ca-file is for an https:// or grpcs:// destination"},
		{name: "egress port out of range", change: func(o *PathOptions) { o.DstArg = "https://a.example.com:99999/" }, wantErr: `port "99999", want 1-65535`},
		{name: "egress CA file a device", change: func(o *PathOptions) { o.DstArg, o.CAFile = "https://a.example.com/", "/dev/zero" }, wantErr: "--ca-file /dev/zero: over 524288 bytes"},
		{name: "egress download", change: func(o *PathOptions) { o.DstArg, o.Download = "https://a.example.com/big", 10*time.Second }},
		{name: "egress grpcs", change: func(o *PathOptions) { o.DstArg, o.CAFile = "grpcs://a.example.com:443", "" }},
		{name: "download for tcp", change: func(o *PathOptions) { o.DstArg, o.Download = "tcp://a.example.com:5432", time.Second }, wantErr: "--download 1s: for an http:// or https:// destination (it reads an answer's body), not tcp://a.example.com:5432"},
		{name: "download too long", change: func(o *PathOptions) { o.DstArg, o.Download = "http://a.example.com/", 2*time.Minute }, wantErr: "--download 2m0s: want from 1ms to 1m0s"},
		{name: "download for a workload", change: func(o *PathOptions) { o.DstArg, o.Download = "deploy/backend", time.Second }, wantErr: "--download is for a destination outside the cluster (DST http://… or https://…), not deploy/backend"},
		{name: "CA file for a workload", change: func(o *PathOptions) { o.DstArg, o.CAFile = "deploy/backend", "ca.pem" }, wantErr: "--ca-file is for a destination outside the cluster"},
		{name: "udp-rr datagram too small", change: func(o *PathOptions) { o.Probes, o.RequestSize = []string{"udp-rr"}, 8 }, wantErr: "--request-size 8: udp-rr's datagrams carry a 32-byte header"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := NewPathOptions(nil, genericiooptions.NewTestIOStreamsDiscard())
			tc.change(o)
			err := o.Validate()
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

// The rate probes run only when named, with the profile's clients unless --connections says
// otherwise, and the sizes asked (udp-rr answers with its request's size).
func TestRateProbeSpecs(t *testing.T) {
	o := NewPathOptions(nil, genericiooptions.NewTestIOStreamsDiscard())
	for _, p := range o.Probes {
		if slices.Contains(rateGroups, p) {
			t.Errorf("rate probe %s runs by default", p)
		}
	}
	o.Probes, o.RequestSize, o.ResponseSize = []string{"tcp-rr", "udp-rr", "tcp-crr"}, 64, 512
	got, _ := o.ProbeSpecs("10.0.0.5")
	want := []agent.ProbeSpec{
		{Kind: agent.ProbeTCPRR, Connections: 1, DurationSeconds: 3, Size: 64, ResponseSize: 512},
		{Kind: agent.ProbeUDPRR, Connections: 1, DurationSeconds: 3, Size: 64},
		{Kind: agent.ProbeTCPCRR, Connections: 4, DurationSeconds: 3, Size: 64, ResponseSize: 512},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rate probes (-want +got):\n%s", diff)
	}
	o.Connections, o.Duration = 8, 5*time.Second
	got, _ = o.ProbeSpecs("10.0.0.5")
	if got[2].Connections != 8 || got[2].DurationSeconds != 5 {
		t.Errorf("--connections 8 --duration 5s: tcp-crr %+v", got[2])
	}
}

func TestProbeSpecs(t *testing.T) {
	o := NewPathOptions(nil, genericiooptions.NewTestIOStreamsDiscard())
	o.Probes = []string{"rtt", "tcp"}
	o.Streams, o.Duration, o.Interval = 4, 10*time.Second, 2*time.Second
	o.Port, o.HTTPPath = 8080, "/healthz"
	got, app := o.ProbeSpecs("10.0.0.5")
	want := []agent.ProbeSpec{
		{Kind: agent.ProbeICMP, Count: 20, IntervalMillis: 50},
		{Kind: agent.ProbeTCPRTT, Count: 20, IntervalMillis: 50},
		{Kind: agent.ProbeTCP, Name: "tcp-1", Streams: 1, DurationSeconds: 10, ReportIntervalSeconds: 2},
		{Kind: agent.ProbeTCP, Name: "tcp-4", Streams: 4, DurationSeconds: 10, ReportIntervalSeconds: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("probes (-want +got):\n%s", diff)
	}
	wantApp := []agent.ProbeSpec{
		{Kind: agent.ProbeTCPRTT, Name: "app-tcp-rtt", Address: "10.0.0.5:8080", Count: 20, IntervalMillis: 50},
		{Kind: agent.ProbeHTTP, Name: "app-http", URL: "http://10.0.0.5:8080/healthz", QPS: 100, Connections: 4, DurationSeconds: 10},
	}
	if diff := cmp.Diff(wantApp, app); diff != "" {
		t.Errorf("app-port probes (-want +got):\n%s", diff)
	}
	// The quick profile must fit its promise of a whole run within 30 s.
	q := NewPathOptions(nil, genericiooptions.NewTestIOStreamsDiscard())
	all, _ := q.ProbeSpecs("10.0.0.5")
	if s := ExpectedSeconds(all); s > 25 {
		t.Errorf("quick profile measures for %.0f s; the whole run must stay within 30 s", s)
	}
}

func TestClassifyAndCost(t *testing.T) {
	tests := []struct {
		name                                 string
		sn, dn, sz, dz, sr, dr, want, reason string
	}{
		{name: "same node", sn: "a", dn: "a", sz: "z1", dz: "z1", want: report.SameNode},
		{name: "same zone", sn: "a", dn: "b", sz: "z1", dz: "z1", sr: "r", dr: "r", want: report.SameZone},
		{name: "cross zone", sn: "a", dn: "b", sz: "z1", dz: "z2", sr: "r", dr: "r", want: report.CrossZone},
		{name: "cross region", sn: "a", dn: "b", sz: "z1", dz: "z2", sr: "r1", dr: "r2", want: report.CrossRegion},
		{name: "no labels", sn: "a", dn: "b", want: report.Unknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := report.Classify(tc.sn, tc.dn, tc.sz, tc.dz, tc.sr, tc.dr); got.Class != tc.want {
				t.Errorf("class %q, want %q", got.Class, tc.want)
			}
		})
	}
	c := report.NewCost(5e9, 0.01)
	if c.RunCostUSD != 0.1 {
		t.Errorf("5 GB at $0.01/GB on both sides: $%v, want $0.10", c.RunCostUSD)
	}
	if c.MonthlyUSDPerGbps != 6480 {
		t.Errorf("1 Gbit/s for 30 days = 324000 GB: $%v, want $6480", c.MonthlyUSDPerGbps)
	}
}

// Temporary agents get requests, a memory limit and no CPU limit by default; a memory limit
// below the agent's own heap limit brings GOMEMLIMIT down with it; "none" leaves it all to the
// namespace's LimitRange.
func TestAgentResources(t *testing.T) {
	tests := []struct {
		flag, wantRequests, wantLimits, wantGoMemLimit string
	}{
		{"", "cpu=100m memory=64Mi", "memory=128Mi", ""},
		{"none", "", "", ""},
		{"cpu=200m,memory=64Mi", "cpu=200m memory=64Mi", "cpu=200m memory=64Mi", "50331648"},
		{"memory=1Gi", "memory=1Gi", "memory=1Gi", ""},
	}
	for _, tc := range tests {
		t.Run(tc.flag, func(t *testing.T) {
			o := NewPathOptions(nil, genericiooptions.NewTestIOStreamsDiscard())
			o.AgentResources = tc.flag
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			var c corev1.Container
			session.SetResources(&c, o.Resources)
			var goMem string
			for _, e := range c.Env {
				if e.Name == "GOMEMLIMIT" {
					goMem = e.Value
				}
			}
			if got := list(c.Resources.Requests); got != tc.wantRequests {
				t.Errorf("requests %q, want %q", got, tc.wantRequests)
			}
			if got := list(c.Resources.Limits); got != tc.wantLimits {
				t.Errorf("limits %q, want %q", got, tc.wantLimits)
			}
			if goMem != tc.wantGoMemLimit {
				t.Errorf("GOMEMLIMIT %q, want %q", goMem, tc.wantGoMemLimit)
			}
		})
	}
}

func list(r corev1.ResourceList) string {
	var out []string
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := r[n]; ok {
			out = append(out, string(n)+"="+q.String())
		}
	}
	return strings.Join(out, " ")
}
