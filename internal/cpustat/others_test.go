package cpustat

import (
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A pod's process namespace seen from an ephemeral container in a cgroup namespace: its own
// cgroup is "/", the others' are siblings ("/../ID"); threads are summed per cgroup, the agent's
// own cgroup and unreadable entries left out.
func TestOthersGroupsProcessesByCgroup(t *testing.T) {
	proc := t.TempDir()
	files := map[string]string{
		"7/cgroup":             "0::/\n",
		"7/task/7/schedstat":   "5 5 1\n",
		"1/cgroup":             "0::/../cri-containerd-pause1.scope\n",
		"1/task/1/schedstat":   "1000 10 1\n",
		"20/cgroup":            "0::/../cri-containerd-abc.scope\n",
		"20/task/20/schedstat": "200000000 300000000 9\n",
		"20/task/21/schedstat": "100000000 100000000 9\n",
		"20/task/22/schedstat": "garbage\n",
		"21/cgroup":            "0::/../cri-containerd-abc.scope\n",
		"21/task/21/schedstat": "50000000 0 1\n",
		"30/cgroup":            "0::/\n", // the agent's own container: another of its processes
		"30/task/30/schedstat": "999999 999999 1\n",
		"40/cgroup":            "12:cpu,cpuacct:/kubepods/burstable/pod1/def\n0::/\n", // v1
		"40/task/40/schedstat": "7 8 1\n",
		"self/cgroup":          "0::/\n",
		"notapid/cgroup":       "0::/../x\n",
		"50/task/50/schedstat": "1 1 1\n", // no cgroup file: gone
	}
	for name, content := range files {
		write(t, filepath.Join(proc, name), content)
	}
	got := others(proc, "7")
	want := map[string]Group{
		"/../cri-containerd-pause1.scope": {ID: "pause1", CPU: 1000, RunDelay: 10, Processes: 1},
		"/../cri-containerd-abc.scope":    {ID: "abc", CPU: 350 * time.Millisecond, RunDelay: 400 * time.Millisecond, Processes: 2},
		"/kubepods/burstable/pod1/def":    {ID: "def", CPU: 7, RunDelay: 8, Processes: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("others (-want +got):\n%s", diff)
	}
}

func TestContainerID(t *testing.T) {
	for in, want := range map[string]string{
		"/../cri-containerd-0123abcd.scope":                 "0123abcd",
		"/kubepods.slice/kubepods-pod1.slice/crio-77.scope": "77",
		"/system.slice/docker-feed.scope":                   "feed",
		"/kubepods/burstable/pod9/0123abcd":                 "0123abcd",
		"/":                                                 "/",
	} {
		if got := ContainerID(in); got != want {
			t.Errorf("ContainerID(%q) = %q, want %q", in, got, want)
		}
	}
}

// On this machine: a child process in the test's own cgroup is not among the others, and every
// group Others returns has processes.
func TestOthersOnThisMachine(t *testing.T) {
	child := exec.Command("sleep", "5")
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = child.Process.Kill(); _ = child.Wait() }()
	own := cpuCgroupOf("/proc/self/cgroup")
	for cg, g := range Others() {
		if cg == own {
			t.Errorf("own cgroup %s among the others", cg)
		}
		if g.Processes < 1 || g.CPU < 0 || g.RunDelay < 0 {
			t.Errorf("group %s: %+v", cg, g)
		}
	}
}
