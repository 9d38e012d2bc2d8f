package report

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
