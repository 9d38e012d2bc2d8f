package probes

// PMTUResult is what the path-MTU probe found.
type PMTUResult struct {
	// PathMTU is the largest IP packet, in bytes, that crossed the path to the server and
	// was answered, with "don't fragment" set; Method how it was found.
	PathMTU int    `json:"pathMTU"`
	Method  string `json:"method"`
	// LocalMTU is the MTU of the interface the probe left by, RemoteMTU the server's (as it
	// reported it); KernelPMTU the kernel's cached path MTU after probing (ICMP "fragmentation
	// needed" lowers it).
	LocalMTU   int `json:"localMTU"`
	RemoteMTU  int `json:"remoteMTU,omitempty"`
	KernelPMTU int `json:"kernelPMTU,omitempty"`
	// Probes is how many packets were sent; FragNeeded says a hop answered a size with ICMP
	// "fragmentation needed" (else sizes that did not cross were dropped silently).
	Probes     int  `json:"probes"`
	FragNeeded bool `json:"fragNeeded,omitempty"`
}
