package report

import (
	"net/netip"

	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
)

// NodeAddrs names the node of each address the nodes list (InternalIP, ExternalIP).
type NodeAddrs map[netip.Addr]string

// Of names the node addr belongs to ("" if none).
func (n NodeAddrs) Of(addr string) string {
	a, err := netip.ParseAddr(addr)
	if err != nil {
		return ""
	}
	return n[a.Unmap()]
}

// SeenAs says whose the source address the endpoint saw on c is: the client's own
// (SourceClient), a node's (SourceNode and its name; podRange: the node's address in the pod
// network, its pod's gateway), or anything else (SourceOther).
func SeenAs(c probes.EntryConn, nodeOf NodeAddrs) (is, node string, podRange bool) {
	switch node := nodeOf.Of(c.Peer); {
	case c.Peer == c.Local:
		return SourceClient, "", false
	case node != "":
		return SourceNode, node, false
	case c.PeerIsGateway:
		return SourceNode, c.Node, true
	}
	return SourceOther, "", false
}
