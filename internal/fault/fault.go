// Package fault holds the defects that the mutation runs (make test-mutations, hack/mutations.sh)
// inject, one at a time, to show that each fidelity test fails on the defect it exists to catch.
//
// A fault is compiled in only with the build tag netbench_faults; without it Compiled is the
// constant false and On's callers' branches are removed by the compiler, so released binaries
// and images carry none of them. With the tag, NETBENCH_FAULTS (names separated by commas)
// turns faults on in the plugin, and the plugin passes the same variable to the agents it starts.
package fault

import (
	"os"
	"slices"
	"strings"
	"sync"
)

// Name is one injectable defect. Each is named for what it breaks.
type Name string

// The faults, each next to the test that must catch it (hack/mutations.sh holds the table).
const (
	// HTTPUnstaggered lets a fixed-rate HTTP probe's connections fire together, so each request
	// queues behind the others in both agents (TestHTTPNewConnMatchesCurl).
	HTTPUnstaggered Name = "http-unstaggered"
	// UDPDwellKept leaves the server's dwell in each UDP round trip (TestUDPProbeLossAndRTT).
	UDPDwellKept Name = "udp-dwell-kept"
	// LossOneWay reports loss as the one-way share a symmetric path would have:
	// 1 − √(received/sent) (TestUDPProbeLossAndRTT).
	LossOneWay Name = "loss-one-way"
	// RTTHalved reports half of every ICMP round trip (TestZoneDelayOrdersRTT, TestRTTAgreesWithPing).
	RTTHalved Name = "rtt-halved"
	// ZoneHintsIgnored computes the DNS Service's cross-zone share as if it had no
	// trafficDistribution (TestDNSReplicasByZone).
	ZoneHintsIgnored Name = "zone-hints-ignored"
	// ObserveNoTCP makes --observe miss the DNS queries sent over TCP
	// (TestDNSObserveMatchesPacketCapture).
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
)

// Env is the environment variable that turns faults on, in the plugin and in its agents.
const Env = "NETBENCH_FAULTS"

var active = sync.OnceValue(func() []Name {
	var names []Name
	for _, n := range strings.Split(os.Getenv(Env), ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, Name(n))
		}
	}
	return names
})

// On says whether fault n is injected in this process.
func On(n Name) bool { return Compiled && slices.Contains(active(), n) }

// Value is what the plugin passes to its agents in Env: the process's own setting in a build
// with faults, "" otherwise.
func Value() string {
	if !Compiled {
		return ""
	}
	return os.Getenv(Env)
}
