//go:build netbench_faults

package fault

// Compiled says whether this build can inject faults (built with the tag netbench_faults).
const Compiled = true
