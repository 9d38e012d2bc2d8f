// Package path is `kubectl netbench path SRC DST`: the probes between two workloads' pods,
// through agents beside them.
package path
