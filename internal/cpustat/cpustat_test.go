package cpustat

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestOwnCPUCgroupAndItsFigures(t *testing.T) {
	for _, tc := range []struct {
		name, procCgroup string
		files            map[string]string
		wantDir          string
		wantThrottled    time.Duration
		wantPeriods      int64
		wantLimit        float64
	}{
		{
			name:       "v2 in a cgroup namespace: the mount is the container's cgroup",
			procCgroup: "0::/\n",
			files:      map[string]string{"cpu.stat": "usage_usec 10\nnr_periods 50\nnr_throttled 7\nthrottled_usec 1500\n", "cpu.max": "20000 100000\n"},
			wantDir:    "", wantThrottled: 1500 * time.Microsecond, wantPeriods: 7, wantLimit: 0.2,
		},
		{
			name:       "v2 on a host: the process's own cgroup below the root, no quota",
			procCgroup: "0::/kubepods/pod1/c1\n",
			files: map[string]string{"cpu.stat": "nr_throttled 1\nthrottled_usec 9\n", "kubepods/pod1/c1/cpu.stat": "nr_throttled 0\nthrottled_usec 0\n",
				"kubepods/pod1/c1/cpu.max": "max 100000\n"},
			wantDir: "kubepods/pod1/c1",
		},
		{
			name:       "v1 in a container: the path is the host's, the mount the container's own cgroup",
			procCgroup: "11:memory:/kubepods/burstable/pod1/c1\n4:cpu,cpuacct:/kubepods/burstable/pod1/c1\n",
			files: map[string]string{"cpu,cpuacct/cpu.stat": "nr_periods 20\nnr_throttled 20\nthrottled_time 1351699247\n",
				"cpu,cpuacct/cpu.cfs_quota_us": "50000\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"},
			wantDir: "cpu,cpuacct", wantThrottled: 1351699247, wantPeriods: 20, wantLimit: 0.5,
		},
		{
			name:       "v1 with cpu and cpuacct mounted apart, unlimited",
			procCgroup: "2:cpuacct:/\n1:cpu:/\n",
			files:      map[string]string{"cpu/cpu.stat": "nr_throttled 0\nthrottled_time 0\n", "cpu/cpu.cfs_quota_us": "-1\n", "cpu/cpu.cfs_period_us": "100000\n"},
			wantDir:    "cpu",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			for p, c := range tc.files {
				write(t, filepath.Join(root, p), c)
			}
			write(t, filepath.Join(root, "proc-cgroup"), tc.procCgroup)
			dir := ownCPUCgroup(filepath.Join(root, "proc-cgroup"), root)
			if want := filepath.Join(root, tc.wantDir); dir != want {
				t.Fatalf("cgroup dir %q, want %q", dir, want)
			}
			thr, n := throttling(dir)
			if thr != tc.wantThrottled || n != tc.wantPeriods || quota(dir) != tc.wantLimit {
				t.Errorf("throttled %v in %d periods, limit %v cores; want %v, %d, %v", thr, n, quota(dir), tc.wantThrottled, tc.wantPeriods, tc.wantLimit)
			}
		})
	}
}

func TestRunDelaySumsThreads(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "1", "schedstat"), "412527493 1527848394 211\n")
	write(t, filepath.Join(dir, "2", "schedstat"), "100 1000 3\n")
	write(t, filepath.Join(dir, "3", "schedstat"), "garbage\n")
	if got := runDelay(dir); got != 1527849394 {
		t.Errorf("run delay %d ns, want 1527849394", got)
	}
}

func TestSinceNeverGoesBackwards(t *testing.T) {
	t0 := time.Now()
	a := Sample{At: t0, CPU: time.Second, RunDelay: 5 * time.Second}
	b := Sample{At: t0.Add(2 * time.Second), CPU: 3 * time.Second, RunDelay: 4 * time.Second, LimitCores: 0.2}
	u := b.Since(a)
	if u.Wall != 2*time.Second || u.CPU != 2*time.Second || u.RunDelay != 0 || u.LimitCores != 0.2 {
		t.Errorf("%+v", u)
	}
}

// Idle entries are summed over every CPU's states but polling; a machine without cpuidle
// counts none, and a count is compared only between two samples that both had one.
func TestIdleEntriesLeaveOutPolling(t *testing.T) {
	dir := t.TempDir()
	for cpu, states := range map[string][][2]string{
		"cpu0": {{"POLL", "900"}, {"C1", "40"}, {"C1E", "2"}},
		"cpu1": {{"POLL", "5"}, {"haltpoll", "7\n"}},
		"cpu2": {{"C1", "garbage"}},
	} {
		for i, s := range states {
			d := filepath.Join(dir, cpu, "cpuidle", "state"+strconv.Itoa(i))
			write(t, filepath.Join(d, "name"), s[0]+"\n")
			write(t, filepath.Join(d, "usage"), s[1])
		}
	}
	write(t, filepath.Join(dir, "cpufreq", "cpuidle", "state0", "usage"), "1000")
	if n, ok := findIdleCounters(dir).sum(); ok {
		t.Errorf("idle entries %d counted with a counter that does not read as one", n)
	}
	write(t, filepath.Join(dir, "cpu2", "cpuidle", "state0", "usage"), "3")
	c := findIdleCounters(dir)
	if n, ok := c.sum(); !ok || n != 52 {
		t.Errorf("idle entries %d (counted %v), want 52: C1, C1E, haltpoll and cpu2's C1, not POLL", n, ok)
	}
	if err := os.RemoveAll(filepath.Join(dir, "cpu1")); err != nil {
		t.Fatal(err)
	}
	if n, ok := c.sum(); ok {
		t.Errorf("idle entries %d counted after a CPU's counters went away", n)
	}
	if _, ok := findIdleCounters(t.TempDir()).sum(); ok {
		t.Error("a machine without cpuidle counted idle entries")
	}
	t0 := time.Now()
	a, b := Sample{At: t0, IdleEntries: 10, IdleCounted: true}, Sample{At: t0, IdleEntries: 25, IdleCounted: true}
	if u := b.Since(a); !u.IdleCounted || u.IdleEntries != 15 {
		t.Errorf("%+v: want 15 idle entries", u)
	}
	if u := b.Since(Sample{At: t0}); u.IdleCounted {
		t.Errorf("%+v: counted against a sample without a count", u)
	}
	if u := a.Since(b); u.IdleCounted {
		t.Errorf("%+v: a count that went backwards counted", u)
	}
}
