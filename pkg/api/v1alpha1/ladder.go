package v1alpha1

import "time"

// LadderReport is `kubectl netbench ladder`: the same probes from a client on each rung (same
// node, same zone, every other zone, other regions) to one server agent next to the destination.
type LadderReport struct {
	APIVersion  string    `json:"apiVersion"`
	Kind        string    `json:"kind"`
	ToolVersion string    `json:"toolVersion"`
	StartTime   time.Time `json:"startTime"`
	// Mode is how the server agent was started; clients are always temporary pods.
	Mode    string `json:"mode"`
	Profile string `json:"profile"`
	// IPFamily is the address family the probes used (--ip-family): IPv4, IPv6, or both (the
	// IPv6 probes named *-v6).
	IPFamily    string   `json:"ipFamily,omitempty"`
	Destination Endpoint `json:"destination"`
	// Rounds is --repeat: each round runs every rung once, in order.
	Rounds int          `json:"rounds"`
	Rungs  []LadderRung `json:"rungs"`
	// Figures lists, in display order, the figure names the rungs' Figures hold.
	Figures []string `json:"figures"`
	// Service is the Service measured from every rung (DST svc/NAME or --service).
	Service *LadderService `json:"service,omitempty"`
	// Policy is what the NetworkPolicies allow the run's agents (the clients, the server and the
	// Service's endpoint agents).
	Policy   *PolicyCheck `json:"networkPolicy,omitempty"`
	Timing   Timing       `json:"timing"`
	Warnings []string     `json:"warnings,omitempty"`
	// Checks are the --fail-if conditions and how they came out.
	Checks []CheckResult `json:"checks,omitempty"`
}

// LadderRung is one rung: where its client ran, each round's results and their summary.
type LadderRung struct {
	Name   string `json:"name"`
	Class  string `json:"class"`
	Node   string `json:"node,omitempty"`
	Zone   string `json:"zone,omitempty"`
	Region string `json:"region,omitempty"`
	// Skipped says why the rung was not measured.
	Skipped string `json:"skipped,omitempty"`
	// Baseline names, on the host-network rung, the rung on the same pair of nodes whose
	// figures it is set beside (what the pod network adds over the nodes' own path).
	Baseline string `json:"baseline,omitempty"`
	// VsBaseline holds, on the host-network rung, Baseline's median minus this rung's per figure.
	VsBaseline map[string]float64 `json:"vsBaseline,omitempty"`
	// Results holds every round's probe results, in round order.
	Results []LadderRound `json:"results,omitempty"`
	// Figures summarises the rounds per figure (see LadderReport.Figures).
	Figures map[string]Figure `json:"figures,omitempty"`
	// Cost of the bytes this rung's throughput probes moved, for cross-zone and cross-region rungs.
	Cost *Cost `json:"cost,omitempty"`
	// Spread is where the Service sent this rung's new connections, over all rounds, through
	// its (primary) ClusterIP; SpreadSecondary through a dual-stack Service's other ClusterIP
	// (the other address family: its probes are named *-v6, or *-v4 when IPv6 is primary).
	Spread          *RungSpread `json:"spread,omitempty"`
	SpreadSecondary *RungSpread `json:"spreadSecondary,omitempty"`
}

// LadderService describes the Service a ladder measured and how its spread was measured.
type LadderService struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	ClusterIP string `json:"clusterIP"`
	// ClusterIPs and IPFamilyPolicy: a dual-stack Service's addresses, primary first, and its
	// policy (SingleStack, PreferDualStack, RequireDualStack); each ClusterIP is measured.
	ClusterIPs            []string       `json:"clusterIPs,omitempty"`
	IPFamilyPolicy        string         `json:"ipFamilyPolicy,omitempty"`
	Port                  int            `json:"port"`
	TrafficDistribution   string         `json:"trafficDistribution,omitempty"`
	InternalTrafficPolicy string         `json:"internalTrafficPolicy,omitempty"`
	TopologyMode          string         `json:"topologyMode,omitempty"`
	ReadyEndpoints        int            `json:"readyEndpoints"`
	EndpointsByZone       map[string]int `json:"endpointsByZone"`
	// MeasuredEndpoints ran an agent on AgentPort behind TemporaryService (a copy of the
	// Service's selector and traffic settings); SpreadSkipped says why none did.
	MeasuredEndpoints int `json:"measuredEndpoints"`
	// Dataplane is the Service proxy and its mode, as far as a user can read it.
	Dataplane        *Dataplane `json:"dataplane,omitempty"`
	AgentPort        int        `json:"agentPort,omitempty"`
	TemporaryService string     `json:"temporaryService,omitempty"`
	SpreadSkipped    string     `json:"spreadSkipped,omitempty"`
	// SpreadCaveat says why the spread may not be the Service's own (its copy was not routed
	// as the Service is).
	SpreadCaveat string `json:"spreadCaveat,omitempty"`
}

// RungSpread is where a Service sent one rung's new connections.
type RungSpread struct {
	// ClusterIP is the temporary Service's address the connections went to; IPFamily its
	// family (IPv4 or IPv6).
	ClusterIP   string `json:"clusterIP,omitempty"`
	IPFamily    string `json:"ipFamily,omitempty"`
	Connections int    `json:"connections"`
	Answered    int    `json:"answered"`
	// Unanswered connections reached an endpoint without an agent (or failed); the shares are
	// of the answered ones.
	Unanswered int `json:"unanswered"`
	// UnansweredByKind counts the unanswered connections by cause (as SpreadResult's
	// ErrorsByKind: "timeout", "refused", an HTTP status …), over the rung's rounds.
	UnansweredByKind map[string]int `json:"unansweredByKind,omitempty"`
	// ZonePercent is the share of answered connections per endpoint zone; SameZonePercent the
	// share in the rung's own zone.
	ZonePercent     map[string]float64 `json:"zonePercent"`
	SameZonePercent float64            `json:"sameZonePercent"`
	// MonthlyUSDPerGbps is what 1 Gbit/s sustained from this rung through the Service costs
	// in cross-zone transfer for 30 days at that share.
	MonthlyUSDPerGbps float64 `json:"monthlyUSDPerGbps"`
	// Estimate says how the share was estimated when not every endpoint ran an agent.
	Estimate string `json:"estimate,omitempty"`
}

// LadderRound is one round of one rung.
type LadderRound struct {
	Round     int            `json:"round"`
	ClientPod string         `json:"clientPod"`
	Probes    []*ProbeResult `json:"probes"`
	AppPort   []*ProbeResult `json:"appPort,omitempty"`
	// Failed are the round's probes that failed without ending it (to the app's port, through
	// the Service, to --egress), each with its reason.
	Failed []string `json:"failed,omitempty"`
}

// Figure is one figure of a rung over its rounds: the median with the range, and the
// difference of the median from the same-node rung's.
type Figure struct {
	Unit    string  `json:"unit"`
	Median  float64 `json:"median"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Samples int     `json:"samples"`
	// VsSameNode and VsSameNodePercent compare the median with the same-node rung's (absent on
	// that rung or when it was not measured).
	VsSameNode        *float64 `json:"vsSameNode,omitempty"`
	VsSameNodePercent *float64 `json:"vsSameNodePercent,omitempty"`
}
