package v1alpha1

import "time"

// DNSReport is the result of `kubectl netbench dns`.
type DNSReport struct {
	APIVersion  string    `json:"apiVersion"`
	Kind        string    `json:"kind"`
	ToolVersion string    `json:"toolVersion"`
	StartTime   time.Time `json:"startTime"`
	Target      Endpoint  `json:"target"`
	// Owner is the workload whose pod template the fix patches (e.g. deployment/web).
	Owner  string          `json:"owner,omitempty"`
	Result *DNSProbeResult `json:"result"`
	// NameserverService is the Service behind the pod's nameserver, its replicas' zones and the
	// share of queries that cross a zone (the replicas' latencies are in Result.ReplicaView).
	NameserverService *DNSService `json:"nameserverService,omitempty"`
	// Fixes holds the cheapest fix per name; Patch the pod-wide dnsConfig change.
	Fixes []DNSFix `json:"fixes"`
	Patch *Patch   `json:"patch,omitempty"`
	// RaceAdvice is what the race check (--race) recommends, with its patch.
	RaceAdvice *RaceAdvice `json:"raceAdvice,omitempty"`
	// Capacity is what the capacity ramp (dns --load) means in lookups per second.
	Capacity *DNSCapacity `json:"capacity,omitempty"`
	// Validity is what the agent's CPU accounting says about the lookups' latencies: the agent
	// runs in the pod, under its CPU limit.
	Validity *Validity `json:"validity,omitempty"`
	Timing   Timing    `json:"timing"`
	Warnings []string  `json:"warnings,omitempty"`
	// Checks are the --fail-if conditions and how they came out.
	Checks []CheckResult `json:"checks,omitempty"`
}

// DNSFix is the cheapest change for one name.
type DNSFix struct {
	Name    string `json:"name"`
	Queries int    `json:"queries"`
	// Fix is what to change; FixedQueries the queries per lookup after it.
	Fix          string `json:"fix"`
	FixedQueries int    `json:"fixedQueries"`
}

// Patch is a ready-to-apply dnsConfig change for the owning workload.
type Patch struct {
	Ndots   int    `json:"ndots"`
	Command string `json:"command"`
	// QueriesBefore and QueriesAfter add up one lookup of every name.
	QueriesBefore int      `json:"queriesBefore"`
	QueriesAfter  int      `json:"queriesAfter"`
	SideEffects   []string `json:"sideEffects,omitempty"`
}

// RaceAdvice is what the race check recommends for the resolver it found, and the patch.
type RaceAdvice struct {
	Advice  string `json:"advice"`
	Command string `json:"command,omitempty"`
}

// DNSService is the Service behind the pod's nameserver (kube-dns) and how its queries spread
// over the replicas' zones.
type DNSService struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	ClusterIP string `json:"clusterIP"`
	// TrafficDistribution is the Service's spec.trafficDistribution ("" = none).
	TrafficDistribution string `json:"trafficDistribution,omitempty"`
	ReadyReplicas       int    `json:"readyReplicas"`
	// PodZone is the measured pod's zone; SameZoneReplicas how many ready replicas share it.
	PodZone          string `json:"podZone,omitempty"`
	SameZoneReplicas int    `json:"sameZoneReplicas"`
	// CrossZoneShare is the share of the pod's queries through the Service that reach a replica
	// in another zone (0–1; -1 when the zones are unknown), and ShareBasis why.
	CrossZoneShare float64 `json:"crossZoneShare"`
	ShareBasis     string  `json:"shareBasis"`
	// LookupsPerSecond (--lookups-per-second) and what it makes of the share: queries per
	// second that cross a zone, for lookups of the first name as configured.
	LookupsPerSecond          float64 `json:"lookupsPerSecond,omitempty"`
	CrossZoneQueriesPerSecond float64 `json:"crossZoneQueriesPerSecond,omitempty"`
	// NodeLocalCache says whether a node-local DNS cache answers the pod's queries.
	NodeLocalCache *NodeLocalDNS `json:"nodeLocalCache,omitempty"`
	// Skipped says why there is no per-replica view.
	Skipped string `json:"skipped,omitempty"`
}

// States of a pod's node-local DNS cache.
const (
	NodeLocalInUse    = "in use"
	NodeLocalNotInUse = "not in use"
	NodeLocalUnknown  = "unknown"
)

// NodeLocalDNS is a node-local DNS cache (NodeLocal DNSCache) as this pod meets it.
type NodeLocalDNS struct {
	// State is "in use", "not in use" or "unknown"; Basis says how it was told.
	State string `json:"state"`
	Basis string `json:"basis"`
	// Pod is the cache's pod on the pod's node; Address the nameserver the pod asks.
	Pod     string `json:"pod,omitempty"`
	Address string `json:"address,omitempty"`
	// Without a cache: the Service's p50 and the nearest replica's, asked directly from the
	// pod — on its node (SameNode) or else the fastest in its zone — for what answering close
	// by would save.
	ServiceP50Micros float64 `json:"serviceP50Micros,omitempty"`
	NearestReplica   string  `json:"nearestReplica,omitempty"`
	NearestP50Micros float64 `json:"nearestP50Micros,omitempty"`
	SameNode         bool    `json:"sameNode,omitempty"`
}
