// Package report holds the versioned results kubectl-netbench prints and renders them for people
// (tables, a terminal histogram) and machines (JSON, YAML).
package report

import (
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/gate"
)

// APIVersion versions every report; the schema is documented in docs/output.md.
const APIVersion = "netbench.kubectl.dev/v1alpha1"

// Path classes.
const (
	SameNode    = "same-node"
	SameZone    = "same-zone"
	CrossZone   = "cross-zone"
	CrossRegion = "cross-region"
	Unknown     = "unknown"
)

// PathReport is the result of `kubectl netbench path`.
type PathReport struct {
	APIVersion  string    `json:"apiVersion"`
	Kind        string    `json:"kind"`
	ToolVersion string    `json:"toolVersion"`
	StartTime   time.Time `json:"startTime"`
	// Mode is how the agents were started: "ephemeral" (containers in the workloads' pods) or
	// "pod" (temporary pods on the workloads' nodes).
	Mode        string               `json:"mode"`
	Profile     string               `json:"profile"`
	Source      Endpoint             `json:"source"`
	Destination Endpoint             `json:"destination"`
	Path        PathClass            `json:"path"`
	Probes      []*agent.ProbeResult `json:"probes"`
	// AppPort holds the probes against the destination application's own port (--port).
	AppPort []*agent.ProbeResult `json:"appPort,omitempty"`
	Cost    *Cost                `json:"cost,omitempty"`
	Timing  Timing               `json:"timing"`
	// AgentFootprint is what each agent process cost over the run, by role (client, server):
	// CPU seconds and peak resident memory, as the agents measured themselves.
	AgentFootprint map[string]agent.Footprint `json:"agentFootprint,omitempty"`
	Skipped        []string                   `json:"skipped,omitempty"`
	Warnings       []string                   `json:"warnings,omitempty"`
	// Policy is what the NetworkPolicies selecting the two pods allow.
	Policy *PolicyCheck `json:"networkPolicy,omitempty"`
	// Checks are the --fail-if conditions and how they came out.
	Checks []gate.Result `json:"checks,omitempty"`
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
}

// PathClass says what the traffic crossed.
type PathClass struct {
	Class  string `json:"class"`
	Reason string `json:"reason,omitempty"`
	// Dataplane is the Service proxy and its mode, when a user can read it.
	Dataplane *Dataplane `json:"dataplane,omitempty"`
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

// NewCost computes the cost of bytes that crossed a zone boundary.
func NewCost(bytes int64, pricePerGB float64) *Cost {
	const monthSeconds = 30 * 24 * 3600
	return &Cost{
		PricePerGBUSD:     pricePerGB,
		BytesCrossedZone:  bytes,
		RunCostUSD:        float64(bytes) / 1e9 * pricePerGB * 2,
		MonthlyUSDPerGbps: 1e9 / 8 * monthSeconds / 1e9 * pricePerGB * 2,
		Note:              "estimate: bytes × price per GB × 2 (charged on both sides of the zone boundary)",
	}
}

// Classify names the path between two nodes from their topology labels.
func Classify(srcNode, dstNode, srcZone, dstZone, srcRegion, dstRegion string) PathClass {
	switch {
	case srcNode != "" && srcNode == dstNode:
		return PathClass{Class: SameNode}
	case srcRegion != "" && dstRegion != "" && srcRegion != dstRegion:
		return PathClass{Class: CrossRegion}
	case srcZone == "" || dstZone == "":
		return PathClass{Class: Unknown, Reason: "a node has no topology.kubernetes.io/zone label (or it could not be read)"}
	case srcZone == dstZone:
		return PathClass{Class: SameZone}
	default:
		return PathClass{Class: CrossZone}
	}
}
