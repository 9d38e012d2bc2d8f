package agent

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cpustat"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// The other containers' use over a probe in the schema's form: seconds to the millisecond, the
// scans' window as each one's wall time, in the order of the IDs; nothing without a window.
func TestAppUse(t *testing.T) {
	groups := map[string]cpustat.Group{
		"b": {ID: "b", CPU: 400 * time.Millisecond, RunDelay: 1600 * time.Millisecond, Processes: 1},
		"a": {ID: "a", CPU: 1234567 * time.Nanosecond, Processes: 2},
	}
	want := []v1alpha1.AppContainer{
		{ContainerID: "a", Processes: 2, CPUUse: v1alpha1.CPUUse{WallSeconds: 2.05, CPUSeconds: 0.001}},
		{ContainerID: "b", Processes: 1, CPUUse: v1alpha1.CPUUse{WallSeconds: 2.05, CPUSeconds: 0.4, RunQueueWaitSeconds: 1.6}},
	}
	if diff := cmp.Diff(want, appUse(appResult{groups: groups, window: 2050 * time.Millisecond})); diff != "" {
		t.Errorf("appUse (-want +got):\n%s", diff)
	}
	if got := appUse(appResult{groups: groups}); got != nil {
		t.Errorf("no window: %v", got)
	}
}

// The server's replies around a probe: only the last carries the containers' use and its
// window, and says how long before it the CPU was sampled, which the client takes off the
// reply's arrival (at most the call's own time); a reply without IDs scans nothing; the IDs a
// query names are bounded and must look like a runtime's; what crosses the wire comes back the
// same.
func TestServerAppReplies(t *testing.T) {
	var scans appScans
	ids := []string{"not-running-here"}
	if first := scans.reply(appFirst, ids, "p1"); first.App != nil || first.SampledAgoNanos != 0 || scans.first["p1"].scan == nil {
		t.Fatalf("first reply %+v, baseline %v", first, scans.first)
	}
	scans.reply(appFirst, ids, "p2") // another probe's
	if late := scans.reply(appLast, ids, "p0"); !late.AppCut || scans.first["p1"].scan == nil || scans.first["p2"].scan == nil {
		t.Errorf("a last call of another probe took a baseline: %+v, baselines %v", late, scans.first)
	}
	last := scans.reply(appLast, ids, "p1")
	if last.SampledAgoNanos <= 0 || scans.first["p1"].scan != nil || last.AppCut || last.AppWindowNanos <= 0 {
		t.Errorf("last reply %+v, baselines left %v", last, scans.first)
	}
	for _, plain := range []CPUReply{scans.reply(appLast, nil, "p2"), scans.reply(appLast, ids, "")} {
		if plain.App != nil || plain.SampledAgoNanos != 0 || plain.AppWindowNanos != 0 || plain.AppCut {
			t.Errorf("a reply without IDs or a key: %+v", plain)
		}
	}
	if cut := scans.reply(appLast, ids, "p1"); !cut.AppCut {
		t.Errorf("a last scan without a first compared: %+v", cut)
	}
	for _, k := range []string{"k1", "k2", "k3", "k4", "k5"} { // p2 is the oldest
		scans.reply(appFirst, ids, k)
	}
	if _, ok := scans.first["p2"]; ok || len(scans.first) != maxAppProbes || scans.first["k5"].scan == nil {
		t.Errorf("past %d baselines: %v", maxAppProbes, scans.first)
	}
	many := strings.Repeat("a,", 100) + "\x1b[2J,b"
	if got := appIDs(many); len(got) != maxAppIDs || got[0] != "a" {
		t.Errorf("appIDs of a hostile query: %d IDs, %q", len(got), got[:min(3, len(got))])
	}
	if got := appIDs(url.Values{"ids": {"x1,\x1b[2J,y.2"}}.Get("ids")); !cmp.Equal(got, []string{"x1", "y.2"}) {
		t.Errorf("appIDs = %q", got)
	}
	now := time.Unix(100, 0)
	r := CPUReply{App: map[string]cpustat.Group{"x": {ID: "x", CPU: 5, RunDelay: 6, Processes: 1}}, AppWindowNanos: 7, SampledAgoNanos: int64(30 * time.Millisecond)}
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back CPUReply
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	u := back.sample(now, time.Second)
	if diff := cmp.Diff(r.App, u.app.groups); diff != "" || u.app.window != 7 || !u.cpu.At.Equal(now.Add(-30*time.Millisecond)) {
		t.Errorf("over the wire (-want +got):\n%s; window %v, sampled at %v", diff, u.app.window, u.cpu.At)
	}
	if u := back.sample(now, 5*time.Millisecond); !u.cpu.At.Equal(now.Add(-5 * time.Millisecond)) {
		t.Errorf("sampled before the call was made: at %v", u.cpu.At)
	}
}
