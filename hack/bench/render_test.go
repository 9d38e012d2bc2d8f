package main

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/benchinfo"
	"github.com/kubectl-netbench/kubectl-netbench/internal/probes"
)

// made is a made-up run's parameters and facts; the two runs the tests render share none.
type made struct {
	rounds, httpRounds, rttCount, cores int
	tputSecs, httpSecs                  float64
	date                                time.Time
	took                                time.Duration
	kernel, iperf, load, loadEnd        string
	scale                               float64 // of every measurement
	below                               bool    // netbench's HTTP p50 below fortio's in every round
}

var (
	runA = made{rounds: 3, httpRounds: 6, rttCount: 200, cores: 2, tputSecs: 5, httpSecs: 7,
		date: time.Date(2031, 1, 2, 4, 9, 0, 0, time.UTC), took: 251 * time.Second, kernel: "6.13.40-test", iperf: "iperf 3.12", load: "0.61", loadEnd: "1.37",
		scale: 1, below: true}
	runB = made{rounds: 4, httpRounds: 11, rttCount: 300, cores: 16, tputSecs: 13, httpSecs: 17,
		date: time.Date(2047, 8, 19, 21, 38, 0, 0, time.UTC), took: 1234 * time.Second, kernel: "7.19.52-test", iperf: "iperf 3.18", load: "5.83", loadEnd: "4.29",
		scale: 3.7, below: false}
)

// synthetic is render's input for a made-up run, its rows built as run builds them.
func synthetic(m made) (config, env, []row) {
	c := config{tputSecs: m.tputSecs, httpSecs: m.httpSecs, rttCount: m.rttCount, rounds: m.rounds, httpRounds: m.httpRounds}
	e := env{
		command:  fmt.Sprintf("go run ./hack/bench -rounds %d -http-rounds %d", m.rounds, m.httpRounds),
		date:     m.date,
		took:     m.took,
		machine:  benchinfo.Machine{Cores: m.cores, CPU: "Made-up CPU", Kernel: m.kernel, Load: m.load},
		loadEnd:  m.loadEnd,
		via:      " (by `make test-target`)",
		versions: []string{"go-test", m.iperf, "fortio v-test runner (fhttp) in hack/bench"},
	}
	x := 0.0
	next := func() float64 { x++; return m.scale * (97 + 13*x + 0.37*x*x) }
	rounds := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = next()
		}
		return v
	}
	var rows []row
	for _, s := range streamCounts {
		pair := func() [2][]float64 {
			if !m.below {
				return [2][]float64{rounds(m.rounds), rounds(m.rounds)} // apart: no tie
			}
			var p [2][]float64
			for i := 0; i < m.rounds; i++ { // interleaved: ties
				p[0], p[1] = append(p[0], next()), append(p[1], next())
			}
			return p
		}
		rows = append(rows, tputRows(s, pair(), pair(), pair())...)
	}
	ours := [2][]float64{rounds(m.httpRounds), rounds(m.httpRounds)}
	one := [2][]float64{rounds(m.httpRounds), rounds(m.httpRounds)}
	for i := range ours[0] {
		if m.below == (ours[0][i] > one[0][i]) {
			ours[0][i], one[0][i] = one[0][i], ours[0][i]
		}
	}
	rows = append(rows, httpRows(ours, one, [2][]float64{rounds(m.httpRounds), rounds(m.httpRounds)})...)
	rows = append(rows, rttRows("icmp-raw", probes.Latency{P50Micros: next(), AvgMicros: next()}, probes.Latency{P50Micros: next()}, next(), next())...)
	return c, e, rows
}

// constants are the numbers the generated prose may repeat from one run to the next: the code's
// own parameters, printed from the same constants the code uses.
func constants(rows []row) map[string]bool {
	ok := map[string]bool{}
	withRounds := 0 // the table's layout: how many of its ratios have rounds
	for _, r := range rows {
		if len(r.ours) > 1 {
			withRounds++
		}
	}
	ok[fmt.Sprint(withRounds)] = true
	for _, n := range []string{
		fmt.Sprint(httpQPS),
		fmt.Sprint(httpConns),
		fmt.Sprint(rttInterval.Milliseconds()),
		oneThread,
	} {
		ok[n] = true
	}
	for _, s := range streamCounts {
		ok[fmt.Sprint(s)] = true
	}
	return ok
}

// TestNotesHoldOnlyThisRunsNumbers renders two made-up runs that share no figure: a number in
// the prose of both (outside the table) that is not one of the code's parameters was typed
// into the generator, and would be printed, stale, over every future run.
func TestNotesHoldOnlyThisRunsNumbers(t *testing.T) {
	c1, e1, r1 := synthetic(runA)
	c2, e2, r2 := synthetic(runB)
	a, b := render(c1, e1, r1), render(c2, e2, r2)
	benchinfo.CheckNoFixedNumbers(t, a, b, constants(r1), notesFile)
}

// The header says what the code does, with the run's parameters, and the notes use the run's
// figures.
func TestRenderSaysWhatRan(t *testing.T) {
	c, e, r := synthetic(runA)
	md := render(c, e, r)
	for _, want := range []string{
		"Written by `go run ./hack/bench -rounds 3 -http-rounds 6` (by `make test-target`) on 2031-01-02 04:09 UTC; it took 4m11s.",
		"- Machine: 2 cores (Made-up CPU), kernel 6.13.40-test; load average 0.61 when the run started, 1.37 when it ended",
		"- Throughput (1 and 8 streams): 5s per run, 3 rounds; who goes first alternates, netbench in the first round",
		"- HTTP keep-alive (100 qps over 4 connections, against the same agent server): 7s per run, 6 rounds",
		"- RTT: one run of each, no rounds — iputils ping first (200 echoes, 10 ms apart)",
		"in 6 of 6 rounds",
		notesFile,
	} {
		if !strings.Contains(md, want) {
			t.Errorf("the markdown lacks %q", want)
		}
	}
	if t.Failed() {
		t.Logf("the markdown:\n%s", md)
	}
}
