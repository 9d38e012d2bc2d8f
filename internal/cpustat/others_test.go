package cpustat

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeProc writes a /proc: cgroup files, thread schedstats ("PID/TID": "RUN WAIT") and stat
// files ("PID": "PPID CUTIME CSTIME STARTTIME", in clock ticks; utime and stime 5 each).
func fakeProc(t *testing.T, cgroups, threads, stats map[string]string) string {
	t.Helper()
	proc := t.TempDir()
	for pid, cg := range cgroups {
		write(t, filepath.Join(proc, pid, "cgroup"), cg)
	}
	for pt, times := range threads {
		pid, tid, _ := strings.Cut(pt, "/")
		write(t, filepath.Join(proc, pid, "task", tid, "schedstat"), times+" 1\n")
	}
	for pid, s := range stats {
		var pp, cu, cs, st int
		fmt.Sscan(s, &pp, &cu, &cs, &st)
		// a command with ") (" in it; fields 3-15, cutime, cstime, 18-21, starttime
		write(t, filepath.Join(proc, pid, "stat"), fmt.Sprintf("%s (a) (b) S %d 1 1 0 -1 0 0 0 0 0 5 5 %d %d 20 0 1 0 %d 0 0\n", pid, pp, cu, cs, st))
	}
	return proc
}

// The pod's containers asked about, seen from an agent in a cgroup namespace ("/../ID", with
// sub-cgroups) and as the host names them (CRI-O's subgroup layout, cgroup v1 with cgroupfs);
// other pods', the sandbox's and the agent's own processes are left out, as is a sub-cgroup of
// one container named after another. Over two scans a thread seen in both counts its
// difference, a new thread everything, a thread that exited nothing (not its history subtracted);
// a process seen in both adds what the children it reaped did in the window (not before it), a
// reused PID nothing.
func TestScanSinceByContainer(t *testing.T) {
	cgroups := map[string]string{
		"7":  "0::/\n", // the agent
		"1":  "0::/../cri-containerd-pause1.scope\n",
		"20": "0::/../cri-containerd-abc.scope\n",
		"21": "0::/../cri-containerd-abc.scope/init\n",
		"24": "0::/../cri-containerd-abc.scope\n",     // 20's child, reaped in the window
		"25": "0::/../cri-containerd-abc.scope/def\n", // abc's, named after def
		"30": "0::/kubepods.slice/kubepods-pod1.slice/crio-def.scope/container\n",
		"40": "0::/../../pod-other/cri-containerd-zzz.scope\n",
		"50": "12:cpu,cpuacct:/kubepods/burstable/pod1/ghi\n0::/\n",
	}
	stats := func(parentCutime, startOf21 int) map[string]string {
		return map[string]string{"7": "0 0 0 1", "1": "0 0 0 2", "20": fmt.Sprintf("1 %d 0 9", parentCutime), "21": fmt.Sprintf("1 0 0 %d", startOf21),
			"24": "20 0 0 30", "25": "1 0 0 31", "30": "1 0 0 3", "40": "1 0 0 4", "50": "1 7 0 5"}
	}
	before := fakeProc(t, cgroups, map[string]string{
		"7/7": "5 5", "1/1": "1000 10", "20/20": "100000000 100000000", "20/22": "5000000000 5000000000",
		"21/21": "50000000 0", "24/24": "1 1", "25/25": "0 0", "30/30": "1 1", "40/40": "7 7", "50/50": "3 3",
	}, stats(100, 11))
	afterStats := stats(125, 12) // 20 reaped 24 (10 ticks of its own before the window, 15 in it); 21 is another process
	delete(cgroups, "24")
	after := fakeProc(t, cgroups, map[string]string{ // 22 exited, 23 started, the rest ran on
		"7/7": "6 6", "1/1": "1000 10", "20/20": "300000000 400000000", "20/23": "40000000 0",
		"21/21": "60000000 5000000", "25/25": "7000000 0", "30/30": "2 3", "40/40": "77 77", "50/50": "33 33",
	}, afterStats)
	ids := []string{"abc", "def", "ghi"}
	s0, s1 := scanOthers(before, ids, time.Minute), scanOthers(after, ids, time.Minute)
	got, window, ok := s1.Since(s0)
	want := map[string]Group{
		"abc": {ID: "abc", CPU: 407 * time.Millisecond, RunDelay: 305 * time.Millisecond, Processes: 3},
		"def": {ID: "def", CPU: 1, RunDelay: 2, Processes: 1},
		"ghi": {ID: "ghi", CPU: 30, RunDelay: 30, Processes: 1},
	}
	if diff := cmp.Diff(want, got); diff != "" || !ok || window <= 0 {
		t.Errorf("Since, ok %v, window %v (-want +got):\n%s", ok, window, diff)
	}
}

// A scan past its thread bound or its time, or of a /proc it cannot list, is not compared; the
// deadline holds however few of the processes are the containers asked about.
func TestScanBounds(t *testing.T) {
	threads := map[string]string{}
	for i := range 30 {
		threads[fmt.Sprintf("20/%d", 100+i)] = "1 1"
	}
	cgroups := map[string]string{"20": "0::/../b\n"}
	for i := range 200 {
		cgroups[fmt.Sprint(1000+i)] = "0::/../other\n"
	}
	stats := map[string]string{"20": "1 0 0 1"}
	for pid := range cgroups {
		if pid != "20" {
			stats[pid] = "1 0 0 1"
		}
	}
	proc := fakeProc(t, cgroups, threads, stats)
	whole := scanOthers(proc, []string{"b"}, time.Minute)
	if got, _, ok := whole.Since(whole); !ok || len(got) != 1 {
		t.Fatalf("a whole scan: %v %v", got, ok)
	}
	if late := scanOthers(proc, []string{"nothing-here"}, -time.Second); !late.truncated {
		t.Errorf("a scan past its time, over processes none of which is asked about, not cut short")
	}
	if _, _, ok := scanOthers(filepath.Join(proc, "missing"), []string{"b"}, time.Minute).Since(whole); ok {
		t.Errorf("a scan of a /proc it cannot list compared")
	}
	full := &Scan{threads: make(map[int]thread, maxTasks), procs: map[int]process{}}
	for i := range maxTasks - 10 {
		full.threads[-i-1] = thread{}
	}
	if full.addThreads(filepath.Join(proc, "20", "task"), "b", time.Now().Add(time.Minute)) {
		t.Errorf("threads past %d accepted", maxTasks)
	}
	if !full.addThreads(filepath.Join(proc, "99", "task"), "b", time.Now().Add(time.Minute)) {
		t.Errorf("a process that ended between its stat and its threads cut the scan short")
	}
}

func TestContainerID(t *testing.T) {
	for in, want := range map[string]string{
		"/../cri-containerd-0123abcd.scope":                 "0123abcd",
		"/kubepods.slice/kubepods-pod1.slice/crio-77.scope": "77",
		"/system.slice/docker-feed.scope":                   "feed",
		"/kubepods/burstable/pod9/0123abcd":                 "0123abcd",
	} {
		if got := ContainerID(in); got != want {
			t.Errorf("ContainerID(%q) = %q, want %q", in, got, want)
		}
	}
}
