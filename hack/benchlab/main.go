// Command benchlab compares what the plugin measures on the lab's pod paths with reference tools
// run in the very same pods' network namespaces: iperf3 (1 and 8 streams, with CPU), iputils ping,
// fortio's own HTTP runner (keep-alive at a fixed rate against the app's port, closed loop against
// an agent server) and curl on a new connection. Rounds alternate who goes first; it writes medians,
// ranges and ratios as markdown. Root and the lab up (make lab-up); see `make bench-lab`.
//
//	go run ./hack/benchlab -rounds 5 -out benchmarks/LAB-RESULTS.md
package main

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/benchinfo"
	"github.com/kubectl-netbench/kubectl-netbench/internal/reftools"
)

type config struct {
	plugin, agentBin, kubectl, out string
	agentImage                     string
	rounds                         int
	seconds                        float64
	newConns                       int
	only                           string
	holdCPUs                       bool
}

// What every plugin run and every reference share.
const (
	serverNode    = "lab-b1"                                     // the server pod's node
	appPort       = 8080                                         // the sample app's port in the server pod
	pluginProbes  = "rtt,udp,tcp,http-new-conn,http-max,tcp-crr" // the plugin's --probes (tcp-rr and udp-rr: rrArgs)
	pluginStreams = 8                                            // the plugin's --streams, and iperf3's -P beside it
	refProcs      = "1"                                          // GOMAXPROCS of the fortio references, as the agent's
	fortioModule  = "fortio.org/fortio"                          // the reference runner's module (its version is printed)
	resultsTarget = "bench-lab"                                  // the make target that runs this
	notesFile     = "benchmarks/notes/2026-12-01-lab-paths.md"   // one-off profiles and traces of these paths
)

func main() {
	reftools.MaybeRunReference()
	var c config
	flag.StringVar(&c.plugin, "plugin", "bin/kubectl-netbench", "the plugin to measure (built with VERSION=dev: the lab's agent image)")
	flag.StringVar(&c.agentBin, "agent", "bin/netbench-agent", "the agent binary, for the reference agent server the closed-loop and new-connection references use")
	flag.StringVar(&c.kubectl, "kubectl", ".cache/lab/bin/kubectl", "kubectl")
	flag.StringVar(&c.agentImage, "agent-image", ".cache/lab/images/agent.tar", "the agent image the lab's nodes imported (hack/lab/lab.sh images), whose size is reported")
	flag.StringVar(&c.out, "out", "", "also write the markdown to this file")
	flag.IntVar(&c.rounds, "rounds", 5, "alternating rounds per path")
	flag.StringVar(&c.only, "only", "", "measure only one section, paths, faults or dns (a check of that part; the results file is written from whole runs)")
	flag.Float64Var(&c.seconds, "seconds", 5, "duration of each throughput and HTTP run")
	flag.BoolVar(&c.holdCPUs, "hold-cpus", true, "keep the CPUs out of idle (reftools.HoldCPUs) while tcp-rr, udp-rr and sockperf run on each path (every other row free to idle), and compare them again free to idle in a last table on the same-node path")
	flag.IntVar(&c.newConns, "new-conns", 50, "curl requests (each on a new connection) per round")
	flag.Parse()
	if err := run(c); err != nil {
		fmt.Fprintln(os.Stderr, "bench-lab:", err)
		os.Exit(1)
	}
}

func run(c config) error {
	switch {
	case c.only != "" && c.only != "paths" && c.only != "faults" && c.only != "dns" && c.only != "idle":
		return fmt.Errorf("-only %q: want paths, faults, dns or idle", c.only)
	case c.only == "idle" && !c.holdCPUs:
		return errors.New("-only idle compares with the held tables: drop -hold-cpus=false")
	case c.only != "" && c.out != "":
		return errors.New("-only writes no results file: drop -out")
	}
	for _, tool := range []string{"iperf3", "ping", "curl", "nsenter", "sockperf", "irtt", "dnsperf"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("%s is needed (apt-get install iperf3 iputils-ping curl util-linux sockperf irtt dnsperf)", tool)
		}
	}
	e := env{
		command: benchinfo.Command("./hack/benchlab"),
		via:     benchinfo.ViaMake(resultsTarget),
		machine: benchinfo.ReadMachine(),
		versions: []string{runtime.Version(), benchinfo.FirstLine("iperf3", "--version"), benchinfo.FirstLine("ping", "-V"),
			benchinfo.FirstLine("curl", "--version"), benchinfo.FirstLine("sockperf", "--version"), benchinfo.FirstLine("irtt", "version"), reftools.DNSPerfVersion(), "fortio " + benchinfo.ModuleVersion(fortioModule) + " runner (fhttp) in hack/benchlab",
			benchinfo.Lines(c.plugin, "version")},
		image: readImage(c.agentImage),
	}
	l := &lab{kubectl: c.kubectl}
	defer l.teardown()
	start := time.Now()
	if err := l.setup(); err != nil {
		return err
	}
	e.nodes = l.nodes
	m, err := measure(c, l, &e)
	if err != nil {
		return err
	}
	e.date, e.took, e.loadEnd = time.Now(), time.Since(start), benchinfo.LoadAverage()
	md := render(c, e, m)
	fmt.Print(md)
	if c.out != "" {
		if err := os.WriteFile(c.out, []byte(md), 0o644); err != nil {
			return fmt.Errorf("writing the results: %w", err)
		}
	}
	return nil
}

// measured is every table's results.
type measured struct {
	paths             []pathResult
	faults, dns, idle pathResult
}

// measure runs the sections -only asks for: the paths (their request/response rows with the
// CPUs held, if c.holdCPUs), faults and DNS, then the same-node request/response rows with the
// CPUs free to idle.
func measure(c config, l *lab, e *env) (measured, error) {
	var m measured
	if c.holdCPUs && (c.only == "" || c.only == "paths" || c.only == "idle") {
		e.held = reftools.IdleSettings() // nothing is held for -only faults or dns
	}
	if err := measureSections(c, l, &m); err != nil {
		return m, err
	}
	if c.holdCPUs && (c.only == "" || c.only == "idle") {
		r, err := measureAsFound(c, l)
		if err != nil {
			return m, fmt.Errorf("%s: %w", asFound.name, err)
		}
		m.idle = r
	}
	return m, nil
}

// measureSections measures the paths, the faults and DNS, as -only asks.
func measureSections(c config, l *lab, m *measured) error {
	var err error
	for _, p := range paths {
		if c.only != "" && c.only != "paths" {
			break
		}
		r, err := measurePath(c, l, p)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		m.paths = append(m.paths, r)
	}
	if c.only == "" || c.only == "faults" {
		if m.faults, err = measureFaults(c, l); err != nil {
			return fmt.Errorf("%s: %w", faultPath.name, err)
		}
	}
	if c.only == "" || c.only == "dns" {
		if m.dns, err = measureDNS(c, l); err != nil {
			return fmt.Errorf("%s: %w", dnsSection.name, err)
		}
	}
	return nil
}

// pathSpec is one pod path: a client pod on a node, to the server pod (on lab-b1).
type pathSpec struct{ name, client, node string }

var paths = []pathSpec{
	{"same node (lab-b1 → " + serverNode + ")", "cli-same-node", "lab-b1"},
	{"same zone (lab-b2 → " + serverNode + ")", "cli-same-zone", "lab-b2"},
	{"cross zone (lab-a1 → " + serverNode + ")", "cli-cross-zone", "lab-a1"},
}

// refServer is an agent server of ours started in the server pod's network namespace, for the
// references that need one after the plugin's own agents are gone (closed loop, new connections).
type refServer struct {
	url, token string
	stop       func()
}

func startRefServer(agentBin string, in reftools.Runner, ip string) (*refServer, error) {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	cmd := in(agentBin, "serve", "--token", token, "--deadline", "2h")
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }
	var ready agent.Event
	if err := json.NewDecoder(bufio.NewReader(out)).Decode(&ready); err != nil || ready.Type != agent.EventReady {
		stop()
		return nil, fmt.Errorf("reference agent server not ready: %v %+v", err, ready)
	}
	return &refServer{url: fmt.Sprintf("http://%s:%d/", ip, ready.Port), token: token, stop: stop}, nil
}

// nsRunner runs commands in the network namespace and the cgroups of the pod with ip on node.
func nsRunner(node, ip string) (reftools.Runner, error) {
	files, _ := filepath.Glob("/run/netbench-lab/" + node + "/containerd/io.containerd.grpc.v1.cri/netns/*")
	for _, f := range files {
		out, err := exec.Command("nsenter", "--net="+f, "ip", "-o", "-4", "addr", "show").Output()
		if err == nil && strings.Contains(string(out), " "+ip+"/") {
			return reftools.InPod(f)
		}
	}
	return nil, fmt.Errorf("no network namespace on %s holds %s", node, ip)
}
