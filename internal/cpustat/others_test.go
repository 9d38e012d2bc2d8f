package cpustat

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeProc writes a /proc with the given cgroup files and thread schedstats ("PID/TID": "RUN WAIT").
func fakeProc(t *testing.T, cgroups, threads map[string]string) string {
	t.Helper()
	proc := t.TempDir()
	for pid, cg := range cgroups {
		write(t, filepath.Join(proc, pid, "cgroup"), cg)
	}
	for pt, times := range threads {
		pid, tid, _ := strings.Cut(pt, "/")
		write(t, filepath.Join(proc, pid, "task", tid, "schedstat"), times+" 1\n")
	}
	return proc
}

// An ephemeral container in a cgroup namespace: its own cgroup is "/", the pod's other
// containers "/../ID" (their sub-cgroups fold in); other pods' cgroups (hostPID), its own
// cgroup and unreadable entries are left out. Over two scans a thread seen in both counts its
// difference, a new thread everything, and a thread that exited nothing (not its history
// subtracted from the others').
func TestScanSinceByContainer(t *testing.T) {
	cgroups := map[string]string{
		"7":  "0::/\n",
		"1":  "0::/../cri-containerd-pause1.scope\n",
		"20": "0::/../cri-containerd-abc.scope\n",
		"21": "0::/../cri-containerd-abc.scope/init\n", // a sub-cgroup of the container
		"30": "0::/\n",                                 // another process of the agent's own container
		"40": "0::/../../pod-other/cri-containerd-zzz.scope\n",
		"50": "0::/sub\n", // below the agent's own cgroup
	}
	before := fakeProc(t, cgroups, map[string]string{
		"7/7": "5 5", "1/1": "1000 10", "20/20": "100000000 100000000", "20/22": "5000000000 5000000000",
		"21/21": "50000000 0", "30/30": "9 9", "40/40": "7 7", "50/50": "3 3",
	})
	after := fakeProc(t, cgroups, map[string]string{ // 22 exited, 23 started, the rest ran on
		"7/7": "6 6", "1/1": "1000 10", "20/20": "300000000 400000000", "20/23": "40000000 0",
		"21/21": "60000000 5000000", "30/30": "99 99", "40/40": "77 77", "50/50": "33 33",
	})
	s0, s1 := scanOthers(before, "7", time.Minute), scanOthers(after, "7", time.Minute)
	got := s1.Since(s0)
	want := map[string]Group{
		"/../cri-containerd-pause1.scope": {ID: "pause1", Processes: 1},
		"/../cri-containerd-abc.scope":    {ID: "abc", CPU: 250 * time.Millisecond, RunDelay: 305 * time.Millisecond, Processes: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Since (-want +got):\n%s", diff)
	}
}

// The pod's containers seen from outside a cgroup namespace (cgroup v1, or v2 without one):
// siblings under the pod's cgroup, whatever the driver's naming.
func TestContainerOf(t *testing.T) {
	own := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podU.slice/cri-containerd-A.scope"
	pod := "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podU.slice/"
	for cg, want := range map[string]string{
		pod + "cri-containerd-B.scope":          pod + "cri-containerd-B.scope",
		pod + "cri-containerd-B.scope/sub/more": pod + "cri-containerd-B.scope",
		own:                                     "",
		own + "/child":                          "",
		"/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-podV.slice/cri-containerd-C.scope": "",
		"/system.slice/containerd.service": "",
		"":                                 "",
	} {
		got, ok := containerOf(cg, own)
		if got != want || ok != (want != "") {
			t.Errorf("containerOf(%q) = %q, %v; want %q", cg, got, ok, want)
		}
	}
}

// A scan cut short (more threads than the bound, or past its time) is not compared.
func TestScanBounds(t *testing.T) {
	threads := map[string]string{}
	for i := range 30 {
		threads[fmt.Sprintf("20/%d", 100+i)] = "1 1"
	}
	proc := fakeProc(t, map[string]string{"7": "0::/\n", "20": "0::/../b\n"}, threads)
	whole := scanOthers(proc, "7", time.Minute)
	if got := whole.Since(whole); len(got) != 1 {
		t.Fatalf("a whole scan: %v", got)
	}
	if late := scanOthers(proc, "7", -time.Second); late.Since(whole) != nil || whole.Since(late) != nil {
		t.Errorf("a scan past its time compared")
	}
	many := &Scan{threads: whole.threads, processes: whole.processes}
	if !many.addThreads(filepath.Join(proc, "20", "task"), "/../b") {
		t.Errorf("30 threads refused")
	}
	if noRoom := (&Scan{threads: make(map[int]thread, maxTasks)}); func() bool {
		for i := range maxTasks - 10 {
			noRoom.threads[-i-1] = thread{}
		}
		return noRoom.addThreads(filepath.Join(proc, "20", "task"), "/../b")
	}() {
		t.Errorf("threads past %d accepted", maxTasks)
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
