package agent

import (
	"strings"
	"testing"
)

// Job JSON comes from the command line: decoding and validating must never panic, and a job
// that validates keeps its probes within the bounds.
func FuzzReadJob(f *testing.F) {
	f.Add(`{"apiVersion":"` + APIVersion + `","host":"10.0.0.1","port":7000,"probes":[{"kind":"tcp","streams":8,"durationSeconds":3}]}`)
	f.Add(`{"apiVersion":"` + APIVersion + `","probes":[{"kind":"dns","names":["a"]}]}`)
	f.Add(`{"probes":[{"kind":"http","connections":100000}]}`)
	f.Add(`{"apiVersion":"` + APIVersion + `","host":"10.0.0.1","port":7000,"probes":[{"kind":"spread","address":"10.96.0.9:80","count":5,"direct":{"p":"10.0.0.2:40000"}}]}`)
	f.Fuzz(func(t *testing.T, data string) {
		job, err := readJob(data, strings.NewReader(""))
		if err != nil || job.Validate() != nil {
			return
		}
		for _, p := range job.Probes {
			if p.Streams > MaxStreams || p.Connections > MaxConnections || p.DurationSeconds > MaxDurationSeconds || len(p.Direct) > MaxDirect {
				t.Errorf("job validated with a probe out of bounds: %+v", p)
			}
		}
	})
}

// Endpoint addresses ride on spread probes only, as IP:port, at most MaxDirect.
func TestJobDirectAddresses(t *testing.T) {
	many := map[string]string{}
	for i := range MaxDirect + 1 {
		many[string(rune('a'+i%26))+strings.Repeat("x", i)] = "10.0.0.1:1"
	}
	for _, tc := range []struct {
		probe ProbeSpec
		ok    bool
	}{
		{ProbeSpec{Kind: ProbeSpread, Address: "10.96.0.9:80", Count: 5, Direct: map[string]string{"p": "10.0.0.2:40000"}}, true},
		{ProbeSpec{Kind: ProbeSpread, Address: "10.96.0.9:80", Count: 5, Direct: map[string]string{"p": "example.com:80"}}, false},
		{ProbeSpec{Kind: ProbeSpread, Address: "10.96.0.9:80", Count: 5, Direct: many}, false},
		{ProbeSpec{Kind: ProbeSpread, Address: "10.96.0.9:80", Count: 5, Direct: map[string]string{"": "10.0.0.2:40000"}}, false},
		{ProbeSpec{Kind: ProbeTCPRTT, Direct: map[string]string{"p": "10.0.0.2:40000"}}, false},
	} {
		j := &Job{APIVersion: APIVersion, Host: "10.0.0.1", Port: 7000, Probes: []ProbeSpec{tc.probe}}
		if err := j.Validate(); (err == nil) != tc.ok {
			t.Errorf("%+v: %v, want ok %v", tc.probe, err, tc.ok)
		}
	}
}

// Event lines come from a container's log, which anything in the pod can write to.
func FuzzDecodeEvent(f *testing.F) {
	f.Add(`{"apiVersion":"` + APIVersion + `","type":"ready","port":7000}`)
	f.Add(`{"apiVersion":"other/v9","type":"result"}`)
	f.Add(`not json`)
	f.Fuzz(func(t *testing.T, line string) {
		ev, err := DecodeEvent([]byte(line))
		if err == nil && ev.APIVersion != APIVersion {
			t.Errorf("decoded an event of apiVersion %q", ev.APIVersion)
		}
	})
}
