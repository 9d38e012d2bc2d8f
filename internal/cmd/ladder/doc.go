// Package ladder is `kubectl netbench ladder DST`: the same probes from the host network, the
// same node, the same zone and other zones to DST, and through its Service.
package ladder
