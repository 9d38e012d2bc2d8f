package e2e

import (
	"math"
	"os/exec"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/reftools"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// loadedOf is the loaded-rtt block of the path report.
func loadedOf(t *testing.T, r *v1alpha1.PathReport) *v1alpha1.LoadedResult {
	t.Helper()
	for _, p := range r.Probes {
		if p.Loaded != nil {
			return p.Loaded
		}
	}
	t.Fatalf("no loaded-rtt result in the report: %+v", r.Probes)
	return nil
}

// pingDuring runs iputils ping (every 10 ms, each reply time-stamped) in netns while run runs,
// and returns the replies' times in µs by their time stamps.
func pingDuring(t *testing.T, netns, ip string, run func()) reftools.Replies {
	t.Helper()
	in := func(name string, args ...string) *exec.Cmd {
		return exec.Command("nsenter", append([]string{"--net=" + netns, name}, args...)...)
	}
	replies, err := reftools.PingDuring(in, ip, 10*time.Millisecond, run)
	if err != nil {
		t.Fatal(err)
	}
	return replies
}

// On a 50 Mbit/s bottleneck at the client node's uplink, latency under load shows what the
// queue does: behind a FIFO a saturating transfer makes every other packet wait (bufferbloat),
// behind FQ-CoDel a sparse flow hardly waits — the FIFO's added p50 is at least ten times
// FQ-CoDel's (or than 200 µs, the idle p50's spread between runs on this lab, when FQ-CoDel's
// is smaller). Both loaded p50s (UDP and ICMP) are checked against iputils ping run alongside
// the same transfer, over the probe's own sampling window. Taking the loaded samples after
// the load (fault loaded-after-load) leaves the FIFO nothing to add.
func TestLatencyUnderLoadOnABottleneck(t *testing.T) {
	cs, ns := lab(t)
	createPod(t, cs, ns, pod("cli", "lab-a1", "netbench.lab/pause:1", nil, nil))
	createPod(t, cs, ns, pod("srv", "lab-a2", "netbench.lab/pause:1", nil, nil))
	cli := waitPod(t, cs, ns, "cli", 60*time.Second, "running", running)
	srv := waitPod(t, cs, ns, "srv", 60*time.Second, "running", running)
	netns := podNetns(t, "lab-a1", cli.Status.PodIP)
	t.Cleanup(func() { labScript(t, "bottleneck", "lab-a1", "off") })
	alone(t)
	added := map[string]float64{}
	for _, disc := range []string{"fifo", "fq_codel"} {
		labScript(t, "bottleneck", "lab-a1", "50mbit", disc, "1000000")
		var r *v1alpha1.PathReport
		replies := pingDuring(t, netns, srv.Status.PodIP, func() { r = pathJSON(t, "-n", ns, "cli", "srv", "--probes", "loaded-rtt") })
		l := loadedOf(t, r)
		if l.LoadedICMP == nil || l.Throughput == nil {
			t.Fatalf("%s: no ICMP under load (%s) or no load: %+v", disc, l.ICMPSkipped, l)
		}
		// The bottleneck is in place: the load gets most of its 50 Mbit/s (in TCP payload: the
		// rate counts IP bytes), far from the Gbit/s of the path without it; 5 % over it for the
		// user-space link's pacing. (Counted as the sink's total over the send time, what the
		// senders' buffers and the FIFO still held at the end made it 53-61 Mbit/s.)
		if mbps := l.Throughput.BitsPerSecondReceived / 1e6; mbps < 25 || mbps > 52.5 {
			t.Fatalf("%s: the load moved %.1f Mbit/s through a 50 Mbit/s bottleneck", disc, mbps)
		}
		ping, n := replies.Between(l.SampledFrom, l.SampledUntil)
		added[disc] = l.AddedP50Micros
		t.Logf("%s: udp idle p50 %.0f µs, loaded p50 %.0f µs (p99 %.0f), added %.0f µs; icmp loaded p50 %.0f µs; ping alongside %.0f µs (%d replies); load %.1f Mbit/s; %.0f RPM (idle %.0f)",
			disc, l.Idle.RTT.P50Micros, l.Loaded.RTT.P50Micros, l.Loaded.RTT.P99Micros, l.AddedP50Micros, l.LoadedICMP.RTT.P50Micros, ping, n, l.Throughput.BitsPerSecondReceived/1e6, l.RPM, l.IdleRPM)
		if n < 100 {
			t.Fatalf("%s: %d ping replies within the probe's window %s–%s", disc, n, l.SampledFrom, l.SampledUntil)
		}
		for name, got := range map[string]float64{"udp": l.Loaded.RTT.P50Micros, "icmp": l.LoadedICMP.RTT.P50Micros} {
			if bound := loadedBound(ping); math.Abs(got-ping) > bound {
				t.Errorf("%s: %s loaded p50 %.0f µs, ping's median over the same window %.0f µs: more than %.0f µs apart", disc, name, got, ping, bound)
			}
		}
	}
	if floor := math.Max(added["fq_codel"], 200); added["fifo"] < 10*floor {
		t.Errorf("the FIFO added %.0f µs to the p50 under load, FQ-CoDel %.0f µs: not ten times fq_codel's (floor 200 µs)", added["fifo"], added["fq_codel"])
	}
}

// loadedBound is how far a loaded p50 may be from ping's median over the same window: in two
// runs on the lab the UDP and ICMP loaded p50s were within −2.2 … +0.7 % of ping's behind the
// FIFO (about 19-21 ms) and +39 … +110 µs of it behind FQ-CoDel (about 0.3 ms).
func loadedBound(ping float64) float64 { return 0.10*ping + 300 }
