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
	f.Fuzz(func(t *testing.T, data string) {
		job, err := readJob(data, strings.NewReader(""))
		if err != nil || job.Validate() != nil {
			return
		}
		for _, p := range job.Probes {
			if p.Streams > MaxStreams || p.Connections > MaxConnections || p.DurationSeconds > MaxDurationSeconds {
				t.Errorf("job validated with a probe out of bounds: %+v", p)
			}
		}
	})
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
