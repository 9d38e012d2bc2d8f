package reftools

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// CgroupArg makes a benchmark binary move itself into another process's cgroups and then
// execute a command: `BIN in-cgroup-of PID CMD ARGS…` (see MaybeRunReference).
const CgroupArg = "in-cgroup-of"

// InPod is a Runner for the pod whose processes share the network namespace file netns: each
// command runs in that namespace and in the cgroups of the pod's own container, so a reference
// tool gets the CPU share the agent gets there (a BestEffort pod weighs 2 against the host's
// 1024), not the host's.
func InPod(netns string) (Runner, error) {
	pid, err := podProcess(netns)
	if err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return func(name string, args ...string) *exec.Cmd {
		return exec.Command(self, append([]string{CgroupArg, strconv.Itoa(pid), "nsenter", "--net=" + netns, name}, args...)...)
	}, nil
}

// podProcess finds a process of a Kubernetes pod (its cgroup under kubepods) in netns.
func podProcess(netns string) (int, error) {
	var want syscall.Stat_t
	if err := syscall.Stat(netns, &want); err != nil {
		return 0, fmt.Errorf("network namespace %s: %w", netns, err)
	}
	procs, _ := filepath.Glob("/proc/[0-9]*/ns/net")
	for _, p := range procs {
		var st syscall.Stat_t
		if syscall.Stat(p, &st) != nil || st.Ino != want.Ino || st.Dev != want.Dev {
			continue
		}
		pid, _ := strconv.Atoi(strings.Split(p, "/")[2])
		if cg, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid)); err == nil && strings.Contains(string(cg), "/kubepods/") {
			return pid, nil
		}
	}
	return 0, fmt.Errorf("no pod process in network namespace %s", netns)
}

// joinCgroups moves this process into every cgroup (v1 hierarchies and the unified one) that pid
// is in.
func joinCgroups(pid string) error {
	f, err := os.Open("/proc/" + pid + "/cgroup")
	if err != nil {
		return err
	}
	defer f.Close()
	me := []byte(strconv.Itoa(os.Getpid()))
	sc := bufio.NewScanner(f)
	var errs []error
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), ":", 3)
		if len(parts) != 3 {
			continue
		}
		dir := cgroupDir(parts[1])
		if dir == "" {
			continue
		}
		if err := os.WriteFile(filepath.Join(dir, parts[2], "cgroup.procs"), me, 0); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(append(errs, sc.Err())...)
}

// cgroupDir is where the hierarchy of /proc/PID/cgroup's controller field is mounted: the unified
// hierarchy for "", else the first v1 mount named after one of its controllers.
func cgroupDir(controllers string) string {
	names := []string{"unified", ""}
	if controllers != "" {
		names = nil
		for _, c := range strings.Split(controllers, ",") {
			names = append(names, strings.TrimPrefix(c, "name="))
		}
	}
	for _, n := range names {
		d := filepath.Join("/sys/fs/cgroup", n)
		if _, err := os.Stat(filepath.Join(d, "cgroup.procs")); err == nil {
			return d
		}
	}
	return ""
}

// runInCgroupOf is the CgroupArg mode: join pid's cgroups, then become the command.
func runInCgroupOf(args []string) error {
	if len(args) < 2 {
		return errors.New("usage: in-cgroup-of PID CMD [ARGS…]")
	}
	if err := joinCgroups(args[0]); err != nil {
		return fmt.Errorf("joining the cgroups of %s: %w", args[0], err)
	}
	path, err := exec.LookPath(args[1])
	if err != nil {
		return err
	}
	return syscall.Exec(path, args[1:], os.Environ())
}
