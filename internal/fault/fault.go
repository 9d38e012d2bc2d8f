// Package fault holds the defects that the mutation runs (make test-mutations, hack/mutations.sh)
// inject, one at a time, to show that each fidelity test fails on the defect it exists to catch.
//
// A fault is compiled in only with the build tag netbench_faults (on.go); without it (off.go)
// On is the constant false, so the compiler removes every faulty branch, and nothing reads the
// environment: released binaries and images carry none of them (hack/release-check.sh checks). With the tag, NETBENCH_FAULTS (names separated by commas)
// turns faults on in the plugin, and the plugin passes the same variable to the agents it starts.
package fault

// Name is one injectable defect. Each is named for what it breaks.
type Name string

// The faults, each next to the test that must catch it (hack/mutations.sh holds the table).
const (
	// HTTPExtraRoundTrip costs every new-connection HTTP request one round trip more: each
	// connection is opened twice (TestHTTPNewConnMatchesCurl).
	HTTPExtraRoundTrip Name = "http-extra-rtt"
	// LatencyFromBuckets takes request latency percentiles from fortio's histogram, interpolated
	// in buckets that are 10 ms wide between 10 and 20 ms (TestRequestPercentilesAreObserved).
	LatencyFromBuckets Name = "latency-from-buckets"
	// UDPDwellKept leaves the server's dwell in each UDP round trip (TestUDPProbeLossAndRTT).
	UDPDwellKept Name = "udp-dwell-kept"
	// LossOneWay reports loss as the one-way share a symmetric path would have:
	// 1 − √(received/sent) (TestUDPProbeLossAndRTT).
	LossOneWay Name = "loss-one-way"
	// RTTHalved reports half of every ICMP round trip (TestZoneDelayOrdersRTT,
	// TestLadderZoneDelay, TestMatrixZoneDelay).
	RTTHalved Name = "rtt-halved"
	// RTTWakeUp times each ICMP echo reply after a timer wake-up in user space (a 300 µs sleep)
	// instead of by the kernel's receive timestamp (TestLadderZoneDelay, TestMatrixZoneDelay).
	RTTWakeUp Name = "rtt-wakeup"
	// ZoneHintsIgnored computes the DNS Service's cross-zone share as if it had no
	// trafficDistribution (TestDNSReplicasByZone).
	ZoneHintsIgnored Name = "zone-hints-ignored"
	// ObserveNoTCP makes --observe miss the DNS queries sent over TCP
	// (TestDNSTruncatedAnswerOverTCP).
	ObserveNoTCP Name = "observe-no-tcp"
	// ObserveUDPTwice makes --observe count every UDP message twice, as a capture that sees a
	// packet on two interfaces would (TestDNSObserveMatchesPacketCapture).
	ObserveUDPTwice Name = "observe-udp-twice"
	// PMTUOffByOne ends the path-MTU search one byte high: the first size that did not cross
	// (TestPathMTUThroughANarrowNode).
	PMTUOffByOne Name = "pmtu-off-by-one"
	// RaceSeparate makes the race check send A and AAAA from two sockets where the resolver
	// uses one, so it never meets the conntrack race it exists to find (TestDNSRaceCheck).
	RaceSeparate Name = "race-separate"
	// NdotsOffByOne makes the resolver model try a name as is first only with more than ndots
	// dots, not with at least ndots (TestModelMatchesRealResolvers).
	NdotsOffByOne Name = "ndots-off-by-one"
	// PodLimitIgnored makes path judge an ephemeral server agent without its pod's CPU limit,
	// which its own cgroup does not show (TestPathMarksCPULimitedProbes).
	PodLimitIgnored Name = "pod-limit-ignored"
	// TrafficOwnCounted counts the agents' own bytes as the application's traffic on their pods'
	// interfaces (TestPathShowsCompetingTraffic).
	TrafficOwnCounted Name = "traffic-own-counted"
	// DataplaneVsDST sets each endpoint's handshakes through the Service beside the straight ones
	// to DST instead of to the same endpoint, mixing where connections landed into the
	// dataplane's cost (TestLadderServiceCostsWithZoneDelay).
	DataplaneVsDST Name = "dataplane-vs-dst"
	// ThroughputInflated reports a third more TCP payload received than arrived: more bytes
	// than the server pod's interface carried (TestPathBothFamilies/throughput), and a rate over
	// a slow link's (TestThroughputThroughASlowLink).
	ThroughputInflated Name = "throughput-inflated"
	// CRRFromConnect times each tcp-crr connection from the end of its handshake instead of
	// before its connect: one round trip short (TestTCPCRRThroughTheZoneDelay).
	CRRFromConnect Name = "crr-from-connect"
	// RateSampleDropped leaves one in ten of a rate loop's transactions unrecorded: done, but
	// neither counted nor timed (TestRateProbesOnLoopback's Little's law).
	RateSampleDropped Name = "rate-sample-dropped"
	// LoadedAfterLoad takes a loaded-rtt probe's loaded samples after the load has ended
	// (TestLatencyUnderLoadOnABottleneck).
	LoadedAfterLoad Name = "loaded-after-load"
	// LoadRateInflated paces each step of the DNS capacity ramp at half the rate it reports
	// (TestDNSLoadFindsTheKnee).
	LoadRateInflated Name = "load-rate-inflated"
	// EgressConnectWithLookup times each egress connect from its lookup's start, as curl's
	// time_connect counts, instead of from the first connection attempt
	// (TestPathToAnOutsideHostBesideCurl).
	EgressConnectWithLookup Name = "egress-connect-with-lookup"
	// EgressGRPCNoReuse asks each of a gRPC destination's "reused" health checks on a connection
	// of its own (TestPathToAnOutsideGRPCServer).
	EgressGRPCNoReuse Name = "egress-grpc-no-reuse"
	// EgressDownloadOverLimit divides a download's bytes by the time it was allowed (--download)
	// instead of the time it took (TestPathDownloadsBesideCurl).
	EgressDownloadOverLimit Name = "egress-download-over-limit"
	// EntryConnectToAnswer times each way in's connect up to the answer's first byte instead of
	// to the end of its handshake: every extra hop counted twice (TestNodePortWayIn).
	EntryConnectToAnswer Name = "entry-connect-to-answer"
	// EntryExtraHopWithoutBaseline gives a way in's extra hop as the whole connect time of the
	// connections answered on another node, the baseline not taken off (TestNodePortWayIn).
	EntryExtraHopWithoutBaseline Name = "entry-extra-hop-without-baseline"
	// EntryNodeFromAnswerer takes the node that answered a connection through a load balancer
	// for the node it entered by, its SNAT source not read: no extra hop seen
	// (TestLoadBalancerWayIn).
	EntryNodeFromAnswerer Name = "entry-node-from-answerer"
	// WayInEntryIgnored enters path here's way in by DST's own node whatever --entry-node says,
	// the report naming the node asked for: no extra hop in its round trips (TestPathWayIn).
	WayInEntryIgnored Name = "way-in-entry-ignored"
)

// Env is the environment variable that turns faults on, in the plugin and in its agents.
const Env = "NETBENCH_FAULTS"
