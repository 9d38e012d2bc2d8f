package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/path"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/benchinfo"
	"github.com/kubectl-netbench/kubectl-netbench/internal/reftools"
)

// made is a made-up run's parameters and facts; the two runs the tests render share none.
type made struct {
	rounds, paths, cores, nodes, newConns int
	seconds                               float64
	date                                  time.Time
	took                                  time.Duration
	kernel, iperf, load, loadEnd          string
	compressed, unpacked                  int64
	held                                  string
	scale                                 float64 // of every measurement
	below                                 bool    // netbench's figure below the reference's in every round
}

var (
	runA = made{rounds: 5, paths: 3, cores: 2, nodes: 4, newConns: 17, seconds: 7,
		date: time.Date(2031, 1, 2, 4, 6, 0, 0, time.UTC), took: 613 * time.Second, kernel: "6.13.40-test", iperf: "iperf 3.12", load: "0.61", loadEnd: "1.37",
		held: "cpuidle driver haltpoll, guest_halt_poll_ns 13", compressed: 8_300_000, unpacked: 16_700_000, scale: 1, below: true}
	runB = made{rounds: 6, paths: 2, cores: 6, nodes: 9, newConns: 23, seconds: 9,
		date: time.Date(2047, 8, 19, 21, 38, 0, 0, time.UTC), took: 1234 * time.Second, kernel: "7.19.52-test", iperf: "iperf 3.18", load: "5.83", loadEnd: "4.29",
		held: "cpuidle driver acpi_idle", compressed: 9_400_000, unpacked: 18_600_000, scale: 3.7, below: false}
)

// synthetic renders's inputs for a made-up run.
func synthetic(m made) (config, env, measured) {
	c := config{rounds: m.rounds, seconds: m.seconds, newConns: m.newConns}
	e := env{
		command:  fmt.Sprintf("go run ./hack/benchlab -rounds %d -seconds %g", m.rounds, m.seconds),
		date:     m.date,
		took:     m.took,
		machine:  benchinfo.Machine{Cores: m.cores, CPU: "Made-up CPU", Kernel: m.kernel, Load: m.load},
		loadEnd:  m.loadEnd,
		via:      " (by `make test-target`)",
		nodes:    m.nodes,
		versions: []string{"go-test", m.iperf, "fortio v-test runner (fhttp) in hack/benchlab"},
		image:    image{path: "bin/agent-image.tar", compressed: m.compressed, unpacked: m.unpacked},
		held:     m.held,
	}
	var results []pathResult
	x := 0.0
	next := func() float64 { x++; return m.scale * (97 + 13*x + 0.37*x*x) }
	for _, p := range paths[:m.paths] {
		r := pathResult{spec: p, figures: map[string]*figure{}, cpu: map[string][]float64{}, rss: map[string][]float64{}, method: "icmp-unprivileged"}
		for i := 0; i < m.rounds; i++ {
			for _, s := range rowSpecs {
				ours, ref := next(), next()
				if m.below == (ours > ref) {
					ours, ref = ref, ours
				}
				r.add(s.key, ours, ref)
			}
			for _, role := range []string{"client", "server"} {
				r.cpu[role] = append(r.cpu[role], next()/10)
				r.rss[role] = append(r.rss[role], next()/20)
			}
		}
		results = append(results, r)
	}
	faults := pathResult{spec: faultPath, figures: map[string]*figure{}}
	for i := 0; i < m.rounds; i++ {
		for _, s := range faultRows {
			faults.add(s.key, next(), next())
		}
	}
	dns := pathResult{spec: dnsSection, figures: map[string]*figure{}, detail: fmt.Sprintf("Its replicas' CPU limit, as deployed: %dm", m.cores+m.nodes+1)}
	for i := 0; i < m.rounds; i++ {
		for _, s := range dnsRows {
			dns.add(s.key, next(), next())
		}
	}
	idle := pathResult{spec: asFound, figures: map[string]*figure{}}
	for i := 0; i < m.rounds; i++ {
		for _, s := range asFoundRows {
			idle.add(s.key, next(), next())
		}
	}
	return c, e, measured{paths: results, faults: faults, dns: dns, idle: idle}
}

// constants are the numbers the generated prose may repeat from one run to the next: the code's
// own parameters, printed from the same constants the code uses.
func constants() map[string]bool {
	ok := map[string]bool{}
	for _, n := range []string{
		strconv.Itoa(pluginStreams),
		strconv.Itoa(appPort),
		refProcs,
		fmt.Sprintf("%.0f", imageGoalBytes/1e6),
		"1", // -P 1: the single-stream iperf3 run
		strconv.Itoa(rrBytes),
		strconv.Itoa(path.UDPSize),
		strconv.Itoa(lossPercent), bottleneckDepth, strings.TrimSuffix(bottleneckRate, "mbit"), strconv.Itoa(int(pingAlongside / time.Millisecond)),
		"3550", "16", // RFC 3550's jitter, its gain 1/16
		strings.TrimSuffix(dnsBudget, "s"), strconv.Itoa(reftools.DNSPerfSockets),
	} {
		ok[n] = true
	}
	return ok
}

// TestNotesHoldOnlyThisRunsNumbers renders two made-up runs that share no figure: a number in
// the prose of both (outside the tables) that is not one of the code's parameters was typed
// into the generator, and would be printed, stale, over every future run.
func TestNotesHoldOnlyThisRunsNumbers(t *testing.T) {
	c1, e1, m1 := synthetic(runA)
	c2, e2, m2 := synthetic(runB)
	a, b := render(c1, e1, m1), render(c2, e2, m2)
	benchinfo.CheckNoFixedNumbers(t, a, b, constants(), notesFile)
}

// The notes are generated from the run: the measured figures reach the prose.
func TestNotesUseTheMeasurements(t *testing.T) {
	c, e, m := synthetic(runA)
	md := render(c, e, m)
	for _, want := range []string{
		"Written by `go run ./hack/benchlab -rounds 5 -seconds 7` (by `make test-target`) on 2031-01-02 04:06 UTC",
		"it took 10m13s",
		"2 cores (Made-up CPU), kernel 6.13.40-test; the whole lab (API server, its 4 nodes'",
		"load average 0.61 when the run started, 1.37 when it ended",
		"--duration 7s",
		"curl, 17 requests",
		"- 5 rounds per path",
		"5 of 5 rounds (same node",
		fmt.Sprintf("— %[1]d of the %[1]d ratios above —", len(paths)*len(rowSpecs)+len(faultRows)+len(dnsRows)+len(asFoundRows)),
		"This machine's cpuidle driver haltpoll, guest_halt_poll_ns 13",
		"## same node (lab-b1 → lab-b1), CPUs free to idle\n\nThe CPUs no longer held: 5 rounds, who goes first alternating, of `kubectl netbench path -n netbench-benchlab CLIENT srv --probes tcp-rr,udp-rr --request-size 64",
		"its layers 8.3 MB as pulled (compressed), 16.7 MB unpacked; goal ≤ 15 MB unpacked: not met",
		notesFile,
		"## cross zone (lab-a1 → lab-b1), the lab's faults at lab-a1\n\nThe lab's faults, one after the other, on the cross-zone path (5 rounds each): `hack/lab/lab.sh udp-loss lab-a1 20`",
		"`hack/lab/lab.sh bottleneck lab-a1 50mbit fifo 1000000`",
		"## DNS capacity: the lab's CPU-limited CoreDNS (hack/lab/manifests/dns-capacity.yaml), from a glibc pod on lab-a1\n\nIts replicas' CPU limit, as deployed: 7m. 5 rounds, who goes first alternating: `kubectl netbench dns -n netbench-benchlab CLIENT kubernetes.default --load",
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the markdown lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("the markdown:\n%s", md)
	}
	e.image = readImage(filepath.Join(t.TempDir(), "absent.tar"))
	if md := render(c, e, m); !strings.Contains(md, "- Image: not measured (open ") {
		t.Errorf("an absent image is not said to be unmeasured:\n%s", md)
	}
}

func TestReadImage(t *testing.T) {
	layer := bytes.Repeat([]byte("netbench agent layer "), 5000)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(layer)
	_ = zw.Close()
	var tb bytes.Buffer
	tw := tar.NewWriter(&tb)
	for _, f := range []struct {
		name string
		data []byte
	}{
		{"sha256:cfg", []byte("{}")},
		{"abc.tar.gz", gz.Bytes()},
		{"manifest.json", []byte(`[{"Config":"sha256:cfg","RepoTags":["x:dev"],"Layers":["abc.tar.gz"]}]`)},
	} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "agent.tar")
	if err := os.WriteFile(path, tb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	im := readImage(path)
	if im.err != nil || im.compressed != int64(gz.Len()) || im.unpacked != int64(len(layer)) {
		t.Errorf("readImage = %+v, want %d bytes compressed, %d unpacked", im, gz.Len(), len(layer))
	}
}

// A reference whose median is zero (no idle entry while the CPUs were held) gets no ratio, not
// NaN or +Inf.
func TestNoRatioOfAZeroReference(t *testing.T) {
	r := pathResult{spec: paths[0], figures: map[string]*figure{}}
	r.add("tcp-rr idle", 0.4, 0)
	r.add("tcp-rr idle", 0, 0)
	var b strings.Builder
	renderPath(&b, r, rowSpecs, "")
	if md := b.String(); strings.Contains(md, "NaN") || strings.Contains(md, "Inf") || !strings.Contains(md, "| sockperf ping-pong --tcp, per thousand answers | — | (info) |") {
		t.Errorf("the row:\n%s", md)
	}
}
