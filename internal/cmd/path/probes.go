package path

import (
	"net"
	"strconv"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
)

// profile is a set of probe settings.
type profile struct {
	RttCount    int
	RttInterval float64 // ms
	Http        agent.ProbeSpec
	HttpNewConn agent.ProbeSpec
	httpMax     agent.ProbeSpec
	grpc        agent.ProbeSpec
	tcp         []agent.ProbeSpec
	udp         agent.ProbeSpec
	rates       map[string]agent.ProbeSpec // by group
}

var Profiles = map[string]profile{
	"quick": {
		RttCount: 20, RttInterval: 50,
		Http:        agent.ProbeSpec{Kind: agent.ProbeHTTP, QPS: 100, Connections: 4, DurationSeconds: 4},
		HttpNewConn: agent.ProbeSpec{Kind: agent.ProbeHTTPNewConn, QPS: 100, Connections: 4, DurationSeconds: 3},
		httpMax:     agent.ProbeSpec{Kind: agent.ProbeHTTPMax, Connections: 16, DurationSeconds: 3},
		grpc:        agent.ProbeSpec{Kind: agent.ProbeGRPC, QPS: 100, Connections: 4, DurationSeconds: 3},
		udp:         agent.ProbeSpec{Kind: agent.ProbeUDP, Count: 1000, IntervalMillis: 1, Size: UDPSize},
		tcp: []agent.ProbeSpec{
			{Kind: agent.ProbeTCP, Name: "tcp-1", Streams: 1, DurationSeconds: 3},
			{Kind: agent.ProbeTCP, Name: "tcp-8", Streams: 8, DurationSeconds: 3},
		},
		rates: rateProbes(3),
	},
	"seed": {
		RttCount: 200, RttInterval: 50,
		Http:        agent.ProbeSpec{Kind: agent.ProbeHTTP, QPS: 100, Connections: 4, DurationSeconds: 60},
		HttpNewConn: agent.ProbeSpec{Kind: agent.ProbeHTTPNewConn, QPS: 100, Connections: 4, DurationSeconds: 30},
		httpMax:     agent.ProbeSpec{Kind: agent.ProbeHTTPMax, Connections: 16, DurationSeconds: 20},
		grpc:        agent.ProbeSpec{Kind: agent.ProbeGRPC, QPS: 100, Connections: 4, DurationSeconds: 30},
		udp:         agent.ProbeSpec{Kind: agent.ProbeUDP, Count: 20000, IntervalMillis: 1, Size: UDPSize},
		tcp: []agent.ProbeSpec{
			{Kind: agent.ProbeTCP, Name: "tcp-1", Streams: 1, DurationSeconds: 20},
			{Kind: agent.ProbeTCP, Name: "tcp-8", Streams: 8, DurationSeconds: 20},
			{Kind: agent.ProbeTCP, Name: "tcp-sustained", Streams: 4, DurationSeconds: 180, ReportIntervalSeconds: 10},
		},
		rates: rateProbes(10),
	},
}

// rateProbes are the rate probes of a profile, each running for seconds: one client on one
// connection (netperf's TCP_RR and UDP_RR), and four clients opening connections (TCP_CRR).
func rateProbes(seconds float64) map[string]agent.ProbeSpec {
	return map[string]agent.ProbeSpec{
		"tcp-rr":  {Kind: agent.ProbeTCPRR, Connections: 1, DurationSeconds: seconds},
		"udp-rr":  {Kind: agent.ProbeUDPRR, Connections: 1, DurationSeconds: seconds},
		"tcp-crr": {Kind: agent.ProbeTCPCRR, Connections: 4, DurationSeconds: seconds},
		// Round trips every 10 ms idle, then under 4 streams for at least 5 s.
		"loaded-rtt": {Kind: agent.ProbeLoadedRTT, Streams: 4, DurationSeconds: max(seconds, 5), IntervalMillis: loadedInterval},
	}
}

// rateOverrun is what a rate probe may take beyond its duration: its last transactions' wait
// (3 s at most each), tcp-rr's connections opened before the loop.
const rateOverrun = 3

// loadedInterval is the loaded-rtt probe's sampling interval in ms.
const loadedInterval = 10

// UDPSize is the UDP probe's datagram size: a small request, as DNS and games send.
const UDPSize = 100

// pmtuSeconds is what the path-MTU probe takes when the path is narrower than the interfaces:
// about five sizes that do not cross, three tries of 200 ms each (one probe when it is not).
const pmtuSeconds = 3

// ProbeSpecs builds the agent-to-agent probes and the app-port probes from the profile and flags.
func (o *PathOptions) ProbeSpecs(dstIP string) (probes, appPort []agent.ProbeSpec) {
	pr := Profiles[o.Profile]
	override := func(p agent.ProbeSpec) agent.ProbeSpec {
		if o.Duration > 0 {
			p.DurationSeconds = o.Duration.Seconds()
		}
		if o.QPS > 0 && p.QPS > 0 {
			p.QPS = o.QPS
		}
		if o.Connections > 0 && p.Kind != agent.ProbeHTTPMax && p.Kind != agent.ProbeTCP {
			p.Connections = o.Connections
		}
		if p.Kind == agent.ProbeTCP {
			if o.Streams > 0 && p.Streams > 1 {
				p.Streams = o.Streams
				p.Name = "tcp-" + strconv.Itoa(o.Streams)
			}
			if o.Interval > 0 {
				p.ReportIntervalSeconds = o.Interval.Seconds()
			}
		}
		return p
	}
	for _, g := range o.Probes {
		switch g {
		case "rtt":
			probes = append(probes,
				agent.ProbeSpec{Kind: agent.ProbeICMP, Count: pr.RttCount, IntervalMillis: pr.RttInterval},
				agent.ProbeSpec{Kind: agent.ProbeTCPRTT, Count: pr.RttCount, IntervalMillis: pr.RttInterval})
		case "http":
			probes = append(probes, override(pr.Http))
		case "http-new-conn":
			probes = append(probes, override(pr.HttpNewConn))
		case "http-max":
			probes = append(probes, override(pr.httpMax))
		case "grpc":
			probes = append(probes, override(pr.grpc))
		case "udp":
			probes = append(probes, pr.udp)
		case "tcp-rr", "udp-rr", "tcp-crr", "loaded-rtt":
			probes = append(probes, o.rateSpec(override(pr.rates[g])))
		case "path-mtu":
			probes = append(probes, agent.ProbeSpec{Kind: agent.ProbePMTU})
		case "tcp":
			for _, t := range pr.tcp {
				probes = append(probes, override(t))
			}
		}
	}
	probes = uniqueLabels(probes)
	if o.Port > 0 {
		addr := net.JoinHostPort(dstIP, strconv.Itoa(o.Port))
		h := override(pr.Http)
		h.Name, h.URL = "app-http", "http://"+addr+o.HTTPPath
		appPort = append(appPort,
			agent.ProbeSpec{Kind: agent.ProbeTCPRTT, Name: "app-tcp-rtt", Address: addr, Count: pr.RttCount, IntervalMillis: pr.RttInterval},
			h)
	}
	return probes, appPort
}

// rateSpec gives a rate probe the sizes asked (udp-rr answers with its request's size) and
// the loaded-rtt probe the streams asked.
func (o *PathOptions) rateSpec(r agent.ProbeSpec) agent.ProbeSpec {
	if r.Kind == agent.ProbeLoadedRTT {
		if o.Streams > 0 {
			r.Streams = o.Streams
		}
		r.Connections = 0
		return r
	}
	r.Size, r.ResponseSize = o.RequestSize, o.ResponseSize
	if r.Kind == agent.ProbeUDPRR {
		r.ResponseSize = 0
	}
	return r
}

// uniqueLabels keeps the first probe of each label: results are keyed by label, and an
// override such as --streams 1 can make the multi-stream probe another tcp-1.
func uniqueLabels(specs []agent.ProbeSpec) []agent.ProbeSpec {
	seen := map[string]bool{}
	var out []agent.ProbeSpec
	for _, p := range specs {
		if !seen[p.Label()] {
			seen[p.Label()] = true
			out = append(out, p)
		}
	}
	return out
}

func ExpectedSeconds(specs []agent.ProbeSpec) float64 {
	var s float64
	for _, p := range specs {
		s += p.DurationSeconds
		if p.Kind == agent.ProbePMTU {
			s += pmtuSeconds
		}
		if p.Kind == agent.ProbeTCPRR || p.Kind == agent.ProbeTCPCRR || p.Kind == agent.ProbeUDPRR {
			s += rateOverrun
		}
		if p.Kind == agent.ProbeLoadedRTT { // its idle samples before the load
			s += min(p.DurationSeconds-1.5, 2)
		}
		if p.Count > 0 {
			s += float64(p.Count) * p.IntervalMillis / 1000
		}
	}
	return s
}
