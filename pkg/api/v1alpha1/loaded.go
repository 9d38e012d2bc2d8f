package v1alpha1

import "time"

// LoadedResult is the outcome of a loaded-rtt probe: round trips sampled idle, then while
// Streams TCP streams from the client to the server saturated the path (the same direction the
// samples go out in), after a warm-up.
type LoadedResult struct {
	Streams int `json:"streams"`
	// LoadSeconds is how long the streams ran; WarmUpSeconds how long after their start the
	// loaded samples began (they end before the streams do).
	LoadSeconds   float64 `json:"loadSeconds"`
	WarmUpSeconds float64 `json:"warmUpSeconds"`
	// SampledFrom and SampledUntil bound the loaded samples (the agent's clock, UTC): a reference
	// run alongside compares over the same window.
	SampledFrom  time.Time `json:"sampledFrom"`
	SampledUntil time.Time `json:"sampledUntil"`
	// Idle and Loaded are the UDP echo's round trips (as the udp probe measures them) before and
	// under the load; IdleICMP and LoadedICMP the ICMP echo's, where ICMP is permitted
	// (ICMPSkipped says why not).
	Idle        *RTTResult `json:"idle"`
	Loaded      *RTTResult `json:"loaded"`
	IdleICMP    *RTTResult `json:"idleICMP,omitempty"`
	LoadedICMP  *RTTResult `json:"loadedICMP,omitempty"`
	ICMPSkipped string     `json:"icmpSkipped,omitempty"`
	// Throughput is the load's own result.
	Throughput *ThroughputResult `json:"throughput"`
	// AddedP50Micros and AddedP99Micros are the UDP round trip's loaded percentile less its idle
	// one: the delay the load added.
	AddedP50Micros float64 `json:"addedP50Micros"`
	AddedP99Micros float64 `json:"addedP99Micros"`
	// RPM and IdleRPM are the responsiveness, in round trips per minute: 60 s divided by the
	// trimmed mean (the lowest 95 %) of the UDP round trips under load, and idle (the IETF IPPM
	// responsiveness draft's unit and trimmed mean; its probes are TCP, TLS and HTTP
	// exchanges, these are UDP echoes on a flow of their own).
	RPM     float64 `json:"rpm"`
	IdleRPM float64 `json:"idleRPM"`
}
