package e2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// appRateBits is the application traffic TestPathShowsCompetingTraffic makes: iperf3 paced at
// 100 Mbit/s from the client pod's network namespace to the peer pod (on the same node, so none
// of it crosses the server's pod).
const appRateBits = 100e6

// An application's own traffic on the pod's interface during the probes. On quiet pods every
// probe's traffic besides the agents' is under 1 Mbit/s, on both pods — the TCP transfer's
// gigabytes included, so the agents' own bytes are subtracted to a part in ten thousand, and the
// UDP probe's 1000 datagrams a second, which the agents count themselves. Then with iperf3 sending
// 100 Mbit/s from the client pod's network namespace (the application, as its interface sees
// it), each probe's client-side traffic is iperf3's rate within 15 %, the server side still quiet,
// and the human report names it under "competing traffic".
func TestPathShowsCompetingTraffic(t *testing.T) {
	cs, ns := lab(t)
	workloads(t, cs, ns)
	args := []string{"-n", ns, "deploy/client", "deploy/web", "--probes", "rtt,udp,http,tcp", "--duration", "2s"}
	quiet := pathJSON(t, args...)
	for _, r := range quiet.Probes {
		if r.Kind != v1alpha1.ProbeICMP && serverTraffic(r) == nil {
			t.Errorf("%s: no traffic accounting of the server's pod: %s", r.Name, validityJSON(r.Validity))
		}
		for side, tr := range map[string]*v1alpha1.Traffic{"client": clientTraffic(r), "server": serverTraffic(r)} {
			if tr != nil && tr.OtherBitsPerSecond >= 1e6 {
				t.Errorf("%s on quiet pods: %.2f Mbit/s besides the agents' on the %s pod's interface: %s", r.Name, tr.OtherBitsPerSecond/1e6, side, validityJSON(r.Validity))
			}
		}
	}

	peerIP := podIP(t, cs, ns, "app=peer")
	app := startIperf3(t, podNetns(t, "lab-a1", podIP(t, cs, ns, "app=client")), podNetns(t, "lab-a1", peerIP), peerIP)
	time.Sleep(2 * time.Second) // past iperf3's start
	out, stderr, err := netbench(t, append([]string{"path", "-o", "json"}, args...)...)
	rate := app.stop(t)
	if err != nil {
		t.Fatalf("path beside the app's traffic: %v\n%s", err, stderr)
	}
	busy := decodeReport(t, out)
	for _, r := range busy.Probes {
		c, s := clientTraffic(r), serverTraffic(r)
		if c == nil {
			t.Errorf("%s: no traffic accounting of the client's pod: %s", r.Name, validityJSON(r.Validity))
			continue
		}
		t.Logf("%s: the client pod's interface carried %.1f Mbit/s besides the agents' over %.2f s (iperf3: %.1f Mbit/s); agent %d bytes, interface %d bytes in %d packets",
			r.Name, c.OtherBitsPerSecond/1e6, c.WallSeconds, rate/1e6, c.AgentBytes, c.InterfaceBytes, c.InterfacePackets)
		if math.Abs(c.OtherBitsPerSecond-rate) > 0.15*rate {
			t.Errorf("%s: %.1f Mbit/s of competing traffic on the client's pod, want iperf3's %.1f within 15 %%", r.Name, c.OtherBitsPerSecond/1e6, rate/1e6)
		}
		if r.Throughput != nil && s != nil {
			var retrans int64
			for _, st := range r.Throughput.PerStream {
				retrans += st.Retransmits
			}
			t.Logf("%s: %d segments retransmitted; server side: %.2f Mbit/s besides the agents'", r.Name, retrans, s.OtherBitsPerSecond/1e6)
		}
		if s != nil && s.OtherBitsPerSecond >= 1e6 {
			t.Errorf("%s: %.2f Mbit/s besides the agents' on the server's pod, which the app's traffic does not cross", r.Name, s.OtherBitsPerSecond/1e6)
		}
	}
	human := humanReport(t, out)
	if !strings.Contains(human, "competing traffic") || !strings.Contains(human, "the client pod's interfaces carried") {
		t.Errorf("the human report does not name the competing traffic:\n%s", human)
	}
}

func clientTraffic(r *v1alpha1.ProbeResult) *v1alpha1.Traffic {
	if r.Validity == nil {
		return nil
	}
	return r.Validity.ClientTraffic
}

func serverTraffic(r *v1alpha1.ProbeResult) *v1alpha1.Traffic {
	if r.Validity == nil {
		return nil
	}
	return r.Validity.ServerTraffic
}

// iperf3Run is an iperf3 client paced at appRateBits, and its server, in two pods' network
// namespaces.
type iperf3Run struct {
	server, client *exec.Cmd
	out            bytes.Buffer
}

func startIperf3(t *testing.T, clientNetns, serverNetns, serverIP string) *iperf3Run {
	t.Helper()
	r := &iperf3Run{}
	r.server = exec.Command("nsenter", "--net="+serverNetns, "iperf3", "-s", "-1", "-p", "5301")
	if err := r.server.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.server.Process.Kill(); r.server.Wait() }) //nolint:errcheck
	time.Sleep(300 * time.Millisecond)
	r.client = exec.Command("nsenter", "--net="+clientNetns, "iperf3", "-c", serverIP, "-p", "5301",
		"-b", fmt.Sprint(int64(appRateBits)), "-t", "120", "-i", "1", "-J")
	r.client.Stdout = &r.out
	if err := r.client.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.client.Process.Kill(); r.client.Wait() }) //nolint:errcheck
	return r
}

// stop interrupts the client (iperf3 then reports what it sent) and returns its mean rate over
// its whole intervals after the first, failing when a second fell below 90 % of the pace: then
// the comparison would not hold over every probe's window.
func (r *iperf3Run) stop(t *testing.T) float64 {
	t.Helper()
	r.client.Process.Signal(syscall.SIGINT) //nolint:errcheck
	r.client.Wait()                         //nolint:errcheck
	var res struct {
		Intervals []struct {
			Sum struct {
				Seconds       float64 `json:"seconds"`
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum"`
		} `json:"intervals"`
	}
	if err := json.Unmarshal(r.out.Bytes(), &res); err != nil {
		t.Fatalf("iperf3's report: %v\n%s", err, r.out.String())
	}
	var sum float64
	n := 0
	for i, iv := range res.Intervals {
		if i == 0 || iv.Sum.Seconds < 0.99 {
			continue // the start, and the interrupted last
		}
		if iv.Sum.BitsPerSecond < 0.9*appRateBits {
			t.Fatalf("iperf3 sent %.1f Mbit/s in its second %d, below its pace of %.0f: %s", iv.Sum.BitsPerSecond/1e6, i+1, appRateBits/1e6, r.out.String())
		}
		sum += iv.Sum.BitsPerSecond
		n++
	}
	if n == 0 {
		t.Fatalf("iperf3 reported no whole second: %s", r.out.String())
	}
	return sum / float64(n)
}
