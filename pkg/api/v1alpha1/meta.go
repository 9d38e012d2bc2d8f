package v1alpha1

// APIVersion versions every report; the schema is documented in docs/output.md.
const APIVersion = "netbench.kubectl.dev/v1alpha1"

// Kinds of report.
const (
	KindPath   = "PathReport"
	KindLadder = "LadderReport"
	KindDNS    = "DNSReport"
	KindMatrix = "MatrixReport"
	KindDiff   = "DiffReport"
	// KindEntry is `ladder --via nodeport`: the way into the cluster from where the plugin runs.
	KindEntry = "EntryReport"
)

// Units of figures, as reports write them.
const (
	UnitMicros  = "µs"
	UnitGbps    = "Gbit/s"
	UnitReqPerS = "req/s"
	UnitCount   = "count"
	UnitPercent = "%"
	UnitBytes   = "bytes"
)

// Path classes.
const (
	SameNode    = "same-node"
	SameZone    = "same-zone"
	CrossZone   = "cross-zone"
	CrossRegion = "cross-region"
	Unknown     = "unknown"
	// Egress is a path out of the cluster to a destination with no agent (path SRC URL).
	Egress = "egress"
	// Ingress is the way into the cluster from outside, to a pod (path here DST --via).
	Ingress = "ingress"
)

// Report is one of the reports: *PathReport, *LadderReport, *DNSReport, *MatrixReport or
// *DiffReport.
type Report interface {
	isReport()
}

func (*PathReport) isReport()   {}
func (*LadderReport) isReport() {}
func (*DNSReport) isReport()    {}
func (*MatrixReport) isReport() {}
func (*DiffReport) isReport()   {}
