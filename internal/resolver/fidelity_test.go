package resolver

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/miekg/dns"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// The test binary doubles as the fidelity test's DNS server and Go client.
const roleEnv = "NETBENCH_FIDELITY_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "server":
		serveDNS()
		return
	case "go-client":
		goClient(os.Args[1:])
		return
	}
	os.Exit(m.Run())
}

// Answer policy of the test server, by the first label's prefix: ok- names exist (A and AAAA),
// v4- and v6- have an address of one family alone (NODATA for the other type: a single-stack
// Service), nd- exist without addresses (NODATA), nx- do not exist, sf- fail (SERVFAIL), and
// ext- names exist only when asked as is, not under a search domain (the usual external name).
const searchZone = "search.test"

func policy(qname, qtype string) Rcode {
	mode, _, _ := strings.Cut(qname, "-")
	switch mode {
	case "ok":
		return NoError
	case "v4", "v6":
		if (mode == "v4") == (qtype == TypeA) {
			return NoError
		}
		return NoData
	case "nd":
		return NoData
	case "nx":
		return NXDomain
	case "sf":
		return ServFail
	case "ext":
		if strings.HasSuffix(qname, "."+searchZone+".") {
			return NXDomain
		}
		return NoError
	}
	return NXDomain
}

type logLine struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// serveDNS answers on 127.0.0.1:53 (UDP and TCP) by policy and prints every query it receives.
func serveDNS() {
	var mu sync.Mutex
	enc := json.NewEncoder(os.Stdout)
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		if len(r.Question) != 1 {
			return
		}
		q := r.Question[0]
		qname := strings.ToLower(q.Name)
		mu.Lock()
		_ = enc.Encode(logLine{Name: qname, Type: dns.TypeToString[q.Qtype]})
		mu.Unlock()
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative, m.RecursionAvailable = true, true
		soa, _ := dns.NewRR(searchZone + ". 60 IN SOA ns.test. host.test. 1 60 60 60 60")
		switch policy(qname, dns.TypeToString[q.Qtype]) {
		case NoError:
			switch q.Qtype {
			case dns.TypeA:
				m.Answer = append(m.Answer, &dns.A{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}, A: net.IPv4(192, 0, 2, 1)})
			case dns.TypeAAAA:
				m.Answer = append(m.Answer, &dns.AAAA{Hdr: dns.RR_Header{Name: q.Name, Rrtype: dns.TypeAAAA, Class: dns.ClassINET, Ttl: 60}, AAAA: net.ParseIP("2001:db8::1")})
			default:
				m.Ns = append(m.Ns, soa)
			}
		case NoData:
			m.Ns = append(m.Ns, soa)
		case NXDomain:
			m.Rcode = dns.RcodeNameError
			m.Ns = append(m.Ns, soa)
		case ServFail:
			m.Rcode = dns.RcodeServerFailure
		}
		_ = w.WriteMsg(m)
	})
	errs := make(chan error, 2)
	for _, netw := range []string{"udp", "tcp"} {
		s := &dns.Server{Addr: "127.0.0.1:53", Net: netw, Handler: h}
		go func() { errs <- s.ListenAndServe() }()
	}
	fmt.Fprintln(os.Stderr, <-errs)
	os.Exit(1)
}

// goClient looks names up with Go's pure resolver, as `resolver` does with the C libraries
// (--family 4 or 6 first: one family, Go's ip4 or ip6).
func goClient(args []string) {
	network := "ip"
	if len(args) > 1 && args[0] == "--family" {
		network, args = "ip"+args[1], args[2:]
	}
	for _, n := range args {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		addrs, err := net.DefaultResolver.LookupIP(ctx, network, n)
		cancel()
		if err != nil {
			fmt.Printf("lookup %s error %v\n", n, err)
		} else {
			fmt.Printf("lookup %s ok %v\n", n, addrs)
		}
	}
}

type client struct {
	kind Kind
	argv []string
	env  []string
}

// buildClients compiles the real C-library clients; a resolver whose compiler is missing is
// reported and left out.
func buildClients(t *testing.T) []client {
	t.Helper()
	dir := t.TempDir()
	src := "../../test/apps/resolver/resolver.c"
	self, _ := os.Executable()
	clients := []client{{kind: Go, argv: []string{self}, env: []string{roleEnv + "=go-client", "GODEBUG=netdns=go"}}}
	for _, c := range []struct {
		kind Kind
		cc   []string
	}{{Glibc, []string{"gcc", "-O2"}}, {Musl, []string{"musl-gcc", "-static", "-O2"}}} {
		out := filepath.Join(dir, string(c.kind))
		if b, err := exec.Command(c.cc[0], append(c.cc[1:], "-o", out, src)...).CombinedOutput(); err != nil {
			t.Errorf("%s client: %s not available (%v: %s): apt-get install gcc musl-tools", c.kind, c.cc[0], err, b)
			continue
		}
		clients = append(clients, client{kind: c.kind, argv: []string{out}})
	}
	return clients
}

type netns struct {
	name   string
	server *exec.Cmd
	mu     sync.Mutex
	log    []logLine
}

func newNetns(t *testing.T, name string) *netns {
	t.Helper()
	_ = exec.Command("ip", "netns", "delete", name).Run()
	for _, args := range [][]string{{"netns", "add", name}, {"-n", name, "link", "set", "lo", "up"}} {
		if b, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %v: %v %s", args, err, b)
		}
	}
	if err := os.MkdirAll("/etc/netns/"+name, 0o755); err != nil {
		t.Fatal(err)
	}
	n := &netns{name: name}
	t.Cleanup(func() {
		if n.server != nil {
			_ = n.server.Process.Kill()
			_ = n.server.Wait()
		}
		_ = exec.Command("ip", "netns", "delete", name).Run()
		_ = os.RemoveAll("/etc/netns/" + name)
	})
	self, _ := os.Executable()
	n.server = exec.Command("ip", "netns", "exec", name, self)
	n.server.Env = append(os.Environ(), roleEnv+"=server")
	n.server.Stderr = os.Stderr
	out, err := n.server.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.server.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			var l logLine
			if json.Unmarshal(sc.Bytes(), &l) == nil {
				n.mu.Lock()
				n.log = append(n.log, l)
				n.mu.Unlock()
			}
		}
	}()
	// Wait until the server answers.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if exec.Command("ip", "netns", "exec", name, "bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/53").Run() == nil {
			return n
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("test DNS server in %s did not start", name)
	return nil
}

// queriesFor returns the logged queries whose first label is label, grouped into steps.
func (n *netns) stepsFor(label string) []Step {
	n.mu.Lock()
	defer n.mu.Unlock()
	var steps []Step
	for _, l := range n.log {
		if first, _, _ := strings.Cut(l.Name, "."); first != label {
			continue
		}
		if len(steps) == 0 || steps[len(steps)-1].Name != l.Name {
			steps = append(steps, Step{Name: l.Name, Queries: map[string]int{}, Rcodes: map[string]Rcode{}})
		}
		s := &steps[len(steps)-1]
		s.Queries[l.Type]++
		s.Rcodes[l.Type] = policy(l.Name, l.Type)
	}
	return steps
}

// The model predicts exactly what the real glibc, musl and Go resolvers send: the candidate
// names, in order, the query types and their counts (retries included), and where the walk
// stops — over ndots × search lists × names × trailing dot × answers.
func TestModelMatchesRealResolvers(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("fidelity test skipped: needs root for network namespaces")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("fidelity test skipped: needs iproute2")
	}
	clients := buildClients(t)
	searchLists := [][]string{nil,
		{"s1." + searchZone, "s2." + searchZone, "s3." + searchZone},
		{"s1." + searchZone, "s2." + searchZone, "s3." + searchZone, "s4." + searchZone}}
	modes := []string{"ok", "v4", "v6", "nd", "nx", "sf", "ext"}
	families := []string{LookupBoth, LookupIPv4, LookupIPv6} // what the application asks for

	var total, mismatches int
	byKind := map[string]int{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns := newNetns(t, "nbfid-"+string(cl.kind))
			hostname, _ := os.Hostname()
			cfgID := 0
			for _, ndots := range []int{1, 2, 5} {
				for _, search := range searchLists {
					for _, family := range families {
						cfgID++
						cfg := Config{Nameservers: []string{"127.0.0.1"}, Search: search, Ndots: ndots, Attempts: 2, TimeoutSeconds: 1, LookupFamily: family}
						if _, dom, ok := strings.Cut(hostname, "."); ok && len(search) == 0 && cl.kind != Musl {
							cfg.LocalDomain = dom
						}
						if err := os.WriteFile("/etc/netns/"+ns.name+"/resolv.conf", []byte(cfg.String()), 0o644); err != nil {
							t.Error(err)
							return
						}
						type lookup struct{ name, label string }
						var lookups []lookup
						for _, mode := range modes {
							for dots := 0; dots <= 4; dots++ {
								for _, trailing := range []bool{false, true} {
									label := fmt.Sprintf("%s-%d-%d", mode, cfgID, dots)
									if trailing {
										label += "t"
									}
									name := label + strings.Repeat(".x", dots)
									if trailing {
										name += "."
									}
									lookups = append(lookups, lookup{name, label})
								}
							}
						}
						// One process per answer mode, run together, and one per SERVFAIL lookup:
						// musl waits out its timeout on each of those, the others are quick.
						var cwg sync.WaitGroup
						for i, n := 0, 0; i < len(lookups); i += n {
							n = 10
							if strings.HasPrefix(lookups[i].label, "sf-") {
								n = 1
							}
							var names []string
							for _, l := range lookups[i : i+n] {
								names = append(names, l.name)
							}
							cwg.Add(1)
							go func() {
								defer cwg.Done()
								if family != LookupBoth {
									names = append([]string{"--family", family}, names...)
								}
								cmd := exec.Command("ip", append([]string{"netns", "exec", ns.name}, append(cl.argv, append([]string{"--count", "1"}, names...)...)...)...)
								if cl.kind == Go {
									cmd = exec.Command("ip", append([]string{"netns", "exec", ns.name}, append(cl.argv, names...)...)...)
								}
								cmd.Env = append(os.Environ(), cl.env...)
								if out, err := cmd.CombinedOutput(); err != nil {
									t.Errorf("%s client: %v: %s", cl.kind, err, out)
								}
							}()
						}
						cwg.Wait()
						time.Sleep(50 * time.Millisecond) // the server's last log lines
						for _, l := range lookups {
							want := comparable(cl.kind, Simulate(cl.kind, cfg, l.name, policy).Steps)
							got := comparable(cl.kind, ns.stepsFor(l.label))
							mu.Lock()
							total++
							if diff := cmp.Diff(want, got); diff != "" {
								mismatches++
								byKind[string(cl.kind)+"/"+strings.SplitN(l.label, "-", 2)[0]]++
								if mismatches <= 10 {
									t.Errorf("%s, ndots:%d, search %d domains, %s, lookup %q (-model +wire):\n%s", cl.kind, ndots, len(search), v1alpha1.LookupFamilyLabel(family), l.name, diff)
								}
							}
							mu.Unlock()
						}
					}
				}
			}
		}()
	}
	wg.Wait()
	kinds := make([]string, 0, len(clients))
	for _, c := range clients {
		kinds = append(kinds, string(c.kind))
	}
	sort.Strings(kinds)
	t.Logf("matrix: %d lookups (%v × ndots 1,2,5 × 0/3/4 search domains × lookups of A and AAAA, A only, AAAA only × 0–4 dots × trailing dot or not × %v); %d differ from the model %v",
		total, kinds, modes, mismatches, byKind)
}

// comparable merges the per-type counts of musl's SERVFAIL retries: musl resends whichever query
// failed first from a budget the two share, so only their sum is fixed.
func comparable(k Kind, steps []Step) []Step {
	if k != Musl {
		return steps
	}
	out := make([]Step, len(steps))
	for i, s := range steps {
		out[i] = s
		if s.Rcodes[TypeA] == ServFail && s.Rcodes[TypeAAAA] == ServFail {
			out[i].Queries = map[string]int{TypeA + "+" + TypeAAAA: s.Queries[TypeA] + s.Queries[TypeAAAA]}
		}
	}
	return out
}
