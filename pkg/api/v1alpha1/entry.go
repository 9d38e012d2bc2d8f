package v1alpha1

import "time"

// EntryReport is `kubectl netbench ladder svc/NAME --via nodeport|loadbalancer`: the way into
// the cluster from the machine the plugin runs on, through a NodePort on each node (or the load
// balancer's address), with the Service's externalTrafficPolicy Cluster and Local (temporary
// copies of the Service, whose endpoints run agents that say who answered and which source
// address they saw).
type EntryReport struct {
	APIVersion  string    `json:"apiVersion"`
	Kind        string    `json:"kind"`
	ToolVersion string    `json:"toolVersion"`
	StartTime   time.Time `json:"startTime"`
	Via         string    `json:"via"`
	IPFamily    string    `json:"ipFamily"`
	// Service is the Service copied, its endpoints and the copies made.
	Service *LadderService `json:"service"`
	// Copies are the temporary Services by policy and their node ports.
	Copies []EntryCopy `json:"copies"`
	// Client holds the addresses this machine connected from.
	Client []string `json:"client"`
	// Rounds is --repeat: each round enters through every node with each policy once.
	Rounds int         `json:"rounds"`
	Rungs  []EntryRung `json:"rungs"`
	// Differences sets Local beside Cluster per entry node where both were answered.
	Differences []EntryDifference `json:"differences,omitempty"`
	Timing      Timing            `json:"timing"`
	Warnings    []string          `json:"warnings,omitempty"`
	Checks      []CheckResult     `json:"checks,omitempty"`
}

// EntryCopy is one temporary copy of the Service.
type EntryCopy struct {
	Name                  string `json:"name"`
	ExternalTrafficPolicy string `json:"externalTrafficPolicy"`
	NodePort              int    `json:"nodePort"`
	// LoadBalancer is the copy's load balancer address and port (--via loadbalancer).
	LoadBalancer string `json:"loadBalancer,omitempty"`
}

// EntryRung is one way in: a node's address and the copy's node port (or, with Node empty, the
// copy's load balancer address), with one policy, over all rounds.
type EntryRung struct {
	Policy  string `json:"externalTrafficPolicy"`
	Node    string `json:"node"`
	Zone    string `json:"zone,omitempty"`
	Address string `json:"address"`
	// LocalEndpoints is how many measured endpoints run on the entry node.
	LocalEndpoints int `json:"localEndpoints"`
	Connections    int `json:"connections"`
	Answered       int `json:"answered"`
	// UnansweredByKind counts the rest by error kind (refused, timeout, …); Stopped says why
	// a round ended early (a node that answers none of the first connections).
	UnansweredByKind map[string]int `json:"unansweredByKind,omitempty"`
	Stopped          string         `json:"stopped,omitempty"`
	// Connect is the TCP handshake through the node port; Answer the time from the connect
	// call to the answer's first byte, on the same new connection (exact percentiles over every
	// answered connection, nanosecond clock).
	Connect *Latency `json:"connect,omitempty"`
	Answer  *Latency `json:"answer,omitempty"`
	// ByNode counts answered connections by the node of the endpoint that answered;
	// OtherNodePercent is the share answered on another node than the entry node (an extra hop).
	ByNode           map[string]int `json:"byNode,omitempty"`
	OtherNodePercent *float64       `json:"otherNodePercent,omitempty"`
	// EntryNodes, through a load balancer, are the nodes it sent the answered connections to,
	// by name, as the source the endpoint saw tells it: a node's SNAT names it, its own node's
	// pod-network address or (Local only) a source kept names the endpoint's node.
	// UnplacedConnections are those whose source names no node (a NAT or proxy, an overlay's
	// tunnel address, a source kept with Cluster): in no share, nor in the same/other-node split.
	EntryNodes          []EntryNodeShare `json:"entryNodes,omitempty"`
	UnplacedConnections int              `json:"unplacedConnections,omitempty"`
	// Sources are the source addresses the endpoints saw.
	Sources []EntrySource `json:"sources,omitempty"`
	// ConnectSameNode and ConnectOtherNode split Connect by where the endpoint ran.
	ConnectSameNode  *Latency `json:"connectSameNode,omitempty"`
	ConnectOtherNode *Latency `json:"connectOtherNode,omitempty"`
	// ExtraHopMicros, on a rung with connections answered on another node, is their connect
	// median less a baseline of connections answered on their entry node, in µs;
	// ExtraHopBaseline names it: the rung's own, the same node's other policy, or (naming it)
	// another entry node's, whose distance from the client may differ.
	ExtraHopMicros   *float64 `json:"extraHopMicros,omitempty"`
	ExtraHopBaseline string   `json:"extraHopBaseline,omitempty"`
}

// EntryNodeShare is one node a load balancer sent connections to: how many, their connect
// latency, and of those answered on another node their connect latency and extra hop (its p50
// less the rung's baseline, ExtraHopBaseline).
type EntryNodeShare struct {
	Node             string   `json:"node"`
	Connections      int      `json:"connections"`
	Connect          *Latency `json:"connect"`
	ConnectOtherNode *Latency `json:"connectOtherNode,omitempty"`
	ExtraHopMicros   *float64 `json:"extraHopMicros,omitempty"`
}

// EntrySource is a source address the endpoints saw and what it is: "client" (this machine's
// own address: the source was kept), "node" (a node's address: SNAT, Node names which), or
// "other" (a NAT or proxy on the way).
type EntrySource struct {
	Address     string `json:"address"`
	Connections int    `json:"connections"`
	Is          string `json:"is"`
	Node        string `json:"node,omitempty"`
	// PodRange says the address is the answering pod's default gateway (its node's address in
	// the pod network), not one the node lists.
	PodRange bool `json:"podRange,omitempty"`
}

// EntryDifference is Local's median less Cluster's, per entry node, in µs.
type EntryDifference struct {
	Node                 string  `json:"node"`
	ClusterConnectMicros float64 `json:"clusterConnectP50Micros"`
	LocalConnectMicros   float64 `json:"localConnectP50Micros"`
	ConnectDiffMicros    float64 `json:"connectDiffMicros"`
	ClusterAnswerMicros  float64 `json:"clusterAnswerP50Micros"`
	LocalAnswerMicros    float64 `json:"localAnswerP50Micros"`
	AnswerDiffMicros     float64 `json:"answerDiffMicros"`
}
