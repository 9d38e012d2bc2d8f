package v1alpha1

import (
	"fmt"
	"strings"
	"time"
)

// PathReport is the result of `kubectl netbench path`.
type PathReport struct {
	APIVersion  string    `json:"apiVersion"`
	Kind        string    `json:"kind"`
	ToolVersion string    `json:"toolVersion"`
	StartTime   time.Time `json:"startTime"`
	// Mode is how the agents were started: "ephemeral" (containers in the workloads' pods) or
	// "pod" (temporary pods on the workloads' nodes).
	Mode        string    `json:"mode"`
	Profile     string    `json:"profile"`
	Source      Endpoint  `json:"source"`
	Destination Endpoint  `json:"destination"`
	Path        PathClass `json:"path"`
	// Probes holds the results, in the order the probes ran; with --repeat, round 1's.
	// IPFamily is the address family the probes used (--ip-family): IPv4, IPv6, or both (each
	// probe's own IPFamily says which).
	IPFamily string         `json:"ipFamily,omitempty"`
	Probes   []*ProbeResult `json:"probes"`
	// AppPort holds the probes against the destination application's own port (--port).
	AppPort []*ProbeResult `json:"appPort,omitempty"`
	// Rounds is --repeat: how many times the probes ran, round after round, between the same
	// agents (absent: once).
	Rounds int `json:"rounds,omitempty"`
	// RoundResults holds every round's results when there were rounds (ClientPod: the client
	// agent's pod).
	RoundResults []LadderRound `json:"roundResults,omitempty"`
	// Figures summarises each figure over the rounds (median, range, rounds measured), named in
	// FigureOrder; a validity figure's median is its worst round.
	Figures     map[string]Figure `json:"figures,omitempty"`
	FigureOrder []string          `json:"figureOrder,omitempty"`
	Cost        *Cost             `json:"cost,omitempty"`
	// EgressCost prices a path out of the cluster (path SRC URL) by the NAT or egress price.
	EgressCost *EgressCost `json:"egressCost,omitempty"`
	// WayIn is the way in of path here DST --via nodeport|loadbalancer: where this machine
	// entered and what the pod saw.
	WayIn  *WayIn `json:"wayIn,omitempty"`
	Timing Timing `json:"timing"`
	// AgentFootprint is what each agent process cost over the run, by role (client, server):
	// CPU seconds and peak resident memory, as the agents measured themselves.
	AgentFootprint map[string]Footprint `json:"agentFootprint,omitempty"`
	Skipped        []string             `json:"skipped,omitempty"`
	Warnings       []string             `json:"warnings,omitempty"`
	// Policy is what the NetworkPolicies selecting the two pods allow.
	Policy *PolicyCheck `json:"networkPolicy,omitempty"`
	// Checks are the --fail-if conditions and how they came out.
	Checks []CheckResult `json:"checks,omitempty"`
}

// Endpoint is one side of the path: the workload's pod and where the agent ran.
type Endpoint struct {
	Namespace string `json:"namespace"`
	Pod       string `json:"pod"`
	Container string `json:"container,omitempty"`
	PodIP     string `json:"podIP"`
	Node      string `json:"node"`
	Zone      string `json:"zone,omitempty"`
	Region    string `json:"region,omitempty"`
	// AgentPod is the temporary pod the agent ran in (pod mode), AgentContainer the ephemeral
	// container (ephemeral mode).
	AgentPod       string `json:"agentPod,omitempty"`
	AgentContainer string `json:"agentContainer,omitempty"`
	AgentIP        string `json:"agentIP"`
	// External is a destination outside the cluster (path SRC URL), as given less any query,
	// fragment and credentials; the pod fields are then empty.
	External string `json:"external,omitempty"`
}

// IPv6ProbeSuffix ends the names of the probes an --ip-family both run makes over IPv6 (icmp-v6,
// tcp-1-v6); their IPv4 twins keep the plain names.
const IPv6ProbeSuffix = "-v6"

// IPv4ProbeSuffix ends the names of a ladder's probes through an IPv6-primary dual-stack
// Service's IPv4 ClusterIP (svc-http-v4).
const IPv4ProbeSuffix = "-v4"

// WayIn is how path here DST entered the cluster: through a temporary NodePort or LoadBalancer
// Service whose one endpoint is DST's agent.
type WayIn struct {
	Via                   string `json:"via"` // nodeport or loadbalancer
	Service               string `json:"service"`
	ExternalTrafficPolicy string `json:"externalTrafficPolicy"`
	// EntryNode is the node entered by (--via nodeport); Address the address and port entered.
	EntryNode string `json:"entryNode,omitempty"`
	Address   string `json:"address"`
	// Client is this machine's address on the way in's first connection; Seen the source address
	// the pod saw on it, SeenIs whose it is: "client" (kept), "node" (SeenNode's: SNAT on that
	// node) or "other" (neither: a NAT or proxy on the way, this machine's own NAT included, or
	// a node address the node objects do not list, as an overlay's tunnel address).
	Client   string `json:"client,omitempty"`
	Seen     string `json:"seen,omitempty"`
	SeenIs   string `json:"seenIs,omitempty"`
	SeenNode string `json:"seenNode,omitempty"`
	// SNAT says whether the pod saw another address than this machine's.
	SNAT bool `json:"snat"`
}

// PathClass says what the traffic crossed.
type PathClass struct {
	Class  string `json:"class"`
	Reason string `json:"reason,omitempty"`
	// Dataplane is the Service proxy and its mode, when a user can read it.
	Dataplane *Dataplane `json:"dataplane,omitempty"`
}

// Dataplane is how Services are implemented on the cluster, as far as a user can read it.
type Dataplane struct {
	// Proxy is the Service proxy ("kube-proxy"); Mode its mode (iptables, nftables, ipvs),
	// "unknown" when it cannot be read.
	Proxy  string `json:"proxy,omitempty"`
	Mode   string `json:"mode"`
	Source string `json:"source"` // where it was read, or why it could not be
}

func (d *Dataplane) String() string {
	if d == nil {
		return "unknown"
	}
	if d.Mode == "unknown" {
		return "unknown (" + d.Source + ")"
	}
	return fmt.Sprintf("%s %s mode (%s)", d.Proxy, d.Mode, d.Source)
}

// Cost estimates what the run's cross-zone traffic costs (an estimate: providers' prices vary).
type Cost struct {
	PricePerGBUSD float64 `json:"pricePerGBUSD"`
	// BytesCrossedZone is what the run sent across the zone boundary (both directions).
	BytesCrossedZone int64 `json:"bytesCrossedZone"`
	// RunCostUSD = bytes ÷ 1e9 × price × 2 (each side of the boundary is charged).
	RunCostUSD float64 `json:"runCostUSD"`
	// MonthlyUSDPerGbps is the cost of 1 Gbps sustained for 30 days on this path.
	MonthlyUSDPerGbps float64 `json:"monthlyUSDPerGbps"`
	Note              string  `json:"note"`
}

// EgressCost estimates what traffic out of the cluster costs through a NAT or egress gateway
// charged per GB (path --egress-price-per-gb; the default is AWS's NAT gateway data processing
// price, $0.045/GB), charged once, on top of any Internet egress price of the destination.
type EgressCost struct {
	PricePerGBUSD float64 `json:"pricePerGBUSD"`
	// MonthlyUSDPerGbps is the cost of 1 Gbps sustained for 30 days through it.
	MonthlyUSDPerGbps float64 `json:"monthlyUSDPerGbps"`
	Note              string  `json:"note"`
}

// Timing separates the measuring from the tool's own overhead.
type Timing struct {
	WallSeconds      float64 `json:"wallSeconds"`
	MeasuringSeconds float64 `json:"measuringSeconds"`
	OverheadSeconds  float64 `json:"overheadSeconds"`
	// Phases holds the seconds each phase took (resolve, inject-server, inject-client, measure, cleanup).
	Phases []Phase `json:"phases"`
}

// Phase is one step of a run.
type Phase struct {
	Name    string  `json:"name"`
	Seconds float64 `json:"seconds"`
}

// Footprint is what an agent process has cost so far: its CPU time (user and system) and the
// high-water mark of its resident memory.
type Footprint struct {
	CPUSeconds   float64 `json:"cpuSeconds"`
	PeakRSSBytes int64   `json:"peakRSSBytes"`
}

// PolicyCheck is what the NetworkPolicies that select the run's pods allow, worked out before
// anything was started.
type PolicyCheck struct {
	// Skipped says why no check was made (no permission to list NetworkPolicies).
	Skipped string `json:"skipped,omitempty"`
	// Policies are the policies read (namespace/name) in the run's namespaces.
	Policies []string `json:"policies,omitempty"`
	// Blocked are the flows the policies do not allow, each with the probes it stops.
	Blocked []PolicyBlock `json:"blocked,omitempty"`
	// AgentPort is the port the agents served on to fall inside a range a policy allows.
	AgentPort int `json:"agentPort,omitempty"`
	// Temporary are the NetworkPolicies --allow-policy created; Removed says they were deleted.
	Temporary []string `json:"temporary,omitempty"`
	Removed   bool     `json:"removed,omitempty"`
}

// PolicyBlock is one flow the policies block and what it stops.
type PolicyBlock struct {
	Flow     string   `json:"flow"`     // e.g. "TCP to the server agent's port"
	Policies []string `json:"policies"` // namespace/name of the policies that isolate without allowing it
	Probes   []string `json:"probes"`   // the probes it stops (skipped)
}

func (b PolicyBlock) String() string {
	return fmt.Sprintf("%s is blocked by NetworkPolicy %s: %s skipped", b.Flow, strings.Join(b.Policies, ", "), strings.Join(b.Probes, ", "))
}

// CheckResult is a --fail-if condition checked against a run's figures.
type CheckResult struct {
	Condition string `json:"condition"`
	// Violated is true when the condition held (the run fails), or could not be evaluated:
	// a figure it reads was not measured (Missing), or a figure or a step of its arithmetic has
	// no finite value (Undefined).
	Violated bool `json:"violated"`
	// Left and Right are the two sides' values in Unit ("" for plain numbers); both 0 when the
	// condition could not be evaluated.
	Left   float64               `json:"left"`
	Right  float64               `json:"right"`
	Unit   string                `json:"unit,omitempty"`
	Values map[string]CheckValue `json:"values,omitempty"`
	// Missing names the figures the run did not measure.
	Missing []string `json:"missing,omitempty"`
	// Undefined is the part of the condition without a finite value (a figure that is NaN or
	// infinite, "udp.loss / udp.loss" when the loss is 0); Message says why.
	Undefined string `json:"undefined,omitempty"`
	Message   string `json:"message"`
}

// CheckValue is one measured value in its unit (a figure a condition read). Its fields have
// no JSON tags: they are written as Value and Unit.
type CheckValue struct {
	Value float64
	Unit  string
}
