package e2e

import (
	"encoding/json"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// The outside host's gRPC over TLS (hack/lab/lib/outside.sh): the health service alone.
const outsideGRPCS = "50443"

// With the WAN delay at 1 ms each way, path from a pod on lab-a1 to grpcs://outside.lab:50443
// times the TCP connect as iputils ping times the path (within pingBound), and the health check's
// answer on new and on reused connections as gRPC's C core does (Debian's python3-grpcio,
// testdata/health_check_client.py, run in the same pod's network namespace before, between and
// after three runs of ours; its new connections have no lookup, so ours are taken less their
// lookup's p50). Go's client answered below the C core's in every run on the lab (reused 5-18 %,
// new 3-21 % below its medians; the median of our three 10-12 % below the median of its four),
// never above: ours may read up to 5 % above the median of its medians. Below, no figure may
// read less than what it is made of: a reused call one round trip of ping's, a new connection
// our connect and TLS handshake and two round trips more (HTTP/2's settings, the call).
func TestPathToAnOutsideGRPCServer(t *testing.T) {
	ns, netns := outsideClient(t, "1ms")
	dst := "grpcs://" + outsideName + ":" + outsideGRPCS
	alone(t)
	pings := []float64{pingMedian(t, netns, outsideIP, 20, "0.05")}
	refs := []map[string]float64{healthCheckClient(t, netns)}
	ours := map[string][]float64{}
	var e *v1alpha1.EgressResult
	for range 3 {
		e = egressResult(t, pathJSON(t, "-n", ns, "app", dst, "--ca-file", labCA, "--requests", "20"))
		if e.FirstByteNew == nil || e.FirstByteReused == nil || e.DNS == nil || e.TLS == nil {
			t.Fatalf("result %+v: want the lookup, the TLS handshake and the answers on new and reused connections", e)
		}
		ours["connect"] = append(ours["connect"], e.Connect.P50Micros)
		ours["tls"] = append(ours["tls"], e.TLS.Latency.P50Micros)
		ours["new"] = append(ours["new"], e.FirstByteNew.P50Micros-e.DNS.P50Micros)
		ours["reused"] = append(ours["reused"], e.FirstByteReused.P50Micros)
		pings = append(pings, pingMedian(t, netns, outsideIP, 20, "0.05"))
		refs = append(refs, healthCheckClient(t, netns))
	}
	rtt := slices.Min(pings)
	lo, hi := rtt, slices.Max(pings)
	connect := median(ours["connect"])
	t.Logf("connect p50 %.0f µs (median of %s), ping's medians %s µs", connect, microsList(ours["connect"]), microsList(pings))
	if connect < lo-pingBound(lo) || connect > hi+pingBound(hi) {
		t.Errorf("connect p50 %.0f µs: more than 5 %% + 150 µs outside ping's medians %.0f-%.0f µs on the same path", connect, lo, hi)
	}
	handshakes := connect + median(ours["tls"])
	for _, c := range []struct {
		figure      string
		before      float64 // what the answer comes after, besides its round trips
		trips       float64
		beforeNamed string
	}{{"reused", 0, 1, ""}, {"new", handshakes, 2, "our connect and TLS p50s and "}} {
		var ref []float64
		for _, r := range refs {
			ref = append(ref, r[c.figure])
		}
		got, floor, ceiling := median(ours[c.figure]), c.before+c.trips*rtt-pingBound(c.trips*rtt), median(ref)*1.05
		t.Logf("answer on a %s connection: path p50 %.0f µs (median of %s), the C core's medians %s µs, ping %.0f µs", c.figure, got, microsList(ours[c.figure]), microsList(ref), rtt)
		if got < floor || got > ceiling {
			t.Errorf("answer on a %s connection: path p50 %.0f µs, want from %.0f µs (%s%.0f round trips of ping's %.0f µs, less 5 %% + 150 µs) to %.0f µs (5 %% above the median of the C core's medians %s µs)",
				c.figure, got, floor, c.beforeNamed, c.trips, rtt, ceiling, microsList(ref))
		}
	}
	if e.GRPCStatus != "SERVING" || e.Protocol != "gRPC" || e.RemoteAddress != outsideIP+":"+outsideGRPCS || e.FirstByteReused.Count != 20 || e.NotReused != "" {
		t.Errorf("result %+v: want SERVING from %s:%s, 20 calls on one reused connection", e, outsideIP, outsideGRPCS)
	}
	if !e.TLS.Verified || e.TLS.Version != "TLS 1.3" || len(e.TLS.Chain) == 0 || !strings.Contains(e.TLS.Chain[0], "CN="+outsideName) {
		t.Errorf("TLS %+v: want TLS 1.3 verified against the lab's CA, the chain starting at %s", e.TLS, outsideName)
	}
}

// healthCheckClient runs the reference gRPC client in the network namespace netns against the
// outside host's gRPC over TLS: its medians in µs ("new", "reused") over 20 calls each.
func healthCheckClient(t *testing.T, netns string) map[string]float64 {
	t.Helper()
	cmd := exec.Command("nsenter", "--net="+netns, "/usr/bin/python3", "testdata/health_check_client.py", outsideIP+":"+outsideGRPCS, outsideName, labCA, "20")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the reference gRPC client (python3-grpcio): %v\n%s%s", err, out, stderr.String())
	}
	var m map[string]float64
	if err := json.Unmarshal(out, &m); err != nil || m["new"] <= 0 || m["reused"] <= 0 {
		t.Fatalf("the reference gRPC client printed %q (%v)", out, err)
	}
	return m
}
