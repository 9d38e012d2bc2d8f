package cpustat

import (
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Group is what the processes of one of the pod's other containers did between two scans: the
// time their threads ran and were runnable but waited for a CPU (throttling at any cgroup level,
// or other tasks on the node), summed over the threads alive at the second scan, plus the CPU of
// the children they reaped meanwhile. A thread that exited between the scans without being
// reaped by one of them takes its share with it: the figures are at least what was done.
type Group struct {
	ID        string        `json:"id"` // the container's ID
	CPU       time.Duration `json:"cpuNanos"`
	RunDelay  time.Duration `json:"runDelayNanos"`
	Processes int           `json:"processes"` // with threads read at the second scan
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
	started  int64 // starttime, in clock ticks after boot: tells a reused PID
	children time.Duration
	threads  int
}

// ScanOthers scans the processes of the containers with the given runtime IDs.
func ScanOthers(ids []string) *Scan { return scanOthers("/proc", ids, scanBudget) }

func scanOthers(procDir string, ids []string, budget time.Duration) *Scan {
	s := &Scan{threads: map[int]thread{}, procs: map[int]process{}, start: time.Now()}
	defer func() { s.end = time.Now() }()
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	pids, ok := readDirNames(procDir, maxEntries)
	if !ok {
		s.truncated = true
		return s
	}
	deadline := s.start.Add(budget)
	for i, name := range pids {
		if i%checkEvery == 0 && time.Now().After(deadline) {
			s.truncated = true
			return s
		}
		pid, err := strconv.Atoi(name)
		if err != nil {
			continue
		}
		id := containerOf(cpuCgroupOf(filepath.Join(procDir, name, "cgroup")), want)
		if id == "" {
			continue
		}
		if !s.addProcess(filepath.Join(procDir, name), pid, id, deadline) {
			s.truncated = true
			return s
		}
	}
	return s
}

// addProcess adds a process's threads and reaped children; false past maxTasks or the deadline.
func (s *Scan) addProcess(dir string, pid int, id string, deadline time.Time) bool {
	tids, ok := readDirNames(filepath.Join(dir, "task"), maxTasks-len(s.threads)+1)
	if !ok {
		return false
	}
	p := process{id: id}
	for i, t := range tids {
		if i%checkEvery == 0 && time.Now().After(deadline) {
			return false
		}
		tid, err := strconv.Atoi(t)
		if err != nil {
			continue
		}
		if run, wait, ok := schedstat(filepath.Join(dir, "task", t, "schedstat")); ok {
			s.threads[tid] = thread{id: id, run: run, wait: wait}
			p.threads++
		}
	}
	if p.threads > 0 {
		p.started, p.children = reaped(filepath.Join(dir, "stat"))
		s.procs[pid] = p
	}
	return true
}

// reaped reads a process's start time and its reaped children's CPU (cutime + cstime) from its
// stat file: fields 22, 16 and 17, counted after the command's closing parenthesis.
func reaped(statFile string) (started int64, children time.Duration) {
	b, err := os.ReadFile(statFile)
	if err != nil {
		return 0, 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, 0
	}
	f := strings.Fields(string(b[i+1:])) // f[0] is field 3
	if len(f) < 20 {
		return 0, 0
	}
	cu, err1 := strconv.ParseInt(f[13], 10, 64)
	cs, err2 := strconv.ParseInt(f[14], 10, 64)
	st, err3 := strconv.ParseInt(f[19], 10, 64)
	if err1 != nil || err2 != nil || err3 != nil || cu < 0 || cs < 0 {
		return 0, 0
	}
	return st, time.Duration(cu+cs) * time.Second / clockTicks
}

// readDirNames lists at most n-1 names in dir; not ok when it holds n or more, or cannot be read.
func readDirNames(dir string, n int) (names []string, ok bool) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	names, err = f.Readdirnames(n)
	if err != nil && err != io.EOF {
		return nil, false
	}
	return names, len(names) < n
}

// containerOf is the ID, among want, of the container a cgroup path belongs to: the deepest
// element of the path that names one (a container's own sub-cgroups fold into it, whatever the
// runtime's layout); "" for any other cgroup.
func containerOf(cg string, want map[string]bool) string {
	for cg != "" && cg != "/" && cg != "." {
		if id := ContainerID(cg); want[id] {
			return id
		}
		cg = path.Dir(cg)
	}
	return ""
}

// Since is what each container's processes did from before to s, by container ID, over the
// window between the two scans' midpoints; not ok when either scan was cut short. A thread seen
// in both counts its difference, one that started since everything it did; a process seen in
// both (the same start time) adds the CPU of the children it reaped meanwhile.
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
	for pid, p := range s.procs {
		g := groups[p.id]
		g.Processes++
		if b, seen := before.procs[pid]; seen && b.started == p.started && b.children <= p.children {
			g.CPU += p.children - b.children
		}
		groups[p.id] = g
	}
	return groups, mid(s).Sub(mid(before)), true
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
