package agent

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cpustat"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// The other containers' use over a probe in the schema's form: seconds to the millisecond, the
// probe's wall time on each, in the order of the IDs; nothing without a wall time.
func TestAppUse(t *testing.T) {
	groups := map[string]cpustat.Group{
		"/../b": {ID: "b", CPU: 400 * time.Millisecond, RunDelay: 1600 * time.Millisecond, Processes: 1},
		"/../a": {ID: "a", CPU: 1234567 * time.Nanosecond, Processes: 2},
	}
	want := []v1alpha1.AppContainer{
		{ContainerID: "a", Processes: 2, CPUUse: v1alpha1.CPUUse{WallSeconds: 2, CPUSeconds: 0.001}},
		{ContainerID: "b", Processes: 1, CPUUse: v1alpha1.CPUUse{WallSeconds: 2, CPUSeconds: 0.4, RunQueueWaitSeconds: 1.6}},
	}
	if diff := cmp.Diff(want, appUse(groups, 2*time.Second)); diff != "" {
		t.Errorf("appUse (-want +got):\n%s", diff)
	}
	if got := appUse(groups, 0); got != nil {
		t.Errorf("no wall time: %v", got)
	}
}

// The server's replies around a probe: only the last carries the containers' use, and says how
// long before it the CPU was sampled, which the client takes off the reply's arrival; a reply
// without the query scans nothing; what crosses the wire comes back the same.
func TestServerAppReplies(t *testing.T) {
	var scans appScans
	if first := scans.reply(appFirst); first.App != nil || first.SampledAgoNanos != 0 || scans.first == nil {
		t.Fatalf("first reply %+v, baseline %v", first, scans.first)
	}
	last := scans.reply(appLast)
	if last.SampledAgoNanos <= 0 || scans.first != nil {
		t.Errorf("last reply sampled %d ns before, baseline left %v", last.SampledAgoNanos, scans.first)
	}
	if plain := scans.reply(""); plain.App != nil || plain.SampledAgoNanos != 0 {
		t.Errorf("a reply without the query: %+v", plain)
	}
	now := time.Unix(100, 0)
	r := CPUReply{App: map[string]cpustat.Group{"/../x": {ID: "x", CPU: 5, RunDelay: 6, Processes: 1}}, SampledAgoNanos: int64(30 * time.Millisecond)}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back CPUReply
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	u := back.sample(now)
	if diff := cmp.Diff(r.App, u.app); diff != "" || !u.cpu.At.Equal(now.Add(-30*time.Millisecond)) {
		t.Errorf("over the wire (-want +got):\n%s; sampled at %v", diff, u.cpu.At)
	}
	if u := (CPUReply{SampledAgoNanos: int64(time.Hour)}).sample(now); !u.cpu.At.Equal(now.Add(-2 * time.Second)) {
		t.Errorf("a claimed hour before: sampled at %v, want at most 2 s before", u.cpu.At)
	}
}
