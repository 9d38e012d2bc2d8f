package cpustat

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// IdleEntries is how many times this machine's CPUs entered an idle state other than polling
// since boot (idleEntries); not ok where it has no such counters.
func IdleEntries() (n int64, ok bool) { return idleEntries("/sys/devices/system/cpu") }

// maxIdleFiles bounds one count's reads: 1,024 CPUs of 4 idle states.
const maxIdleFiles = 4096

// idleEntries is, summed over the machine's CPUs under root (/sys/devices/system/cpu), how
// many times one entered an idle state other than polling (cpuN/cpuidle/stateK/usage, the
// state named "POLL" left out): each is a CPU that stopped with nothing to run, whose next
// wake-up pays its exit. Not ok where no CPU has such a state to read (no cpuidle driver,
// /sys not mounted) or there are more than maxIdleFiles.
func idleEntries(root string) (n int64, ok bool) {
	dirs, _ := filepath.Glob(filepath.Join(root, "cpu[0-9]*", "cpuidle", "state[0-9]*"))
	if len(dirs) > maxIdleFiles {
		return 0, false
	}
	for _, d := range dirs {
		name, err := os.ReadFile(filepath.Join(d, "name"))
		if err != nil || strings.TrimSpace(string(name)) == "POLL" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(d, "usage"))
		if err != nil {
			continue
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || v < 0 {
			continue
		}
		n, ok = n+v, true
	}
	return n, ok
}
