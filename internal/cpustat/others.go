package cpustat

import (
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Group is what the processes of one of the pod's other containers did between two scans: the
// time their threads ran and were runnable but waited for a CPU (throttling at any cgroup level,
// or other tasks on the node), summed over the threads alive at the second scan, plus the CPU
// the children they reaped meanwhile did in the window. A thread that exited between the scans
// without being reaped by one of them takes its share with it; a child that ran only between
// two scans' reads of its parent and itself is missed: the figures are lower bounds.
type Group struct {
	ID        string        `json:"id"` // the container's ID
	CPU       time.Duration `json:"cpuNanos"`
	RunDelay  time.Duration `json:"runDelayNanos"`
	Processes int           `json:"processes"` // at the second scan
}

// Bounds of one scan: a pod with more threads or processes, or a scan that takes longer, is not
// compared (Since answers not ok), so that a busy application can neither slow the agent nor
// skew its figures.
const (
	maxTasks   = 20000
	maxEntries = maxTasks + 1024 // /proc's names: processes and its own files
	scanBudget = 200 * time.Millisecond
	checkEvery = 64 // entries between deadline checks
)

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every Linux ABI.
const clockTicks = 100

// Scan is one look at the processes of the containers it is asked about (by their runtime IDs)
// that this process can see: each thread's times, and each process's reaped children's CPU.
type Scan struct {
	threads    map[int]thread
	procs      map[int]process
	start, end time.Time
	truncated  bool
}

type thread struct {
	id        string
	run, wait time.Duration
}

type process struct {
	id       string
	ppid     int
	started  int64         // starttime, in clock ticks after boot: tells a reused PID
	total    time.Duration // its own CPU and its reaped children's
	children time.Duration // its reaped children's
}

// ScanOthers scans the processes of the containers with the given runtime IDs.
func ScanOthers(ids []string) *Scan { return scanOthers("/proc", ids, scanBudget) }

// scanOthers reads, for the processes of the containers asked about, first every stat file, then
// every thread: a child reaped between the two is in its parent's reaped CPU or in its own
// threads, never both.
func scanOthers(procDir string, ids []string, budget time.Duration) *Scan {
	s := &Scan{threads: map[int]thread{}, procs: map[int]process{}, start: time.Now()}
	defer func() { s.end = time.Now() }()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	names, full, err := readDirNames(procDir, maxEntries)
	deadline := s.start.Add(budget)
	if s.truncated = full || err != nil || !s.readProcesses(procDir, names, want, deadline); s.truncated {
		return s
	}
	for pid, p := range s.procs {
		if !s.addThreads(filepath.Join(procDir, strconv.Itoa(pid), "task"), p.id, deadline) {
			s.truncated = true
			return s
		}
	}
	return s
}

// readProcesses reads the stat file of each process in names whose cgroup names a container
// asked about; false past the deadline.
func (s *Scan) readProcesses(procDir string, names []string, want map[string]bool, deadline time.Time) bool {
	for i, name := range names {
		if i%checkEvery == 0 && time.Now().After(deadline) {
			return false
		}
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		id := containerOf(cpuCgroupOf(filepath.Join(procDir, name, "cgroup")), want)
		if id == "" {
			continue
		}
		if p, ok := readStat(filepath.Join(procDir, name, "stat")); ok {
			p.id = id
			s.procs[pid] = p
		}
	}
	return true
}

// addThreads adds the threads under taskDir to the scan; false past maxTasks or the deadline
// (a process that ended meanwhile is skipped).
func (s *Scan) addThreads(taskDir, id string, deadline time.Time) bool {
	tids, full, err := readDirNames(taskDir, maxTasks-len(s.threads)+1)
	if full {
		return false
	}
	if err != nil {
		return true
	}
	for i, t := range tids {
		if i%checkEvery == 0 && time.Now().After(deadline) {
			return false
		}
		tid, err := strconv.Atoi(t)
		if err != nil {
			continue
		}
		if run, wait, ok := schedstat(filepath.Join(taskDir, t, "schedstat")); ok {
			s.threads[tid] = thread{id: id, run: run, wait: wait}
		}
	}
	return true
}

// readStat reads a process's parent, start time, own and reaped children's CPU from its stat
// file: fields 4, 22, 14-15 and 16-17, counted after the command's closing parenthesis.
func readStat(statFile string) (process, bool) {
	b, err := os.ReadFile(statFile)
	if err != nil {
		return process{}, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return process{}, false
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 20 {
		return process{}, false
	}
	var v [5]int64
	for j, k := range []int{1, 11, 12, 13, 14} { // ppid, utime, stime, cutime, cstime
		x, err := strconv.ParseInt(f[k], 10, 64)
		if err != nil || x < 0 {
			return process{}, false
		}
		v[j] = x
	}
	started, err := strconv.ParseInt(f[19], 10, 64)
	if err != nil {
		return process{}, false
	}
	tick := func(n int64) time.Duration { return time.Duration(n) * time.Second / clockTicks }
	return process{ppid: int(v[0]), started: started, total: tick(v[1] + v[2] + v[3] + v[4]), children: tick(v[3] + v[4])}, true
}

// readDirNames lists at most n-1 names in dir; full when it holds n or more.
func readDirNames(dir string, n int) (names []string, full bool, err error) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	names, err = f.Readdirnames(n)
	if err != nil && err != io.EOF {
		return nil, false, err
	}
	return names, len(names) >= n, nil
}

// containerOf is the ID, among want, of the container a cgroup path belongs to: the
// shallowest element of the path that names one — the runtime's cgroup of the container, below
// which everything is the container's own (its sub-cgroups, whatever they are named); "" for
// any other cgroup.
func containerOf(cg string, want map[string]bool) string {
	for _, elem := range strings.Split(cg, "/") {
		if id := ContainerID(elem); elem != "" && want[id] {
			return id
		}
	}
	return ""
}

// Since is what each container's processes did from before to s, by container ID, over the
// window between the two scans' midpoints; not ok when either scan was cut short. A thread seen
// in both counts its difference, one that started since everything it did; a process seen in
// both (the same start time) adds the CPU of the children it reaped meanwhile, less what those
// of them that the first scan saw had done by then.
func (s *Scan) Since(before *Scan) (groups map[string]Group, window time.Duration, ok bool) {
	if s == nil || before == nil || s.truncated || before.truncated {
		return nil, 0, false
	}
	groups = map[string]Group{}
	for tid, t := range s.threads {
		run, wait := t.run, t.wait
		if b, seen := before.threads[tid]; seen && b.id == t.id && b.run <= t.run && b.wait <= t.wait {
			run, wait = t.run-b.run, t.wait-b.wait
		}
		g := groups[t.id]
		g.ID, g.CPU, g.RunDelay = t.id, g.CPU+run, g.RunDelay+wait
		groups[t.id] = g
	}
	earlier := s.reapedEarlier(before)
	for pid, p := range s.procs {
		g := groups[p.id]
		g.ID, g.Processes = p.id, g.Processes+1
		if b, seen := before.procs[pid]; seen && b.started == p.started && b.children <= p.children {
			g.CPU += max(0, p.children-b.children-earlier[pid])
		}
		groups[p.id] = g
	}
	return groups, mid(s).Sub(mid(before)), true
}

// reapedEarlier is, by parent, what the processes the first scan saw and the second does not
// (ended, and reaped by a parent seen in both) had done by the first scan: their reaping adds it
// to the parent's children's CPU, though it was done before the window.
func (s *Scan) reapedEarlier(before *Scan) map[int]time.Duration {
	out := map[int]time.Duration{}
	for pid, b := range before.procs {
		if p, ok := s.procs[pid]; ok && p.started == b.started {
			continue
		}
		if pb, ok := before.procs[b.ppid]; ok {
			if pa, ok := s.procs[b.ppid]; ok && pa.started == pb.started {
				out[b.ppid] += b.total
			}
		}
	}
	return out
}

// mid is the middle of a scan: where, on average, it read its threads.
func mid(s *Scan) time.Time { return s.start.Add(s.end.Sub(s.start) / 2) }

// cpuCgroupOf is the path of the cpu controller's cgroup in a /proc/PID/cgroup file: the v1
// hierarchy holding "cpu", else the v2 unified one; "" when unreadable.
func cpuCgroupOf(procCgroup string) string {
	unified := ""
	for _, e := range cpuEntries(procCgroup) {
		if !e.unified {
			return e.path
		}
		unified = e.path
	}
	return unified
}

// idPattern is what a runtime's container ID looks like.
var idPattern = regexp.MustCompile(`^[A-Za-z0-9._-]{1,128}$`)

// LooksLikeID says whether s looks like a runtime's container ID (and is safe to print).
func LooksLikeID(s string) bool { return idPattern.MatchString(s) }

// ContainerID is the container ID a cgroup path's last element names: the runtimes' systemd
// scopes ("cri-containerd-ID.scope", "crio-ID.scope", "docker-ID.scope") or the cgroupfs
// driver's bare ID.
func ContainerID(cgroupPath string) string {
	id := strings.TrimSuffix(path.Base(cgroupPath), ".scope")
	for _, prefix := range []string{"cri-containerd-", "crio-", "docker-", "containerd-"} {
		id = strings.TrimPrefix(id, prefix)
	}
	return id
}
