package v1alpha1

// IsRateProbe says whether kind is one of the closed-loop rate probes (tcp-rr, udp-rr, tcp-crr).
func IsRateProbe(kind string) bool {
	return kind == ProbeTCPRR || kind == ProbeUDPRR || kind == ProbeTCPCRR
}

// RateResult is the outcome of a request/response rate probe (tcp-rr, tcp-crr, udp-rr): a
// closed loop on Connections parallel clients, each sending its next request as soon as the
// previous response arrived.
type RateResult struct {
	// Kind is the probe kind: ProbeTCPRR, ProbeTCPCRR or ProbeUDPRR.
	Kind        string `json:"kind"`
	Connections int    `json:"connections"`
	// RequestBytes and ResponseBytes are each transaction's payload sizes. A tcp-crr request
	// also carries the hello that authenticates the connection (HelloBytes), and its
	// response the server's one-byte acceptance.
	RequestBytes  int `json:"requestBytes"`
	ResponseBytes int `json:"responseBytes"`
	HelloBytes    int `json:"helloBytes,omitempty"`
	// DurationSeconds is the time the loop ran, from the first request to the last response.
	DurationSeconds float64 `json:"durationSeconds"`
	// Transactions completed; for tcp-crr each is a whole connection (connect, request,
	// response, close).
	Transactions int64 `json:"transactions"`
	// PerSecond is Transactions ÷ DurationSeconds: transactions (tcp-rr, udp-rr) or
	// connections (tcp-crr) per second.
	PerSecond float64 `json:"perSecond"`
	// LittleLawPerSecond is Connections ÷ the mean latency: what a closed loop without gaps
	// between its transactions does.
	LittleLawPerSecond float64 `json:"littleLawPerSecond,omitempty"`
	// Latency of every completed transaction, from just before its connect (tcp-crr) or its
	// request's send to its response's arrival (tcp-crr: its close).
	Latency Latency `json:"latency"`
	// Connect is, for tcp-crr, how long each connect(2) took: one round trip, the handshake.
	Connect *Latency `json:"connect,omitempty"`
	// Errors counts failed transactions (udp-rr: datagrams without an answer within
	// TimeoutMillis), FirstError the first one's cause.
	Errors        int64   `json:"errors"`
	FirstError    string  `json:"firstError,omitempty"`
	LossPercent   float64 `json:"lossPercent,omitempty"`
	TimeoutMillis float64 `json:"timeoutMillis,omitempty"`
	// Ports is, for tcp-crr, the client's use of its ephemeral ports.
	Ports *EphemeralPorts `json:"ports,omitempty"`
	// Stopped says why the loop ended before its duration (the port budget reached).
	Stopped string `json:"stopped,omitempty"`
	// Capped says the loop ended at its cap on transactions before its duration (the
	// matrix's tcp-crr: agent.MeshCRRCap connections per pair), as it was asked to.
	Capped bool `json:"capped,omitempty"`
	// Cap is that cap on transactions (tcp-crr: connections) started; 0 when none.
	Cap int64 `json:"cap,omitempty"`
	// ClientWait is how the client waited for each answer: WaitBlockingRead or WaitPoller.
	ClientWait string `json:"clientWait,omitempty"`
}

// How a rate client waits for its answers.
const (
	// WaitBlockingRead: in one read(2) on a blocking socket, asleep in the kernel until the
	// answer wakes it, as sockperf and netperf wait (tcp-rr and udp-rr of one connection, on
	// Linux, when the agent has a processor to spare for it).
	WaitBlockingRead = "blocking-read"
	// WaitPoller: through Go's network poller (several connections, tcp-crr, or no processor
	// to spare): a few µs more per transaction than a blocking read.
	WaitPoller = "poller"
)

// EphemeralPorts is what a tcp-crr probe did to the client pod's ephemeral ports. The client
// closes each connection first, so each leaves a socket in TIME-WAIT on the client for 60 s
// that holds its port towards the server's address and port; the probe stops once it holds
// Budget of them.
type EphemeralPorts struct {
	// RangeSize is the pod's net.ipv4.ip_local_port_range: ports one destination can get.
	RangeSize int `json:"rangeSize"`
	// Budget is the most ports the probe lets itself hold: half the range less the TIME-WAIT
	// sockets the pod had before towards the server's address and port (TimeWaitToServer; a
	// port in TIME-WAIT is held towards its peer only).
	Budget int `json:"budget"`
	// PeakHeld is the most ports the probe's own connections held at once (open, or closed
	// less than 60 s before).
	PeakHeld int `json:"peakHeld"`
	// TimeWaitBefore and TimeWaitAfter are the TIME-WAIT sockets of the client pod's network
	// namespace (/proc/net/sockstat) before the probe and at its end; -1 when unreadable.
	TimeWaitBefore int `json:"timeWaitBefore"`
	TimeWaitAfter  int `json:"timeWaitAfter"`
	// TimeWaitToServer is how many of TimeWaitBefore were towards the server's address and
	// port (/proc/net/tcp and tcp6); all of them where those cannot be read.
	TimeWaitToServer int `json:"timeWaitToServer"`
}
