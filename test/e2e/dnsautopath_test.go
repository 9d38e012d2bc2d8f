package e2e

import (
	"bufio"
	"strconv"
	"strings"
	"testing"
	"time"
)

// With CoreDNS's autopath on, the first search candidate of example.com is answered with a CNAME
// to example.com.: glibc stops there. The reported count for the pod is the count a capture on
// the node sees for one of the pod's own lookups (2, where the resolver alone sends 8), and the
// report says that the server walked the search path.
func TestDNSAutopathCount(t *testing.T) {
	cs, ns := lab(t)
	labScript(t, "dns-autopath", "on")
	t.Cleanup(func() { labScript(t, "dns-autopath", "off") })

	capture, stdout := tcpdumpA1(t, "udp dst port 53")
	ip := looper(t, cs, ns, "--count", "0", "--every", "1500", "example.com")
	time.Sleep(5 * time.Second) // a few lookups, after CoreDNS has learnt the pod
	_ = capture.Process.Kill()
	var bursts []int // queries per lookup: the looper's lookups are 1.5 s apart
	var last float64
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 3 || !strings.HasPrefix(f[2], ip+".") {
			continue
		}
		at, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			continue
		}
		if len(bursts) == 0 || at-last > 0.5 {
			bursts = append(bursts, 0)
		}
		bursts[len(bursts)-1]++
		last = at
	}
	_ = capture.Wait()
	if len(bursts) < 3 {
		t.Fatalf("the capture saw %v queries per lookup: want 3 lookups or more", bursts)
	}
	wire := bursts[len(bursts)-2] // a whole lookup (the last may be cut)
	t.Logf("queries per lookup on the wire: %v", bursts)

	r := dnsJSON(t, "-n", ns, "deploy/looper", "example.com")
	v := r.Result.Names[0].Variants[0]
	t.Logf("reported: %d queries, answered by %s, server searched for %s, %d without", v.Queries, v.AnsweredBy, v.ServerSearch, v.ClientSideQueries)
	if v.Queries != wire || v.Queries != 2 || v.ServerSearch != "example.com." || v.ClientSideQueries != 8 || v.AnsweredBy != "example.com."+ns+".svc.cluster.local." {
		t.Errorf("as configured %+v; the wire shows %d queries per lookup: want 2, the server answering for example.com. (8 without)", v, wire)
	}
	out, stderr, err := netbench(t, "dns", "-n", ns, "deploy/looper", "example.com")
	if err != nil || !strings.Contains(out, "the server walked the search path itself (CoreDNS autopath)") {
		t.Errorf("the report does not say the server walked the search path (%v %s):\n%s", err, stderr, out)
	}
}
