package v1alpha1

// Probe kinds.
const (
	ProbeICMP        = "icmp"
	ProbeTCPRTT      = "tcp-rtt"
	ProbeHTTP        = "http"          // keep-alive at fixed qps
	ProbeHTTPNewConn = "http-new-conn" // a new connection per request at fixed qps
	ProbeHTTPMax     = "http-max"      // closed loop
	ProbeGRPC        = "grpc"
	ProbeTCP         = "tcp" // throughput
	ProbeDNS         = "dns" // the resolver's real queries for names, with what-ifs
	// ProbeSpread opens Count new connections to Address (a Service) and asks each agent
	// endpoint who it is: where the Service sends connections from here.
	ProbeSpread = "spread"
	// ProbeUDP sends Count datagrams at IntervalMillis to the server's UDP echo: RTT, loss
	// and jitter.
	ProbeUDP = "udp"
	// ProbePMTU finds the largest packet that crosses the path with "don't fragment" set.
	ProbePMTU = "path-mtu"
	// ProbeTCPRR sends a request and waits for its response, one after another on each of
	// Connections persistent connections (closed loop, netperf's TCP_RR): transactions per second.
	ProbeTCPRR = "tcp-rr"
	// ProbeTCPCRR opens a connection, sends a request, reads the response and closes, one after
	// another on each of Connections parallel clients (netperf's TCP_CRR): connections per second.
	ProbeTCPCRR = "tcp-crr"
	// ProbeUDPRR sends a datagram to the server's UDP echo and waits for its answer, one after
	// another on each of Connections sockets: transactions per second.
	ProbeUDPRR = "udp-rr"
	// ProbeLoadedRTT samples the round trip (UDP echo, and ICMP where permitted) idle, then
	// while TCP streams from the client to the server saturate the same path: latency under
	// load and responsiveness.
	ProbeLoadedRTT = "loaded-rtt"
	// ProbeEgress measures a destination with no agent on its far side (URL: tcp://, http://,
	// https://, grpc://, grpcs://, icmp://): DNS lookup, TCP connect, TLS handshake and first byte (gRPC: a
	// health check's answer) on Count new connections, then the same on one reused connection.
	ProbeEgress = "egress"
)

// ProbeResult holds exactly one of the typed results, or Skipped with the reason.
type ProbeResult struct {
	Name    string `json:"name"`
	Kind    string `json:"kind"`
	Skipped string `json:"skipped,omitempty"`
	// IPFamily is the family of the address the probe measured (IPv4 or IPv6), in path and
	// ladder reports.
	IPFamily   string            `json:"ipFamily,omitempty"`
	RTT        *RTTResult        `json:"rtt,omitempty"`
	HTTP       *HTTPResult       `json:"http,omitempty"`
	GRPC       *GRPCResult       `json:"grpc,omitempty"`
	Throughput *ThroughputResult `json:"throughput,omitempty"`
	DNS        *DNSProbeResult   `json:"dns,omitempty"`
	Spread     *SpreadResult     `json:"spread,omitempty"`
	PMTU       *PMTUResult       `json:"pathMTU,omitempty"`
	Rate       *RateResult       `json:"rate,omitempty"`
	Loaded     *LoadedResult     `json:"loaded,omitempty"`
	Egress     *EgressResult     `json:"egress,omitempty"`
	// CPUSeconds is the CPU time (user + system, every thread) the agent that ran the probe
	// spent while it ran: the probe's cost to the pod it ran in.
	CPUSeconds float64 `json:"cpuSeconds,omitempty"`
	// Validity says whether the figures are the path's: what the CPU and interface accounting
	// of the agents that ran the probe says, and why not when a CPU limit or the application's
	// traffic decided them.
	Validity *Validity `json:"validity,omitempty"`
}

// Validity is what the agents' CPU and interface accounting says about one probe.
type Validity struct {
	// Valid is false when a CPU limit, or the application's traffic on a pod's interface, not
	// the network, decided the probe's figures: Causes say what, Reasons whose and how, Advice
	// what to run instead.
	Valid bool `json:"valid"`
	// Causes name what decided the figures when they are not valid: CauseCPULimit,
	// CauseSharedInterface.
	Causes  []string `json:"causes,omitempty"`
	Reasons []string `json:"reasons,omitempty"`
	Advice  string   `json:"advice,omitempty"`
	Client  *CPUUse  `json:"client,omitempty"`
	Server  *CPUUse  `json:"server,omitempty"`
	// ClientTraffic and ServerTraffic are what the client's and the server's pod interfaces
	// carried over the probe besides the agents' own traffic: the application's, which competed
	// with the probe (a throughput figure it took a share of is not valid). Only for an agent
	// that shares an application pod's network namespace (an ephemeral container, the pod not
	// on the host's network).
	ClientTraffic *Traffic `json:"clientTraffic,omitempty"`
	ServerTraffic *Traffic `json:"serverTraffic,omitempty"`
	// ClientApp and ServerApp are the CPU accounting, over the probe, of the application's
	// containers in the pod an ephemeral agent runs in: those whose processes it could see (its
	// target container's; every container's where the pod shares one process namespace), and the
	// others marked NotSeen. Only where the run asked (Job.ClientApp, ServerApp).
	ClientApp []AppContainer `json:"clientApp,omitempty"`
	ServerApp []AppContainer `json:"serverApp,omitempty"`
	// ClientAppNotCompared and ServerAppNotCompared: the agent's scan of its pod's processes
	// was cut short (more than 20,000 threads, or past 200 ms): no figures for its containers.
	ClientAppNotCompared bool `json:"clientAppNotCompared,omitempty"`
	ServerAppNotCompared bool `json:"serverAppNotCompared,omitempty"`
}

// AppContainer is one of the application's containers in an agent's pod over one probe: what
// its processes used and waited (CPUUse, LimitFrom "container": the container's own CPU limit),
// and whether its own limit throttled it.
type AppContainer struct {
	// Name is the container's, matched by its ID to the pod's status.
	Name string `json:"name,omitempty"`
	// ContainerID is the runtime's ID as the container's cgroup names it.
	ContainerID string `json:"containerID,omitempty"`
	Processes   int    `json:"processes,omitempty"`
	// NotSeen: the agent could not see the container's processes (it shares only its target
	// container's process namespace); its figures are zero.
	NotSeen bool `json:"notSeen,omitempty"`
	// CPULimited: over the probe (of 0.5 s or more) the container used 90 % of its own CPU
	// limit or more and its threads waited for a CPU 10 % of the time or more: the
	// application's own latency can then hold CPU waits that the path's figures do not.
	CPULimited bool `json:"cpuLimited,omitempty"`
	CPUUse
}

// Traffic is what one agent's pod interfaces (all but loopback, both directions) carried over
// one probe, and how much of it was at least not the agent's.
type Traffic struct {
	WallSeconds      float64 `json:"wallSeconds"`
	InterfaceBytes   int64   `json:"interfaceBytes"`
	InterfacePackets int64   `json:"interfacePackets"`
	// AgentBytes is what the agent process moved: read and written (its TCP payload, its few
	// reads of /proc and writes of events), its datagrams, its TCP retransmissions.
	AgentBytes int64 `json:"agentBytes"`
	// OtherBytes is the interfaces' bytes less the agent's and every packet's headers (66 bytes
	// each over IPv4, 86 over IPv6: a TCP segment's with timestamps, once per GSO/GRO
	// aggregate; a UDP or ICMP packet carries fewer): the application's own traffic.
	OtherBytes         int64   `json:"otherBytes"`
	OtherBitsPerSecond float64 `json:"otherBitsPerSecond"`
}

// What decided a probe's figures when they are not the path's (Validity.Causes).
const (
	// CauseCPULimit: an agent's CPU limit (its own, or its pod's).
	CauseCPULimit = "cpu-limit"
	// CauseSharedInterface: the application's own traffic on an agent's pod interface took a
	// share of a transfer's bandwidth.
	CauseSharedInterface = "shared-interface"
)

// Where a CPUUse's limit comes from.
const (
	LimitFromCgroup    = "cgroup"
	LimitFromPod       = "pod"
	LimitFromContainer = "container" // an application container's limit in its pod's spec
)

// CPUUse is one agent's CPU accounting over one probe, or an application container's
// (AppContainer: no throttling counters, LimitFrom "container").
type CPUUse struct {
	WallSeconds float64 `json:"wallSeconds"`
	CPUSeconds  float64 `json:"cpuSeconds"`
	// RunQueueWaitSeconds is, summed over the agent's threads, the time they were runnable but
	// waited for a CPU (/proc/self/task/*/schedstat): CFS throttling of the agent's cgroup or
	// of its pod's, and other tasks on the same CPUs.
	RunQueueWaitSeconds float64 `json:"runQueueWaitSeconds"`
	// ThrottledSeconds and ThrottledPeriods are the agent's own cgroup's CFS throttling
	// (cpu.stat, cgroup v1 and v2).
	ThrottledSeconds float64 `json:"throttledSeconds,omitempty"`
	ThrottledPeriods int64   `json:"throttledPeriods,omitempty"`
	// LimitCores is the CPU the agent may use, in cores; 0 without a limit. LimitFrom says
	// whose: "cgroup" (the agent's own CFS quota) or "pod" (an ephemeral container, which has
	// no limit of its own, runs under its pod's: the sum of the containers' CPU limits).
	LimitCores float64 `json:"limitCores,omitempty"`
	LimitFrom  string  `json:"limitFrom,omitempty"`
	// NodeIdleEntries is how many times the CPUs of the agent's node (every CPU, whatever ran
	// on it) entered an idle state other than polling over the probe
	// (/sys/devices/system/cpu/cpu*/cpuidle): each is a CPU that stopped with nothing to run,
	// and the wake-up that ends it costs time (on a virtual machine's halted CPU, an exit to
	// the hypervisor and back). A request/response loop whose waits sleep pays it on some of
	// its transactions: per transaction, this says how often at most. Absent where the node
	// has no such counters to read.
	NodeIdleEntries *int64 `json:"nodeIdleEntries,omitempty"`
}

// Latency summarises a set of durations. All values are microseconds.
type Latency struct {
	Count        int64   `json:"count"`
	MinMicros    float64 `json:"minMicros"`
	AvgMicros    float64 `json:"avgMicros"`
	P50Micros    float64 `json:"p50Micros"`
	P90Micros    float64 `json:"p90Micros"`
	P99Micros    float64 `json:"p99Micros"`
	P999Micros   float64 `json:"p999Micros"`
	MaxMicros    float64 `json:"maxMicros"`
	StdDevMicros float64 `json:"stdDevMicros"`
	// ResolutionMicros is the width of the finest histogram bucket the percentiles were computed
	// from; 0 means the percentiles are exact (computed from every sample, nanosecond clock).
	ResolutionMicros float64 `json:"resolutionMicros"`
	// PercentilesFrom, when set, is how many of the Count samples the percentiles were computed
	// from: a uniform random sample, kept when a run had more requests than the agent keeps
	// (2^20).
	PercentilesFrom int64 `json:"percentilesFrom,omitempty"`
	// Histogram holds the non-empty buckets, for drawing.
	Histogram []Bucket `json:"histogram,omitempty"`
}

// Bucket is one histogram bucket: (StartMicros, EndMicros] holding Count samples.
type Bucket struct {
	StartMicros float64 `json:"startMicros"`
	EndMicros   float64 `json:"endMicros"`
	Count       int64   `json:"count"`
}

// RTTResult is the outcome of an ICMP or TCP-connect RTT probe.
type RTTResult struct {
	Method         string  `json:"method"`
	Target         string  `json:"target"`
	RequestedCount int     `json:"requestedCount"`
	IntervalMillis float64 `json:"intervalMillis"`
	Sent           int     `json:"sent"`
	Received       int     `json:"received"`
	LossPercent    float64 `json:"lossPercent"`
	RTT            Latency `json:"rtt"`
	MdevMicros     float64 `json:"mdevMicros"`
	// JitterMicros (udp only) is the RFC 3550 interarrival jitter estimator applied to
	// successive round trips: J += (|D| − J) / 16, D the difference of two consecutive RTTs.
	JitterMicros float64 `json:"jitterMicros,omitempty"`
	// ServerDwell (udp only) is the time each datagram spent in the server agent, from the
	// kernel's receive time stamp there to its answer's transmit time stamp (or its send, where
	// the follow-up with that stamp did not come): taken off each round trip above, so that RTT
	// is the network's (the kernel's ICMP echo has none).
	ServerDwell     *Latency `json:"serverDwell,omitempty"`
	DurationSeconds float64  `json:"durationSeconds"`
	// Timestamps says where the RTT comes from: "kernel" (ICMP receive time stamps; the
	// kernel's own handshake RTT sample from TCP_INFO) or "userspace".
	Timestamps string `json:"timestamps"`
	// ConnectLatency (tcp-connect only) is how long connect(2) took as the process saw it:
	// the handshake plus the wake-up of the calling goroutine.
	ConnectLatency *Latency `json:"connectLatency,omitempty"`
}

// HTTP load modes, as reported in HTTPResult.Mode.
const (
	HTTPKeepAlive  = "keep-alive"  // fixed qps over N persistent connections
	HTTPNewConn    = "new-conn"    // fixed qps, a new TCP connection for every request
	HTTPClosedLoop = "closed-loop" // as many requests as N connections can do
)

// HTTPResult is the outcome of one HTTP latency run.
type HTTPResult struct {
	Mode            string  `json:"mode"`
	URL             string  `json:"url"`
	Connections     int     `json:"connections"`
	RequestedQPS    float64 `json:"requestedQPS"` // 0 = unlimited (closed loop)
	AchievedQPS     float64 `json:"achievedQPS"`
	DurationSeconds float64 `json:"durationSeconds"`
	// Latency of every request, errors included (as fortio's runner times it).
	Latency Latency `json:"latency"`
	// Requests is the number of requests done, Errors those that failed.
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	// ErrorsByKind counts failures by HTTP status ("503") or "socket" for connection errors.
	ErrorsByKind map[string]int64 `json:"errorsByKind,omitempty"`
	// SocketsOpened is how many TCP connections the run opened.
	SocketsOpened int64 `json:"socketsOpened"`
	// LittleLawQPS is connections ÷ mean latency: the rate a closed loop should reach.
	LittleLawQPS float64 `json:"littleLawQPS,omitempty"`
}

// GRPCResult is the outcome of a gRPC ping run.
type GRPCResult struct {
	Address         string           `json:"address"`
	Connections     int              `json:"connections"`
	RequestedQPS    float64          `json:"requestedQPS"`
	AchievedQPS     float64          `json:"achievedQPS"`
	DurationSeconds float64          `json:"durationSeconds"`
	Latency         Latency          `json:"latency"`
	Requests        int64            `json:"requests"`
	Errors          int64            `json:"errors"`
	ErrorsByKind    map[string]int64 `json:"errorsByKind,omitempty"`
}

// StreamResult is one TCP stream's sender-side view.
type StreamResult struct {
	BytesSent      int64   `json:"bytesSent"`
	BytesReceived  int64   `json:"bytesReceived"`
	BitsPerSecond  float64 `json:"bitsPerSecond"`
	Retransmits    int64   `json:"retransmits"`
	MeanRTTMicros  float64 `json:"meanRTTMicros"` // mean of the kernel's smoothed RTT, sampled every 100 ms
	MaxCwndBytes   int64   `json:"maxCwndBytes"`
	MSSBytes       int64   `json:"mssBytes"`
	TCPInfoSamples int     `json:"tcpInfoSamples"`
}

// ThroughputInterval is the transfer of all streams within one reporting interval.
type ThroughputInterval struct {
	StartSeconds  float64 `json:"startSeconds"`
	EndSeconds    float64 `json:"endSeconds"`
	BytesSent     int64   `json:"bytesSent"`
	BitsPerSecond float64 `json:"bitsPerSecond"`
	Retransmits   int64   `json:"retransmits"`
}

// ThroughputResult is the outcome of a throughput run.
type ThroughputResult struct {
	Address          string  `json:"address"`
	Streams          int     `json:"streams"`
	RequestedSeconds float64 `json:"requestedSeconds"`
	DurationSeconds  float64 `json:"durationSeconds"`
	// BytesSent is what the client wrote while sending; BytesReceived what the server's sink
	// counted in all, including what the send buffers and the path's queues still held when
	// sending ended and delivered after; BytesDelivered what the server acknowledged while
	// the client was sending (TCP_INFO bytes_acked): BitsPerSecondReceived is its rate over
	// DurationSeconds. On a slow path with deep queues the sink's count over the same time
	// would overstate the rate by what drained after the end.
	BytesSent             int64                `json:"bytesSent"`
	BytesReceived         int64                `json:"bytesReceived"`
	BytesDelivered        int64                `json:"bytesDelivered"`
	BitsPerSecondSent     float64              `json:"bitsPerSecondSent"`
	BitsPerSecondReceived float64              `json:"bitsPerSecondReceived"`
	Retransmits           int64                `json:"retransmits"`
	ClientCPUPercent      float64              `json:"clientCPUPercent"` // of one core
	ServerCPUPercent      float64              `json:"serverCPUPercent,omitempty"`
	PerStream             []StreamResult       `json:"perStream"`
	Intervals             []ThroughputInterval `json:"intervals,omitempty"`
}

// SpreadResult counts where a Service's connections landed.
type SpreadResult struct {
	Address     string `json:"address"`
	Connections int    `json:"connections"`
	// Answered connections reached an endpoint that said who it is; Unanswered the rest
	// (refused, timed out, or an endpoint without an agent), by error kind.
	Answered     int            `json:"answered"`
	Unanswered   int            `json:"unanswered"`
	ErrorsByKind map[string]int `json:"errorsByKind,omitempty"`
	// ByZone and ByPod count answered connections per endpoint zone ("" when unknown) and pod.
	ByZone map[string]int `json:"byZone"`
	ByPod  map[string]int `json:"byPod"`
	// Endpoints times the TCP handshake per endpoint, through the Service and straight to the
	// same endpoint agent, when the probe was given the agents' own addresses.
	Endpoints []SpreadEndpoint `json:"endpoints,omitempty"`
	// DST is the TCP handshake straight to the destination's agent, for the routing's effect.
	DST *Handshakes `json:"dst,omitempty"`
}

// SpreadEndpoint is one endpoint's TCP handshakes: Service those through the Service that it
// answered, Direct those to its own address, interleaved with them on the same listener.
type SpreadEndpoint struct {
	Pod     string     `json:"pod"`
	Node    string     `json:"node,omitempty"`
	Zone    string     `json:"zone,omitempty"`
	Service Handshakes `json:"service"`
	Direct  Handshakes `json:"direct"`
}

// Handshakes summarises TCP handshake times: how many completed and their median, in µs
// (resolution: the Go runtime's monotonic clock, 1 ns; each includes the dial's own system calls).
type Handshakes struct {
	Count     int     `json:"count"`
	P50Micros float64 `json:"p50Micros"`
	Failed    int     `json:"failed,omitempty"`
}

// PMTUResult is what the path-MTU probe found.
type PMTUResult struct {
	// PathMTU is the largest IP packet, in bytes, that crossed the path to the server and
	// was answered, with "don't fragment" set; Method how it was found.
	PathMTU int    `json:"pathMTU"`
	Method  string `json:"method"`
	// LocalMTU is the MTU of the interface the probe left by, RemoteMTU the server's (as it
	// reported it); KernelPMTU the kernel's cached path MTU after probing (ICMP "fragmentation
	// needed" lowers it).
	LocalMTU   int `json:"localMTU"`
	RemoteMTU  int `json:"remoteMTU,omitempty"`
	KernelPMTU int `json:"kernelPMTU,omitempty"`
	// Probes is how many packets were sent; FragNeeded says a hop answered a size with ICMP
	// "fragmentation needed" (ICMPv6 "Packet Too Big" over IPv6), else sizes that did not
	// cross were dropped silently.
	Probes     int  `json:"probes"`
	FragNeeded bool `json:"fragNeeded,omitempty"`
}
