//go:build !netbench_faults

package fault

// Compiled says whether this build can inject faults (built with the tag netbench_faults).
const Compiled = false

// On says whether fault n is injected in this process: never, in a build without the tag.
func On(Name) bool { return false }

// Value is what the plugin passes to its agents in Env: nothing, in a build without the tag.
func Value() string { return "" }
