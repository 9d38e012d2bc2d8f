package cpustat

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// IdleEntries is how many times this machine's CPUs entered an idle state other than polling
// since boot (idleCounters); not ok where it has no such counters, or one could not be read.
func IdleEntries() (n int64, ok bool) { return machineIdle().sum() }

// maxIdleFiles bounds one count's reads: 1,024 CPUs of 4 idle states.
const maxIdleFiles = 4096

// machineIdle lists this machine's idle counters once: the states of a CPU do not change while
// it is online, and a CPU taken offline fails the next count.
var machineIdle = sync.OnceValue(func() idleCounters { return findIdleCounters("/sys/devices/system/cpu") })

// idleCounters are the usage files of the idle states, other than polling, of every CPU under
// a root such as /sys/devices/system/cpu (cpuN/cpuidle/stateK/usage, the state named "POLL"
// left out): each entry is a CPU that stopped with nothing to run, whose next wake-up pays
// its exit. None where no CPU has such a state (no cpuidle driver, /sys not mounted) or there
// are more than maxIdleFiles.
type idleCounters []string

func findIdleCounters(root string) idleCounters {
	dirs, _ := filepath.Glob(filepath.Join(root, "cpu[0-9]*", "cpuidle", "state[0-9]*"))
	if len(dirs) > maxIdleFiles {
		return nil
	}
	var files idleCounters
	for _, d := range dirs {
		name, err := os.ReadFile(filepath.Join(d, "name"))
		if err == nil && strings.TrimSpace(string(name)) != "POLL" {
			files = append(files, filepath.Join(d, "usage"))
		}
	}
	return files
}

// sum adds the counters up; not ok without any, or when one could not be read (its CPU went
// offline, say): a sum of fewer counters than the last one's would not compare with it.
func (c idleCounters) sum() (n int64, ok bool) {
	for _, f := range c {
		b, err := os.ReadFile(f)
		if err != nil {
			return 0, false
		}
		v, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
		if err != nil || v < 0 {
			return 0, false
		}
		n += v
	}
	return n, len(c) > 0
}
