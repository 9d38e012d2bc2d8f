package cpustat

import (
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// Group is the CPU accounting of the processes of one cgroup that this process can see: a
// container of the pod whose process namespace it shares (an ephemeral container shares its
// target container's, and every container's when the pod shares one namespace).
type Group struct {
	// ID is the container's ID as its cgroup's name holds it ("cri-containerd-ID.scope",
	// "crio-ID.scope", "docker-ID.scope" or "ID"), or the cgroup's name.
	ID string `json:"id"`
	// CPU and RunDelay are summed over the group's live threads: the time they ran, and the
	// time they were runnable but waited for a CPU (throttling at any level, or other tasks).
	CPU       time.Duration `json:"cpuNanos"`
	RunDelay  time.Duration `json:"runDelayNanos"`
	Processes int           `json:"processes"`
}

// maxTasks bounds the threads Others reads in one call: a pod with more than this many is
// counted in part (the groups' Processes say how many processes were).
const maxTasks = 20000

// Others samples the processes in /proc that are not in this process's own cgroup, by cgroup.
func Others() map[string]Group { return others("/proc", strconv.Itoa(os.Getpid())) }

// others reads the processes under proc other than self and those in self's cgroup, keyed by
// cgroup path.
func others(proc, self string) map[string]Group {
	own := cpuCgroupOf(filepath.Join(proc, self, "cgroup"))
	entries, err := os.ReadDir(proc)
	if err != nil || own == "" {
		return nil
	}
	out, tasks := map[string]Group{}, 0
	for _, e := range entries {
		pid := e.Name()
		if _, err := strconv.Atoi(pid); err != nil || pid == self || tasks >= maxTasks {
			continue
		}
		cg := cpuCgroupOf(filepath.Join(proc, pid, "cgroup"))
		if cg == "" || cg == own {
			continue
		}
		cpu, delay, n := taskTimes(filepath.Join(proc, pid, "task"), maxTasks-tasks)
		tasks += n
		g := out[cg]
		g.ID, g.CPU, g.RunDelay, g.Processes = ContainerID(cg), g.CPU+cpu, g.RunDelay+delay, g.Processes+1
		out[cg] = g
	}
	return out
}

// taskTimes sums the first two fields of the schedstat of at most limit threads under taskDir:
// nanoseconds on a CPU, and on a run queue waiting for one.
func taskTimes(taskDir string, limit int) (cpu, delay time.Duration, n int) {
	tasks, _ := os.ReadDir(taskDir)
	for _, t := range tasks[:min(len(tasks), limit)] {
		b, err := os.ReadFile(filepath.Join(taskDir, t.Name(), "schedstat"))
		if err != nil {
			continue // the thread exited
		}
		f := strings.Fields(string(b))
		if len(f) < 2 {
			continue
		}
		run, err1 := strconv.ParseInt(f[0], 10, 64)
		wait, err2 := strconv.ParseInt(f[1], 10, 64)
		if err1 != nil || err2 != nil || run < 0 || wait < 0 {
			continue
		}
		cpu, delay, n = cpu+time.Duration(run), delay+time.Duration(wait), n+1
	}
	return cpu, delay, n
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
