//go:build netbench_faults

package fault

import (
	"os"
	"slices"
	"strings"
	"sync"
)

// Compiled says whether this build can inject faults (built with the tag netbench_faults).
const Compiled = true

var active = sync.OnceValue(func() []Name {
	var names []Name
	for _, n := range strings.Split(os.Getenv(Env), ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, Name(n))
		}
	}
	return names
})

// On says whether fault n is injected in this process.
func On(n Name) bool { return slices.Contains(active(), n) }

// Value is what the plugin passes to its agents in Env: the process's own setting.
func Value() string { return os.Getenv(Env) }
