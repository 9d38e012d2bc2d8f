package v1alpha1

import "time"

// MatrixReport is `kubectl netbench matrix`: one agent per selected node, pairs of them
// measured as planned, summarised as zone × zone (and node × node) cells, per-node summaries and
// the outliers.
type MatrixReport struct {
	APIVersion  string    `json:"apiVersion"`
	Kind        string    `json:"kind"`
	ToolVersion string    `json:"toolVersion"`
	StartTime   time.Time `json:"startTime"`
	Namespace   string    `json:"namespace"`
	// Scope is zones, nodes or sample (see docs/matrix.md).
	Scope string `json:"scope"`
	// IPFamily is the family of the addresses the agents measured each other at (IPv4 or
	// IPv6): --ip-family's, else the pods' primary.
	IPFamily string     `json:"ipFamily,omitempty"`
	Plan     MatrixPlan `json:"plan"`
	// Probe is what the cells' RTT figures come from: icmp, or tcp-rtt when ICMP was not
	// allowed on some pair.
	Probe string `json:"probe"`
	// Nodes are the nodes with an agent; Excluded those left out, with the reason.
	Nodes    []MatrixNode  `json:"nodes"`
	Excluded []MatrixExcl  `json:"excluded,omitempty"`
	Pairs    []MatrixPair  `json:"pairs"`
	Zones    []MatrixCell  `json:"zoneCells"`
	NodeGrid []MatrixCell  `json:"nodeCells,omitempty"`
	Outliers []MatrixFlag  `json:"outliers,omitempty"`
	Summary  []NodeSummary `json:"nodeSummary"`
	// Policy is what the NetworkPolicies of the namespace allow between the agents.
	Policy   *PolicyCheck  `json:"networkPolicy,omitempty"`
	Timing   Timing        `json:"timing"`
	Warnings []string      `json:"warnings,omitempty"`
	Checks   []CheckResult `json:"checks,omitempty"`
	// Factor is --outlier-factor (pairs), NodeFactor --node-outlier-factor (nodes).
	Factor     float64 `json:"outlierFactor"`
	NodeFactor float64 `json:"nodeOutlierFactor"`
	// IPv6 is, with --ip-family both, the same pairs measured over IPv6 in the same jobs (each
	// IPv6 probe right after its IPv4 twin): its pairs, cells, outliers and node summary; the
	// report itself is then IPv4's.
	IPv6 *MatrixReport `json:"ipv6,omitempty"`
}

// MatrixPlan is the plan as it was printed before the run.
type MatrixPlan struct {
	Pairs       int `json:"pairs"`
	Rounds      int `json:"rounds"`
	Concurrency int `json:"concurrency"`
	// PairsPerCell (zones scope) and Sample (sample scope) as asked.
	PairsPerCell     int     `json:"pairsPerCell,omitempty"`
	Sample           int     `json:"sample,omitempty"`
	PerPairSeconds   float64 `json:"perPairSeconds"`
	EstimatedSeconds float64 `json:"estimatedSeconds"`
}

// MatrixNode is a node with an agent.
type MatrixNode struct {
	Name string `json:"name"`
	Zone string `json:"zone"`
	Pod  string `json:"pod,omitempty"`
	IP   string `json:"podIP,omitempty"`
}

// MatrixExcl is a node left out of the matrix, and why.
type MatrixExcl struct {
	Node   string `json:"node"`
	Reason string `json:"reason"`
}

// MatrixPair is one measured pair: the agent on From measured the agent on To.
type MatrixPair struct {
	From     string `json:"from"`
	To       string `json:"to"`
	FromZone string `json:"fromZone"`
	ToZone   string `json:"toZone"`
	// Error says why the pair has no figures; Results holds its probes' results otherwise.
	Error   string         `json:"error,omitempty"`
	Results []*ProbeResult `json:"results,omitempty"`
	// IPv6Error, with --ip-family both, says why the pair's IPv6 probes failed while its IPv4
	// results stand (in the report's ipv6 part it is the pair's Error).
	IPv6Error string `json:"ipv6Error,omitempty"`
	// RateError, with --rates, says why a rate probe measured nothing (failed, or skipped:
	// tcp-crr without ports to spare); the pair's other figures stand. IPv6RateError is the
	// same for the IPv6 twins (in the report's ipv6 part it is the pair's RateError).
	RateError     string `json:"rateError,omitempty"`
	IPv6RateError string `json:"ipv6RateError,omitempty"`
	// The pair's figures from Probe: RTT percentiles in µs over Samples round trips, at the
	// probe's resolution, and the loss; Gbps when throughput was measured; PerSecond, with
	// --rates, each rate probe's transactions (tcp-crr: connections) per second, by probe kind.
	P50Micros        float64            `json:"p50Micros,omitempty"`
	P99Micros        float64            `json:"p99Micros,omitempty"`
	Samples          int                `json:"samples,omitempty"`
	ResolutionMicros float64            `json:"resolutionMicros,omitempty"`
	LossPercent      float64            `json:"lossPercent,omitempty"`
	Gbps             *float64           `json:"gbps,omitempty"`
	PerSecond        map[string]float64 `json:"perSecond,omitempty"`
}

// MatrixCell summarises the pairs from one zone (or node) to another: the median over its
// pairs of each pair's p50 and p99, the range of the p50s, the median Gbit/s, and each rate
// probe's median per second over the pairs that measured it.
type MatrixCell struct {
	From      string             `json:"from"`
	To        string             `json:"to"`
	Pairs     int                `json:"pairs"`
	P50Micros float64            `json:"p50Micros"`
	P99Micros float64            `json:"p99Micros"`
	MinP50    float64            `json:"minP50Micros"`
	MaxP50    float64            `json:"maxP50Micros"`
	Gbps      *float64           `json:"gbps,omitempty"`
	PerSecond map[string]float64 `json:"perSecond,omitempty"`
}

// NodeSummary compares a node's pairs with the other pairs of the same cells: Ratio is the
// median, over its pairs, of the pair's p50 over the median p50 of the cell's pairs that do not
// involve this node; ExcessMicros the median difference.
type NodeSummary struct {
	Node         string  `json:"node"`
	Zone         string  `json:"zone"`
	AsClient     int     `json:"pairsAsClient"`
	AsServer     int     `json:"pairsAsServer"`
	Compared     int     `json:"pairsCompared"`
	Ratio        float64 `json:"ratio,omitempty"`
	ExcessMicros float64 `json:"excessMicros,omitempty"`
	Outlier      bool    `json:"outlier,omitempty"`
}

// MatrixFlag is an outlier: a node whose pairs are slower than the same cells' others, or a
// pair slower than the rest of its cell (pairs of an outlying node are not listed again).
type MatrixFlag struct {
	Kind    string  `json:"kind"` // node or pair
	Node    string  `json:"node,omitempty"`
	From    string  `json:"from,omitempty"`
	To      string  `json:"to,omitempty"`
	Figure  string  `json:"figure"` // p50 or p99
	Ratio   float64 `json:"ratio"`
	Message string  `json:"message"`
}
