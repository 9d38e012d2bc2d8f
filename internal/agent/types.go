// Package agent is the in-pod runtime of kubectl-netbench: a server that the probes measure
// against, and a runner that executes a job of probes and reports JSON-lines events. Its job
// and event types are the wire contract with the plugin.
package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// APIVersion versions Job and Event. A change that is not backwards compatible bumps it.
const APIVersion = "netbench.kubectl.dev/v1alpha1"

// TokenHeader carries the run token on HTTP requests; TokenMetadata on gRPC calls.
const (
	TokenHeader   = probes.TokenHeader
	TokenMetadata = "x-netbench-token"
	// TokenEnv is the environment variable the token may be passed in instead of a flag.
	TokenEnv = "NETBENCH_TOKEN"
)

// Probe kinds (v1alpha1's: the kind of each result in a report).
const (
	ProbeICMP        = v1alpha1.ProbeICMP
	ProbeTCPRTT      = v1alpha1.ProbeTCPRTT
	ProbeHTTP        = v1alpha1.ProbeHTTP        // keep-alive at fixed qps
	ProbeHTTPNewConn = v1alpha1.ProbeHTTPNewConn // a new connection per request at fixed qps
	ProbeHTTPMax     = v1alpha1.ProbeHTTPMax     // closed loop
	ProbeGRPC        = v1alpha1.ProbeGRPC
	ProbeTCP         = v1alpha1.ProbeTCP // throughput
	ProbeDNS         = v1alpha1.ProbeDNS // the resolver's real queries for names, with what-ifs
	// ProbeSpread opens Count new connections to Address (a Service) and asks each agent
	// endpoint who it is: where the Service sends connections from here.
	ProbeSpread = v1alpha1.ProbeSpread
	// ProbeUDP sends Count datagrams at IntervalMillis to the server's UDP echo: RTT, loss
	// and jitter.
	ProbeUDP = v1alpha1.ProbeUDP
	// ProbePMTU finds the largest packet that crosses the path with "don't fragment" set.
	ProbePMTU = v1alpha1.ProbePMTU
	// ProbeTCPRR, ProbeTCPCRR and ProbeUDPRR are the closed-loop rate probes: transactions on
	// persistent connections, whole connections, datagrams answered (probes.RateSpec).
	ProbeTCPRR  = v1alpha1.ProbeTCPRR
	ProbeTCPCRR = v1alpha1.ProbeTCPCRR
	ProbeUDPRR  = v1alpha1.ProbeUDPRR
	// ProbeLoadedRTT samples the UDP (and ICMP) round trip idle, then under a TCP load.
	ProbeLoadedRTT = v1alpha1.ProbeLoadedRTT
	// ProbeEgress measures the destination URL with no agent on its far side.
	ProbeEgress = v1alpha1.ProbeEgress
)

// ProbeKinds lists every probe kind in the order a full run takes them.
var ProbeKinds = []string{ProbeICMP, ProbeTCPRTT, ProbeHTTP, ProbeHTTPNewConn, ProbeHTTPMax, ProbeGRPC, ProbeTCPRR, ProbeTCPCRR, ProbeUDPRR, ProbeTCP, ProbeLoadedRTT, ProbeDNS, ProbeSpread, ProbeUDP, ProbePMTU, ProbeEgress}

// Job is what `agent run` executes: probes against one agent server (or, per probe, another
// address such as the destination app's own port).
type Job struct {
	APIVersion string `json:"apiVersion"`
	// Host and Port of the agent server.
	Host string `json:"host"`
	Port int    `json:"port"`
	// Token is presented to the server on every connection.
	Token  string      `json:"token"`
	Probes []ProbeSpec `json:"probes"`
	// Done tells the server to exit once the job has finished (or failed).
	Done bool `json:"done,omitempty"`
	// ServerOutside: the server is an agent outside the cluster, started with a token file of
	// its own; one that refuses the token ends the job before any probe (ErrTokenRefused).
	ServerOutside bool `json:"serverOutside,omitempty"`
	// ClientApp and ServerApp ask the client, and the server, to account the CPU of these of
	// their pods' containers over each probe, by runtime ID: for an ephemeral agent in an
	// application pod.
	ClientApp []string `json:"clientAppIDs,omitempty"`
	ServerApp []string `json:"serverAppIDs,omitempty"`

	// mesh marks a job a matrix agent runs for a peer (never decoded): its IPv6 twins' failures
	// fail only their family, so the job goes on.
	mesh bool
}

// ProbeSpec is one probe of a job. Zero values take each probe's defaults.
type ProbeSpec struct {
	Kind string `json:"kind"`
	// Name labels the result (defaults to Kind); useful when a kind runs twice.
	Name string `json:"name,omitempty"`
	// Count is the round trips of the RTT probes, and the rate probes' cap on their
	// transactions (0: none; the loop ends at its duration or its cap, whichever comes first).
	Count           int     `json:"count,omitempty"`
	IntervalMillis  float64 `json:"intervalMillis,omitempty"`
	QPS             float64 `json:"qps,omitempty"`
	Connections     int     `json:"connections,omitempty"`
	Streams         int     `json:"streams,omitempty"`
	DurationSeconds float64 `json:"durationSeconds,omitempty"`
	// ReportIntervalSeconds adds interval reports to a throughput run.
	ReportIntervalSeconds float64 `json:"reportIntervalSeconds,omitempty"`
	// Address (host:port) or URL replaces the agent server as the target (sent no token): an
	// app's own port, or an egress destination whose https chain must lead to RootCAs (PEM).
	Address string `json:"address,omitempty"`
	URL     string `json:"url,omitempty"`
	RootCAs string `json:"rootCAs,omitempty"`
	// Host is the agent server's address for this probe when it is not the job's Host: the
	// same server's address of the other IP family (path --ip-family both; a spread probe's
	// straight handshakes to DST through a dual-stack Service's other family). Tokens are sent.
	Host string `json:"host,omitempty"`

	// DNS probe: the names, the resolver to model ("" = detect it from the application's
	// binary), warm repeats, extra ndots what-ifs, and the resolv.conf to read
	// (default /etc/resolv.conf, the pod's).
	Names       []string `json:"names,omitempty"`
	Resolver    string   `json:"resolver,omitempty"`
	Repeats     int      `json:"repeats,omitempty"`
	WhatIfNdots []int    `json:"whatIfNdots,omitempty"`
	ResolvConf  string   `json:"resolvConf,omitempty"`
	// DNSReplicas are the servers behind the pod's nameserver Service, asked directly too.
	DNSReplicas []probes.DNSReplica `json:"dnsReplicas,omitempty"`
	// DNSRace is how many lookups the race check does (0: none).
	DNSRace int `json:"dnsRace,omitempty"`
	// DNSLoadSeconds, when set, runs the capacity ramp after the DNS probe for at most that
	// long, at most DNSLoadCeilingQPS queries per second, a step degraded past DNSLoadP99Millis.
	DNSLoadSeconds    float64 `json:"dnsLoadSeconds,omitempty"`
	DNSLoadCeilingQPS float64 `json:"dnsLoadCeilingQPS,omitempty"`
	DNSLoadP99Millis  float64 `json:"dnsLoadP99Millis,omitempty"`
	// LookupFamily is what the application's lookups ask for (v1alpha1.LookupIPv4, LookupIPv6;
	// "" both); WhatIfLookupFamily adds the what-if of another ("both", "4" or "6").
	LookupFamily       string `json:"lookupFamily,omitempty"`
	WhatIfLookupFamily string `json:"whatIfLookupFamily,omitempty"`
	// Size is the UDP and udp-rr probes' datagram size in bytes (payload, header included), and
	// the tcp-rr and tcp-crr probes' request size; ResponseSize their response's.
	Size         int `json:"size,omitempty"`
	ResponseSize int `json:"responseSize,omitempty"`
	// ObserveSeconds captures the pod's own DNS traffic for that long (needs NET_RAW) instead
	// of the active measurement; Resolver must then be set.
	ObserveSeconds float64 `json:"observeSeconds,omitempty"`
	// Direct holds, for a spread probe, the endpoint agents' own addresses (host:port) by pod:
	// their TCP handshakes are set beside those through the Service; the job's agent, when it has
	// one, is DST's (probes.SpreadSpec).
	Direct map[string]string `json:"direct,omitempty"`
}

// MaxDirect bounds how many endpoint addresses one spread probe takes.
const MaxDirect = 64

// Label is the probe's name in results.
func (p ProbeSpec) Label() string {
	if p.Name != "" {
		return p.Name
	}
	return p.Kind
}

// Bounds of a probe spec; the plugin validates its flags against the same numbers.
const (
	MaxStreams         = 128
	MaxConnections     = 1024
	MaxDurationSeconds = 3600
	MaxCount           = 100000
	MaxQPS             = 1e6
)

func (p ProbeSpec) checkBounds() error {
	switch {
	case p.Streams < 0 || p.Streams > MaxStreams:
		return fmt.Errorf("streams %d: want 1-%d", p.Streams, MaxStreams)
	case p.Connections < 0 || p.Connections > MaxConnections:
		return fmt.Errorf("connections %d: want 1-%d", p.Connections, MaxConnections)
	case p.DurationSeconds < 0 || p.DurationSeconds > MaxDurationSeconds:
		return fmt.Errorf("duration %gs: want up to %ds", p.DurationSeconds, MaxDurationSeconds)
	case p.Count < 0 || p.Count > MaxCount:
		return fmt.Errorf("count %d: want up to %d", p.Count, MaxCount)
	case p.QPS < 0 || p.QPS > MaxQPS:
		return fmt.Errorf("qps %g: want up to %g", p.QPS, MaxQPS)
	}
	return nil
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// Validate checks a job before it runs.
func (j *Job) Validate() error {
	if j.APIVersion != APIVersion {
		return fmt.Errorf("job apiVersion %q: this agent speaks %q", j.APIVersion, APIVersion)
	}
	if len(j.Probes) == 0 {
		return fmt.Errorf("job has no probes")
	}
	for _, p := range j.Probes {
		known := false
		for _, k := range ProbeKinds {
			known = known || p.Kind == k
		}
		if !known {
			return fmt.Errorf("unknown probe kind %q (known: %v)", p.Kind, ProbeKinds)
		}
		if err := p.checkBounds(); err != nil {
			return fmt.Errorf("probe %s: %w", p.Label(), err)
		}
		if err := checkServerOnly(p); err != nil {
			return fmt.Errorf("probe %s: %w", p.Label(), err)
		}
		if p.Kind == ProbeSpread && (p.Address == "" || p.Count == 0) {
			return fmt.Errorf("probe %s: a spread probe needs an address and a count", p.Label())
		}
		if err := checkDirect(p); err != nil {
			return fmt.Errorf("probe %s: %w", p.Label(), err)
		}
		if p.Kind == ProbeEgress {
			if err := checkEgress(p); err != nil {
				return fmt.Errorf("probe %s: %w", p.Label(), err)
			}
			continue
		}
		if p.Kind == ProbeDNS && p.Host != "" {
			return fmt.Errorf("probe %s: host %q: a DNS probe asks the pod's nameservers, never the agent server", p.Label(), p.Host)
		}
		if p.Kind == ProbeDNS {
			if err := checkDNSProbe(p); err != nil {
				return fmt.Errorf("probe %s: %w", p.Label(), err)
			}
			continue
		}
		// A spread probe has both: its Service address, and Host for its straight handshakes to DST.
		if p.Host != "" && (net.ParseIP(p.Host) == nil || j.Host == "" || p.URL != "" || (p.Address != "" && p.Kind != ProbeSpread)) {
			return fmt.Errorf("probe %s: host %q: want the agent server's IP address of another family, in a job with a host and no address (but a spread probe's) or URL", p.Label(), p.Host)
		}
		if p.Address == "" && p.URL == "" && (j.Host == "" || j.Port == 0) {
			return fmt.Errorf("probe %s: job has no agent host and port, and the probe no address", p.Label())
		}
	}
	return nil
}

// IsRateProbe says whether kind is one of the closed-loop rate probes.
var IsRateProbe = v1alpha1.IsRateProbe

// MinLoadedSeconds is the shortest load a loaded-rtt probe takes.
const MinLoadedSeconds = 2.5

// checkServerOnly holds the probes that measure against the agent server only (UDP, path MTU,
// the rate probes) to it, and their sizes to what the server answers.
func checkServerOnly(p ProbeSpec) error {
	udp, rate := p.Kind == ProbeUDP || p.Kind == ProbePMTU || p.Kind == ProbeUDPRR || p.Kind == ProbeLoadedRTT, p.Kind == ProbeTCPRR || p.Kind == ProbeTCPCRR
	switch {
	case p.Kind == ProbeLoadedRTT && (p.DurationSeconds < MinLoadedSeconds || p.DurationSeconds > probes.MaxLoadedSeconds):
		return fmt.Errorf("duration %gs: a loaded-rtt probe needs %gs at least (1 s of warm-up, 1 s of samples, 0.5 s before the load ends) and saturates the path for at most %ds", p.DurationSeconds, MinLoadedSeconds, probes.MaxLoadedSeconds)
	case p.Kind == ProbeLoadedRTT && p.IntervalMillis != 0 && (p.IntervalMillis < 1 || p.IntervalMillis > 1000):
		return fmt.Errorf("interval %gms: want 1-1000 ms", p.IntervalMillis)
	case (udp || rate) && (p.Address != "" || p.URL != ""):
		return errors.New("this probe measures against the agent server only")
	case p.Kind == ProbeUDP && (p.Size < probes.UDPHeaderLen || p.Size > probes.UDPMaxDatagram),
		(p.Kind == ProbeUDPRR || p.Kind == ProbeLoadedRTT) && p.Size != 0 && (p.Size < probes.UDPHeaderLen || p.Size > probes.UDPMaxDatagram):
		return fmt.Errorf("size %d: want %d-%d bytes", p.Size, probes.UDPHeaderLen, probes.UDPMaxDatagram)
	case (rate || p.Kind == ProbeUDPRR) && p.Count < 0:
		return fmt.Errorf("count %d: a rate probe's cap on its transactions is 0 (none) or more", p.Count)
	case (p.Kind == ProbeTCPCRR || p.Kind == ProbeUDPRR) && p.Connections > probes.MaxRateClients:
		return fmt.Errorf("%d clients: want 1-%d", p.Connections, probes.MaxRateClients)
	case rate && (p.Size < 0 || p.Size > probes.MaxRateBytes || p.ResponseSize < 0 || p.ResponseSize > probes.MaxRateBytes):
		return fmt.Errorf("request %d and response %d bytes: want up to %d each", p.Size, p.ResponseSize, probes.MaxRateBytes)
	case !rate && p.ResponseSize != 0:
		return errors.New("a response size is for the tcp-rr and tcp-crr probes only")
	}
	return nil
}

// checkLookupFamilies accepts a DNS probe's lookup family (both, or one: then no race check,
// one query per name has nothing to race) and its what-if of another.
func checkLookupFamilies(p ProbeSpec) error {
	families := []string{v1alpha1.LookupBoth, v1alpha1.LookupIPv4, v1alpha1.LookupIPv6}
	switch {
	case !slices.Contains(families, p.LookupFamily):
		return fmt.Errorf("lookup family %q: want %s, %s or empty (both)", p.LookupFamily, v1alpha1.LookupIPv4, v1alpha1.LookupIPv6)
	case p.WhatIfLookupFamily != probes.WhatIfBothFamilies && !slices.Contains(families, p.WhatIfLookupFamily):
		return fmt.Errorf("what-if lookup family %q: want %s, %s, %s or empty (none)", p.WhatIfLookupFamily, probes.WhatIfBothFamilies, v1alpha1.LookupIPv4, v1alpha1.LookupIPv6)
	case p.DNSRace > 0 && p.LookupFamily != v1alpha1.LookupBoth:
		return fmt.Errorf("race check with lookup family %s: one query per name has no A/AAAA race", p.LookupFamily)
	}
	return nil
}

// checkDirect accepts endpoint addresses on spread probes only, at most MaxDirect, each an
// IP address and a port.
func checkDirect(p ProbeSpec) error {
	if len(p.Direct) > 0 && p.Kind != ProbeSpread {
		return errors.New("endpoint addresses are for spread probes only")
	}
	if len(p.Direct) > MaxDirect {
		return fmt.Errorf("%d endpoint addresses: at most %d", len(p.Direct), MaxDirect)
	}
	for pod, addr := range p.Direct {
		if pod == "" {
			return errors.New("an endpoint address without its pod's name")
		}
		if _, err := netip.ParseAddrPort(addr); err != nil {
			return fmt.Errorf("endpoint %q: address %q: want IP:port", pod, addr)
		}
	}
	return nil
}

// checkReplicas accepts at most MaxDNSReplicas replicas, each an IP address.

// Event types.
const (
	EventReady    = "ready"
	EventProgress = "progress"
	EventResult   = "result"
	EventError    = "error"
	EventExit     = "exit"
	// EventFootprint (a runner's, before it tells its server to stop) carries what the client
	// and the server agent processes cost over the job, by role.
	EventFootprint = "footprint"
)

// Event is one line of an agent's stdout.
type Event struct {
	APIVersion string    `json:"apiVersion"`
	Type       string    `json:"type"`
	Time       time.Time `json:"time"`
	// Port the server listens on (ready).
	Port    int    `json:"port,omitempty"`
	Probe   string `json:"probe,omitempty"`
	Message string `json:"message,omitempty"`
	// Reason classifies an error event: ReasonRefused, ReasonTimeout, or empty.
	Reason string       `json:"reason,omitempty"`
	Result *ProbeResult `json:"result,omitempty"`
	// Footprints (footprint events) by role: client, server.
	Footprints map[string]Footprint `json:"footprints,omitempty"`
}

// ProbeResult is v1alpha1.ProbeResult, a type of the reports' schema.
type ProbeResult = v1alpha1.ProbeResult

// DNSReport is the DNS probe's result with what the agent found in the pod:
// v1alpha1.DNSProbeResult, a type of the reports' schema.
type DNSReport = v1alpha1.DNSProbeResult

// Emitter writes events as JSON lines; safe for concurrent use.
type Emitter struct {
	mu  sync.Mutex
	enc *json.Encoder
	now func() time.Time
}

// NewEmitter writes to w.
func NewEmitter(w io.Writer) *Emitter { return &Emitter{enc: json.NewEncoder(w), now: time.Now} }

// Emit writes one event, filling in the version and the time.
func (e *Emitter) Emit(ev Event) {
	e.mu.Lock()
	defer e.mu.Unlock()
	ev.APIVersion = APIVersion
	if ev.Time.IsZero() {
		ev.Time = e.now().UTC()
	}
	_ = e.enc.Encode(ev)
}

// LimitProcs runs the agent on one OS thread at a time unless GOMAXPROCS says otherwise. The
// agent shares its pod (and often its node) with the application it measures and should cost
// at most one core; one thread also moves bytes more cheaply than several competing for the
// same cores — the way iperf3 works — which the benchmarks show.
func LimitProcs() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}

// ErrNotEvent means a line of an agent's output is not an event of this API version: a
// runtime's own message, or an agent of another version.
var ErrNotEvent = errors.New("not an agent event")

// DecodeEvent decodes one line of an agent's output, checking its apiVersion.
func DecodeEvent(line []byte) (Event, error) {
	var ev Event
	if err := json.Unmarshal(line, &ev); err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrNotEvent, err)
	}
	if ev.APIVersion != APIVersion {
		return Event{}, fmt.Errorf("%w: apiVersion %q, want %q", ErrNotEvent, ev.APIVersion, APIVersion)
	}
	switch ev.Type {
	case EventReady, EventProgress, EventResult, EventError, EventExit, EventFootprint:
	default:
		return Event{}, fmt.Errorf("%w: unknown type %q", ErrNotEvent, ev.Type)
	}
	return ev, nil
}
