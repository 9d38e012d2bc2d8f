// Package cpustat reads what a process's CPU accounting says about a stretch of its work: the CPU
// time it used, the time its threads were runnable but waited for a CPU, and its own cgroup's CFS
// quota and throttling (cgroup v1 and v2); and the same times of the threads of its pod's other
// containers that it can see (Scan). The wait is what tells a CPU limit from the network:
// a task whose cgroup, or any ancestor of it, ran out of quota stays runnable and waits — so an
// ephemeral container, which has no limit of its own and runs under its pod's, still sees the
// pod's throttling there, where its own cgroup's cpu.stat says nothing.
package cpustat

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Sample is the process's CPU accounting at one moment.
type Sample struct {
	At time.Time
	// CPU is the user and system time of every thread so far.
	CPU time.Duration
	// RunDelay is, summed over the live threads, the time they were runnable but not running
	// (/proc/self/task/*/schedstat): CFS throttling at any cgroup level and other tasks on the
	// same CPUs.
	RunDelay time.Duration
	// Throttled and ThrottledPeriods are the process's own cgroup's CFS throttling so far.
	Throttled        time.Duration
	ThrottledPeriods int64
	// LimitCores is the own cgroup's CFS quota in cores; 0 without one.
	LimitCores float64
	// IdleEntries is how many times the machine's CPUs entered an idle state other than
	// polling so far (the function IdleEntries), when IdleCounted.
	IdleEntries int64
	IdleCounted bool
}

// Use is what happened between two samples.
type Use struct {
	Wall, CPU, RunDelay, Throttled time.Duration
	ThrottledPeriods               int64
	LimitCores                     float64
	// IdleEntries is how many times the machine's CPUs entered an idle state other than
	// polling between the two samples, when both counted them (IdleCounted).
	IdleEntries int64
	IdleCounted bool
}

// Since is the use from an earlier sample to s.
func (s Sample) Since(before Sample) Use {
	return Use{
		Wall:             s.At.Sub(before.At),
		CPU:              s.CPU - before.CPU,
		RunDelay:         max(0, s.RunDelay-before.RunDelay),
		Throttled:        s.Throttled - before.Throttled,
		ThrottledPeriods: s.ThrottledPeriods - before.ThrottledPeriods,
		LimitCores:       s.LimitCores,
		IdleEntries:      s.IdleEntries - before.IdleEntries,
		// A count that went backwards is not one: the counters or their reader changed.
		IdleCounted: s.IdleCounted && before.IdleCounted && s.IdleEntries >= before.IdleEntries,
	}
}

// Read samples this process.
func Read() Sample {
	idle, counted := IdleEntries() // first: the reads' own CPU falls before the sample
	s := Sample{At: time.Now(), CPU: ProcessCPU(), RunDelay: runDelay("/proc/self/task"), IdleEntries: idle, IdleCounted: counted}
	if dir := ownCPUCgroup("/proc/self/cgroup", "/sys/fs/cgroup"); dir != "" {
		s.Throttled, s.ThrottledPeriods = throttling(dir)
		s.LimitCores = quota(dir)
	}
	return s
}

// runDelay sums the second field of every thread's schedstat: nanoseconds spent on a run queue.
func runDelay(taskDir string) time.Duration {
	files, _ := filepath.Glob(filepath.Join(taskDir, "*", "schedstat"))
	var sum time.Duration
	for _, f := range files {
		if _, wait, ok := schedstat(f); ok {
			sum += wait
		}
	}
	return sum
}

// schedstat reads a thread's schedstat: the time it ran and the time it waited on a run queue;
// not ok when the thread exited or the file is not one.
func schedstat(file string) (run, wait time.Duration, ok bool) {
	b, err := os.ReadFile(file)
	if err != nil {
		return 0, 0, false
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, 0, false
	}
	r, err1 := strconv.ParseInt(f[0], 10, 64)
	w, err2 := strconv.ParseInt(f[1], 10, 64)
	if err1 != nil || err2 != nil || r < 0 || w < 0 {
		return 0, 0, false
	}
	return time.Duration(r), time.Duration(w), true
}

// ownCPUCgroup is the directory of the cpu controller's cgroup of the process whose
// /proc/PID/cgroup is procCgroup, under the mount point root: the v2 unified hierarchy, or the
// v1 hierarchy holding "cpu". Inside a container the hierarchy's mount is the container's own
// cgroup (a cgroup namespace, or a bind mount of its directory on v1), so where the path from
// procCgroup does not exist under the mount, the mount itself is the cgroup.
func ownCPUCgroup(procCgroup, root string) string {
	for _, e := range cpuEntries(procCgroup) {
		mounts := []string{root, filepath.Join(root, "unified")}
		if !e.unified {
			mounts = []string{filepath.Join(root, e.controllers), filepath.Join(root, "cpu"), filepath.Join(root, "cpu,cpuacct")}
		}
		for _, m := range mounts {
			if _, err := os.Stat(filepath.Join(m, "cpu.stat")); err != nil {
				continue
			}
			if d := filepath.Join(m, e.path); d != m && exists(filepath.Join(d, "cpu.stat")) {
				return d
			}
			return m
		}
	}
	return ""
}

// cgroupEntry is a line of a /proc/PID/cgroup file that can hold the cpu controller: the v2
// unified hierarchy's, or a v1 hierarchy's with "cpu" among its controllers.
type cgroupEntry struct {
	unified           bool
	controllers, path string
}

// cpuEntries are the lines of a /proc/PID/cgroup file that can hold the cpu controller, in the
// file's order; none when unreadable.
func cpuEntries(procCgroup string) []cgroupEntry {
	b, err := os.ReadFile(procCgroup)
	if err != nil {
		return nil
	}
	var out []cgroupEntry
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		switch {
		case len(parts) != 3:
		case parts[1] == "" && parts[0] == "0":
			out = append(out, cgroupEntry{unified: true, path: parts[2]})
		case hasController(parts[1], "cpu"):
			out = append(out, cgroupEntry{controllers: parts[1], path: parts[2]})
		}
	}
	return out
}

func hasController(list, c string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == c {
			return true
		}
	}
	return false
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// throttling reads cpu.stat: throttled_usec (v2) or throttled_time in ns (v1), and nr_throttled.
func throttling(dir string) (time.Duration, int64) {
	b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
	if err != nil {
		return 0, 0
	}
	var t time.Duration
	var n int64
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, " ")
		x, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
		if !ok || err != nil {
			continue
		}
		switch k {
		case "throttled_usec":
			t = time.Duration(x) * time.Microsecond
		case "throttled_time":
			t = time.Duration(x)
		case "nr_throttled":
			n = x
		}
	}
	return t, n
}

// quota is the cgroup's CFS quota in cores: cpu.max "QUOTA PERIOD" (v2) or cpu.cfs_quota_us and
// cpu.cfs_period_us (v1); 0 when unlimited or unreadable.
func quota(dir string) float64 {
	if b, err := os.ReadFile(filepath.Join(dir, "cpu.max")); err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 {
			return ratio(f[0], f[1])
		}
		return 0
	}
	q, err1 := os.ReadFile(filepath.Join(dir, "cpu.cfs_quota_us"))
	p, err2 := os.ReadFile(filepath.Join(dir, "cpu.cfs_period_us"))
	if err1 != nil || err2 != nil {
		return 0
	}
	return ratio(strings.TrimSpace(string(q)), strings.TrimSpace(string(p)))
}

func ratio(q, p string) float64 {
	qv, err1 := strconv.ParseFloat(q, 64)
	pv, err2 := strconv.ParseFloat(p, 64)
	if err1 != nil || err2 != nil || qv <= 0 || pv <= 0 {
		return 0 // "max" or -1: no quota
	}
	return qv / pv
}
