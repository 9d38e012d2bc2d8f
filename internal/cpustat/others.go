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

// Group is what the threads of one of the pod's other containers did between two scans: the
// time they ran and the time they were runnable but waited for a CPU (throttling at any cgroup
// level, or other tasks on the node), summed over the threads alive at the second scan; a
// thread that exited between the scans takes its share with it.
type Group struct {
	// ID is the container's ID as its cgroup's name holds it ("cri-containerd-ID.scope",
	// "crio-ID.scope", "docker-ID.scope" or "ID").
	ID        string        `json:"id"`
	CPU       time.Duration `json:"cpuNanos"`
	RunDelay  time.Duration `json:"runDelayNanos"`
	Processes int           `json:"processes"` // at the second scan
}

// Bounds of one scan: a pod with more threads, or a scan that takes longer, is not compared
// (Since answers nil), so that a busy application can neither slow the agent nor skew its
// figures; and at most maxGroups containers.
const (
	maxTasks   = 20000
	scanBudget = 200 * time.Millisecond
	maxGroups  = 64
)

// Scan is one look at the threads of the other containers of this process's pod that it can
// see: those of the processes in /proc whose cgroup is a sibling of its own (or below one),
// each by its thread ID.
type Scan struct {
	threads   map[int]thread
	processes map[string]int
	truncated bool
}

type thread struct {
	group     string
	run, wait time.Duration
}

// ScanOthers scans the pod's other containers' threads this process can see.
func ScanOthers() *Scan { return scanOthers("/proc", strconv.Itoa(os.Getpid()), scanBudget) }

func scanOthers(proc, self string, budget time.Duration) *Scan {
	s := &Scan{threads: map[int]thread{}, processes: map[string]int{}}
	own := cpuCgroupOf(filepath.Join(proc, self, "cgroup"))
	pids, full := readDirNames(proc, maxTasks+1024)
	if own == "" || full {
		s.truncated = true
		return s
	}
	deadline := time.Now().Add(budget)
	for _, pid := range pids {
		if _, err := strconv.Atoi(pid); err != nil || pid == self {
			continue
		}
		group, ok := containerOf(cpuCgroupOf(filepath.Join(proc, pid, "cgroup")), own)
		if !ok {
			continue
		}
		if !s.addThreads(filepath.Join(proc, pid, "task"), group) || time.Now().After(deadline) {
			s.truncated = true
			return s
		}
		s.processes[group]++
	}
	return s
}

// addThreads adds the threads under taskDir to the scan; false past maxTasks.
func (s *Scan) addThreads(taskDir, group string) bool {
	tids, full := readDirNames(taskDir, maxTasks-len(s.threads)+1)
	if full {
		return false
	}
	for _, t := range tids {
		tid, err := strconv.Atoi(t)
		if err != nil {
			continue
		}
		if run, wait, ok := schedstat(filepath.Join(taskDir, t, "schedstat")); ok {
			s.threads[tid] = thread{group: group, run: run, wait: wait}
		}
	}
	return true
}

// readDirNames lists at most n-1 names in dir; full when there were n or more.
func readDirNames(dir string, n int) (names []string, full bool) {
	f, err := os.Open(dir)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	names, err = f.Readdirnames(n)
	if err != nil && err != io.EOF {
		return nil, false
	}
	return names, len(names) >= n
}

// containerOf is the container cgroup a cgroup path belongs to when it is a sibling of own or
// below one (a container's own sub-cgroups fold into it): the pod's containers. Inside a
// cgroup namespace own is "/" and its siblings "/../ID".
func containerOf(cg, own string) (string, bool) {
	parent := path.Dir(own)
	if own == "/" {
		parent = "/.."
	}
	rest, ok := strings.CutPrefix(cg, strings.TrimSuffix(parent, "/")+"/")
	if cg == "" || cg == own || strings.HasPrefix(cg, own+"/") || !ok || rest == "" || strings.HasPrefix(rest, "..") {
		return "", false
	}
	first, _, _ := strings.Cut(rest, "/")
	return strings.TrimSuffix(parent, "/") + "/" + first, true
}

// Since is what each container's threads did from before to s, by container cgroup; nil when
// either scan was cut short, or when there are more than maxGroups containers. A thread seen
// in both counts its difference; one that started since, everything it did.
func (s *Scan) Since(before *Scan) map[string]Group {
	if s == nil || before == nil || s.truncated || before.truncated {
		return nil
	}
	out := map[string]Group{}
	for tid, t := range s.threads {
		run, wait := t.run, t.wait
		if b, ok := before.threads[tid]; ok && b.group == t.group && b.run <= t.run && b.wait <= t.wait {
			run, wait = t.run-b.run, t.wait-b.wait
		}
		g := out[t.group]
		g.ID, g.CPU, g.RunDelay, g.Processes = ContainerID(t.group), g.CPU+run, g.RunDelay+wait, s.processes[t.group]
		out[t.group] = g
	}
	if len(out) > maxGroups {
		return nil
	}
	return out
}

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
