package reftools

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestMedianAndRange(t *testing.T) {
	for _, tc := range []struct {
		in             []float64
		median, lo, hi float64
	}{
		{nil, 0, 0, 0},
		{[]float64{3}, 3, 3, 3},
		{[]float64{5, 1, 3}, 3, 1, 5},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
	} {
		in := append([]float64(nil), tc.in...)
		lo, hi := Range(tc.in)
		if got := Median(tc.in); got != tc.median || lo != tc.lo || hi != tc.hi {
			t.Errorf("%v: median %g range %g–%g, want %g %g–%g", tc.in, got, lo, hi, tc.median, tc.lo, tc.hi)
		}
		if diff := cmp.Diff(in, tc.in); diff != "" {
			t.Errorf("Median sorted its input: %s", diff)
		}
	}
}

func TestParseHTTPRun(t *testing.T) {
	h, err := parseHTTPRun([]string{"http://10.0.0.1:8080/", "tok", "5", "0", "16"})
	if err != nil {
		t.Fatal(err)
	}
	want := HTTPRun{URL: "http://10.0.0.1:8080/", Token: "tok", Seconds: 5, QPS: 0, Connections: 16}
	if diff := cmp.Diff(want, h); diff != "" {
		t.Error(diff)
	}
	for _, bad := range [][]string{{"u", "t", "5", "1"}, {"u", "t", "x", "1", "2"}, {"u", "t", "5", "1", "two"}} {
		if _, err := parseHTTPRun(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestCgroupDirUnified(t *testing.T) {
	// Every Linux with cgroups mounts one of the two: /sys/fs/cgroup/unified (hybrid) or
	// /sys/fs/cgroup itself (v2 only).
	if d := cgroupDir(""); d != "/sys/fs/cgroup/unified" && d != "/sys/fs/cgroup" {
		t.Errorf("unified hierarchy at %q", d)
	}
}
