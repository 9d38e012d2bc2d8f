package reftools

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// HoldCPUs runs one SCHED_IDLE thread per usable CPU, each pinned to its own, and release ends
// them and gives GOMAXPROCS back.
func TestHoldCPUs(t *testing.T) {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		t.Fatal(err)
	}
	procs := runtime.GOMAXPROCS(0)
	release, err := HoldCPUs()
	if err != nil {
		t.Fatal(err)
	}
	idle := idleThreads(t)
	if len(idle) != set.Count() {
		release()
		t.Fatalf("%d SCHED_IDLE threads, want one per usable CPU (%d)", len(idle), set.Count())
	}
	cpus := map[int]bool{}
	for _, tid := range idle {
		var on unix.CPUSet
		if err := unix.SchedGetaffinity(tid, &on); err != nil || on.Count() != 1 {
			t.Errorf("spinner %d: affinity %v (%v), want one CPU", tid, on, err)
		}
		for cpu := range 1024 {
			if on.IsSet(cpu) {
				cpus[cpu] = true
			}
		}
	}
	if len(cpus) != set.Count() {
		t.Errorf("spinners on CPUs %v, want each of the %d", cpus, set.Count())
	}
	release()
	deadline := time.Now().Add(2 * time.Second)
	for len(idleThreads(t)) > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := len(idleThreads(t)); n > 0 || runtime.GOMAXPROCS(0) != procs {
		t.Errorf("after release: %d SCHED_IDLE threads left, GOMAXPROCS %d (was %d)", n, runtime.GOMAXPROCS(0), procs)
	}
}

// idleThreads lists this process's threads whose policy is SCHED_IDLE.
func idleThreads(t *testing.T) []int {
	t.Helper()
	stats, _ := filepath.Glob("/proc/self/task/*/stat")
	var tids []int
	for _, s := range stats {
		b, err := os.ReadFile(s)
		if err != nil {
			continue // the thread ended
		}
		// Fields after the command's closing parenthesis: state is the 3rd field, policy the 41st.
		f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
		if len(f) > 38 && f[38] == "5" {
			var tid int
			for _, c := range filepath.Base(filepath.Dir(s)) {
				tid = tid*10 + int(c-'0')
			}
			tids = append(tids, tid)
		}
	}
	return tids
}
