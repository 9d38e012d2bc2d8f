package report

import "fmt"

// NewCost computes the cost of bytes that crossed a zone boundary.
// monthSeconds is 30 days, the month of the monthly cost figures.
const monthSeconds = 30 * 24 * 3600

func NewCost(bytes int64, pricePerGB float64) *Cost {
	return &Cost{
		PricePerGBUSD:     pricePerGB,
		BytesCrossedZone:  bytes,
		RunCostUSD:        float64(bytes) / 1e9 * pricePerGB * 2,
		MonthlyUSDPerGbps: 1e9 / 8 * monthSeconds / 1e9 * pricePerGB * 2,
		Note:              "estimate: bytes × price per GB × 2 (charged on both sides of the zone boundary)",
	}
}

// NewEgressCost prices a path out of the cluster at pricePerGB, charged once.
func NewEgressCost(pricePerGB float64) *EgressCost {
	return &EgressCost{PricePerGBUSD: pricePerGB, MonthlyUSDPerGbps: 1e9 / 8 * monthSeconds / 1e9 * pricePerGB,
		Note: "estimate: GB × price per GB of the NAT or egress gateway, once; the destination's own Internet egress price comes on top"}
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

// Micros formats a duration given in microseconds with its unit.
func Micros(us float64) string {
	switch {
	case us < 0:
		return "−" + Micros(-us)
	case us >= 1e6:
		return fmt.Sprintf("%.2f s", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.2f ms", us/1e3)
	case us >= 100:
		return fmt.Sprintf("%.0f µs", us)
	default:
		return fmt.Sprintf("%.1f µs", us)
	}
}

func EndpointName(e Endpoint) string {
	if e.External != "" {
		return e.External + " (outside the cluster)"
	}
	where := e.Node
	if e.Zone != "" {
		where += ", " + e.Zone
	}
	return fmt.Sprintf("%s/%s (%s, node %s)", e.Namespace, e.Pod, e.PodIP, where)
}
