package v1alpha1

// EgressResult is what a client measures of a destination with no agent on its far side (a
// database, a cloud API, a VM): each phase of a request on new connections, and the time to
// the first byte on a reused one. Every figure is a duration of its own phase, not a time
// since the start as curl's -w timings are (curl's time_connect is DNS + Connect).
type EgressResult struct {
	// Target is the destination as given, less any query and fragment (they may carry
	// secrets); Scheme is tcp, http, https, grpc or grpcs; Protocol is the answers' (HTTP/1.1,
	// HTTP/2.0, gRPC).
	// No proxy is used: the path is the pod's own.
	Target   string `json:"target"`
	Scheme   string `json:"scheme"`
	Protocol string `json:"protocol,omitempty"`
	Host     string `json:"host"`
	Port     string `json:"port"`
	// Addresses are what Host resolved to (the first lookup's answer); RemoteAddress is the
	// address the connections reached.
	Addresses     []string `json:"addresses,omitempty"`
	RemoteAddress string   `json:"remoteAddress,omitempty"`
	// NewConnections is how many new connections were measured, each with its own lookup.
	NewConnections int `json:"newConnections"`
	// DNS is each lookup of Host, through the client's resolver; absent for an address.
	DNS *Latency `json:"dns,omitempty"`
	// Connect is each TCP handshake: from the first connection attempt until one is established
	// (an address family given up on counts, as in curl's time_connect).
	Connect Latency `json:"connect"`
	// TLS is each TLS handshake (https, grpcs), with what the server presented.
	TLS *TLSHandshake `json:"tls,omitempty"`
	// FirstByteNew is, for http and https, each request on a new connection from the request's
	// start (before the lookup) to the first byte of its answer: curl's time_starttransfer; for
	// grpc and grpcs, each health check on a new connection from its start (before the lookup)
	// to its whole answer (HTTP/2's settings exchange included).
	FirstByteNew *Latency `json:"firstByteNew,omitempty"`
	// FirstByteReused is each request on one kept-alive connection, from the request's start
	// to the first byte of its answer (gRPC: its whole answer): the server's time and one round
	// trip.
	FirstByteReused *Latency `json:"firstByteReused,omitempty"`
	// NotReused says why FirstByteReused is absent or short of NewConnections samples: the
	// server closed the kept-alive connection.
	NotReused string `json:"notReused,omitempty"`
	// Status is the HTTP status of the answers (all were below 500).
	Status int `json:"status,omitempty"`
	// GRPCStatus is, for grpc and grpcs, the last answer to the standard health check of the
	// whole server (grpc.health.v1.Health/Check): SERVING, NOT_SERVING, or the status the server
	// answered with, such as Unimplemented when it has no health service (still an answer, timed).
	GRPCStatus string `json:"grpcStatus,omitempty"`
	// Download is, with path --download (http, https), one more request's body read on a new
	// connection.
	Download *EgressDownload `json:"download,omitempty"`
	// ICMP is, for icmp://HOST (or an address alone), the ICMP echo requests to the first address
	// of the first lookup (RemoteAddress), each timed as iputils ping times it; Connect is then
	// empty.
	ICMP *RTTResult `json:"icmp,omitempty"`
	// SeenSource is the address the far side saw the requests come from, when its answer is
	// that address alone (plain text, as checkip-style services answer, or JSON with "ip" or
	// "origin"): the pod's own, its node's (SNAT) or a gateway's.
	SeenSource string `json:"seenSource,omitempty"`
}

// EgressDownload is one answer's body read on a new connection (path --download): its rate from
// the answer's first byte to the last byte read.
type EgressDownload struct {
	Bytes int64 `json:"bytes"`
	// Seconds runs from the answer's first byte to the last byte read; TotalSeconds from the
	// request's start (lookup, connect and handshake included), as curl's time_total.
	Seconds      float64 `json:"seconds"`
	TotalSeconds float64 `json:"totalSeconds"`
	// BitsPerSecond is Bytes × 8 / Seconds; 0 for a body under 1 MiB (Note says why). When the
	// time allowed ended the download, Seconds is that time: a stall in it counts.
	BitsPerSecond float64 `json:"bitsPerSecond"`
	// Protocol is the answer's (HTTP/1.1, HTTP/2.0).
	Protocol string `json:"protocol,omitempty"`
	// Ended says what ended the reading: "end" (the body's end), "limit" (1 GiB read) or
	// "duration" (the time --download allowed ran out).
	Ended string `json:"ended"`
	// Note says why there is no rate (a body too short).
	Note string `json:"note,omitempty"`
	// Error says why the download failed (a non-2xx answer, no answer, a body cut short): the
	// other figures of the result stand, the download's are absent.
	Error string `json:"error,omitempty"`
}

// TLSHandshake is the TLS handshakes' time and what the server presented in the last one.
type TLSHandshake struct {
	Latency    Latency `json:"latency"`
	Version    string  `json:"version"`
	Cipher     string  `json:"cipher"`
	ServerName string  `json:"serverName"`
	// Chain is the chain that verified (leaf first, up to the trusted root), by subject; unverified,
	// the certificates the server sent.
	Chain []string `json:"chain"`
	// Verified says the chain was verified against the client's trusted roots for ServerName
	// (a handshake that fails verification fails the probe, with the reason).
	Verified bool `json:"verified"`
}
