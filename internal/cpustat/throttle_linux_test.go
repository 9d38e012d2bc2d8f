package cpustat

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TestAncestorQuotaShowsAsRunDelay runs a busy loop in a cgroup whose parent has a CFS quota of
// 0.2 cores (as an ephemeral container under its pod's limit) on the real kernel: its own cgroup
// has no quota and says nothing, and the wait for a CPU says what the limit took.
func TestAncestorQuotaShowsAsRunDelay(t *testing.T) {
	if os.Getenv("CPUSTAT_BUSY") == "1" {
		busyChild()
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("needs root to create cgroups")
	}
	mine := ownCPUCgroup("/proc/self/cgroup", "/sys/fs/cgroup")
	if mine == "" || !exists(filepath.Join(mine, "cpu.cfs_quota_us")) {
		t.Skip("needs a cgroup v1 cpu hierarchy (this machine's cpu cgroup: " + mine + ")")
	}
	parent := filepath.Join(mine, fmt.Sprintf("netbench-cpustat-%d", os.Getpid()))
	child := filepath.Join(parent, "container")
	if err := os.MkdirAll(child, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Remove(child); _ = os.Remove(parent) })
	if err := os.WriteFile(filepath.Join(parent, "cpu.cfs_quota_us"), []byte("20000"), 0); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAncestorQuotaShowsAsRunDelay$")
	cmd.Env = append(os.Environ(), "CPUSTAT_BUSY=1")
	in, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	if err := os.WriteFile(filepath.Join(child, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(in, "go")
	var u Use
	sc := bufio.NewScanner(out)
	for sc.Scan() && json.Unmarshal(sc.Bytes(), &u) != nil {
	}
	t.Logf("1 s busy under a parent's 0.2-core quota: CPU %v, waited %v, own cgroup throttled %v (%d periods), own limit %v cores", u.CPU, u.RunDelay, u.Throttled, u.ThrottledPeriods, u.LimitCores)
	if u.Wall < time.Second || u.CPU > 400*time.Millisecond || u.RunDelay < 500*time.Millisecond {
		t.Errorf("want ≤ 0.4 s of CPU and ≥ 0.5 s of waiting for one in ≥ 1 s: %+v", u)
	}
	if u.Throttled != 0 || u.LimitCores != 0 {
		t.Errorf("the child's own cgroup has no quota: %+v", u)
	}
}

// busyChild waits for a line on stdin, spins one thread for a second and prints its Use.
func busyChild() {
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
	before := Read()
	for end := time.Now().Add(time.Second); time.Now().Before(end); {
	}
	_ = json.NewEncoder(os.Stdout).Encode(Read().Since(before))
}
