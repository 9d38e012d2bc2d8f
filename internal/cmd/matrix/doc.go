// Package matrix is `kubectl netbench matrix`: RTT between nodes and zones by a DaemonSet of
// agents.
package matrix
