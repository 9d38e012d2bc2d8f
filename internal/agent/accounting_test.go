package agent

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cpustat"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// The other containers' use over a probe: per cgroup seen at both ends, the difference, never
// negative (a process that ended takes its time with it); a cgroup seen at one end only is left
// out; what a server sends over the wire comes back the same.
func TestAppUse(t *testing.T) {
	t0 := time.Unix(100, 0)
	before := usage{cpu: cpustat.Sample{At: t0}, app: map[string]cpustat.Group{
		"/../b":    {ID: "b", CPU: time.Second, RunDelay: time.Second, Processes: 1},
		"/../a":    {ID: "a", CPU: 5 * time.Second, RunDelay: 0, Processes: 2},
		"/../gone": {ID: "gone", CPU: time.Second, Processes: 1},
	}}
	end := usage{cpu: cpustat.Sample{At: t0.Add(2 * time.Second)}, app: map[string]cpustat.Group{
		"/../b":   {ID: "b", CPU: 1400 * time.Millisecond, RunDelay: 2600 * time.Millisecond, Processes: 1},
		"/../a":   {ID: "a", CPU: 4 * time.Second, RunDelay: 10 * time.Millisecond, Processes: 1},
		"/../new": {ID: "new", CPU: time.Second, Processes: 1},
	}}
	want := []v1alpha1.AppContainer{
		{ContainerID: "a", Processes: 1, CPUUse: v1alpha1.CPUUse{WallSeconds: 2, CPUSeconds: 0, RunQueueWaitSeconds: 0.01}},
		{ContainerID: "b", Processes: 1, CPUUse: v1alpha1.CPUUse{WallSeconds: 2, CPUSeconds: 0.4, RunQueueWaitSeconds: 1.6}},
	}
	if diff := cmp.Diff(want, appUse(end, before)); diff != "" {
		t.Errorf("appUse (-want +got):\n%s", diff)
	}
	r := CPUReply{App: end.app}
	b, err := jsonRoundTrip(r)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(end.app, b.sample(t0).app); diff != "" {
		t.Errorf("the server's reply over the wire (-want +got):\n%s", diff)
	}
}

func jsonRoundTrip(r CPUReply) (CPUReply, error) {
	var out CPUReply
	b, err := json.Marshal(r)
	if err != nil {
		return out, err
	}
	return out, json.Unmarshal(b, &out)
}
