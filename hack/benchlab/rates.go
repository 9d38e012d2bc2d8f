package main

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/benchinfo"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd/path"
	"github.com/kubectl-netbench/kubectl-netbench/internal/reftools"
	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
)

// rrBytes is each request's and each response's size for tcp-rr, udp-rr and tcp-crr (the
// plugin's --request-size and --response-size) and sockperf's message size (-m) beside them:
// sockperf's header and the udp-rr datagram's header both fit in it.
const rrBytes = 64

// rateServers are the request/response references' servers in the server pod.
type rateServers struct{ stops []func() }

func startRateServers(in reftools.Runner) (*rateServers, error) {
	s := &rateServers{}
	for _, start := range []func() (func(), error){
		func() (func(), error) { return reftools.SockperfServer(in, true) },
		func() (func(), error) { return reftools.SockperfServer(in, false) },
		func() (func(), error) { return reftools.IrttServer(in) },
	} {
		stop, err := start()
		if err != nil {
			s.stop()
			return nil, err
		}
		s.stops = append(s.stops, stop)
	}
	return s, nil
}

func (s *rateServers) stop() {
	for _, stop := range s.stops {
		stop()
	}
}

// rateRefs is one round of tcp-crr's and the udp probe's references (tcp-rr's and udp-rr's
// run apart: rrRound).
type rateRefs struct {
	crrPerSecond float64
	crrP50       float64
	irtt         reftools.Irtt
}

// runRateReferences: fortio closed loop with keep-alive off against the app's port, as many
// clients as tcp-crr's; irtt at the udp probe's count, interval and datagram size.
func runRateReferences(c config, in reftools.Runner, srvIP string, p planned) (rateRefs, error) {
	var r rateRefs
	var err error
	app := reftools.HTTPRun{URL: appURL(srvIP), Seconds: c.seconds, Connections: p.crrClients}
	lat, qps, err := reftools.FortioCloseEach(in, app, refProcs)
	if err != nil {
		return r, err
	}
	r.crrPerSecond, r.crrP50 = qps, lat.P50Micros
	r.irtt, err = reftools.RunIrtt(in, srvIP, p.udpCount, p.udpInterval, path.UDPSize)
	return r, err
}

// sockperfPair runs sockperf's ping-pong over TCP, then over UDP, for c.seconds each.
func sockperfPair(c config, in reftools.Runner, srvIP string) (tcp, udp reftools.RR, err error) {
	if tcp, err = reftools.Sockperf(in, srvIP, true, rrBytes, c.seconds); err != nil {
		return tcp, udp, err
	}
	udp, err = reftools.Sockperf(in, srvIP, false, rrBytes, c.seconds)
	return tcp, udp, err
}

// recordRates adds tcp-crr's and the udp probe's rows of one round.
func (r *pathResult) recordRates(ours *report.PathReport, refs rateRefs) error {
	crr := find(ours.Probes, "tcp-crr")
	udp := find(ours.Probes, "udp")
	var errs []error
	if crr == nil || crr.Rate == nil || crr.Rate.Transactions == 0 {
		errs = append(errs, errors.New("the plugin's report has no tcp-crr result"))
	}
	if udp == nil || udp.RTT == nil {
		errs = append(errs, errors.New("the plugin's report has no udp result"))
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	r.add("tcp-crr cps", crr.Rate.PerSecond, refs.crrPerSecond)
	r.add("tcp-crr p50", crr.Rate.Latency.P50Micros, refs.crrP50)
	r.add("udp p50", udp.RTT.RTT.P50Micros, refs.irtt.P50Micros)
	return nil
}

// recordRR adds tcp-rr's and udp-rr's rows beside sockperf's TCP and UDP runs.
func (r *pathResult) recordRR(ours *report.PathReport, tcp, udp reftools.RR) error {
	var errs []error
	rate := func(name string) *agent.ProbeResult {
		p := find(ours.Probes, name)
		switch {
		case p == nil || p.Rate == nil || p.Rate.Transactions == 0:
			errs = append(errs, fmt.Errorf("the plugin's report has no %s result", name))
			return nil
		case p.Rate.Connections != 1:
			errs = append(errs, fmt.Errorf("%s ran %d clients: sockperf's ping-pong, beside it, has one", name, p.Rate.Connections))
			return nil
		}
		return p
	}
	tcpRR, udpRR := rate("tcp-rr"), rate("udp-rr")
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	r.add("tcp-rr tps", tcpRR.Rate.PerSecond, tcp.PerSecond)
	r.add("tcp-rr p50", tcpRR.Rate.Latency.P50Micros, tcp.P50Micros)
	r.add("udp-rr tps", udpRR.Rate.PerSecond, udp.PerSecond)
	r.add("udp-rr p50", udpRR.Rate.Latency.P50Micros, udp.P50Micros)
	r.addIdle("tcp-rr idle", tcpRR, tcp)
	r.addIdle("udp-rr idle", udpRR, udp)
	return nil
}

// addIdle adds the machine's CPU idle entries per thousand transactions over our probe (as its
// client agent counted them) and per thousand answers over sockperf's run, where both were counted.
func (r *pathResult) addIdle(key string, ours *agent.ProbeResult, ref reftools.RR) {
	perAnswer, ok := ref.IdlePerAnswer()
	if v := ours.Validity; ok && v != nil && v.Client != nil && v.Client.NodeIdleEntries != nil {
		r.add(key, 1000*float64(*v.Client.NodeIdleEntries)/float64(ours.Rate.Transactions), 1000*perAnswer)
	}
}

// rrRound alternates the plugin's tcp-rr and udp-rr alone (rrArgs) with sockperf's ping-pong
// over TCP and UDP from the client pod, the CPUs held out of idle meanwhile if hold.
func rrRound(c config, client string, inClient reftools.Runner, srvIP string, round int, hold bool) (ours *report.PathReport, tcp, udp reftools.RR, err error) {
	if hold {
		release, err := reftools.HoldCPUs()
		if err != nil {
			return nil, tcp, udp, err
		}
		defer release()
	}
	ourTurn := func() (err error) { ours, err = runPath(c, rrArgs(c, client)); return err }
	refTurn := func() (err error) { tcp, udp, err = sockperfPair(c, inClient, srvIP); return err }
	err = inTurn(round, ourTurn, refTurn)
	return ours, tcp, udp, err
}

// fromRates copies the udp probe's count and interval and tcp-crr's clients from the plugin's run.
func (p *planned) fromRates(r *report.PathReport) {
	if udp := find(r.Probes, "udp"); udp != nil && udp.RTT != nil {
		p.udpCount, p.udpInterval = udp.RTT.RequestedCount, time.Duration(udp.RTT.IntervalMillis*float64(time.Millisecond))
	}
	if crr := find(r.Probes, "tcp-crr"); crr != nil && crr.Rate != nil {
		p.crrClients = crr.Rate.Connections
	}
}

// asFound is the same-node path's request/response comparison with the CPUs free to idle, as
// the paths' tables measure every other row: how much of each tool's figure was waking an
// idle CPU.
var asFound = pathSpec{"same node (lab-b1 → " + serverNode + "), CPUs free to idle", "cli-same-node", "lab-b1"}

// asFoundRows are its rows: the held tables' request/response rows, shown, not judged.
var asFoundRows = func() []rowSpec {
	var rows []rowSpec
	for _, s := range rowSpecs {
		if strings.HasPrefix(s.key, "tcp-rr ") || strings.HasPrefix(s.key, "udp-rr ") {
			s.goal = benchinfo.Info
			rows = append(rows, s)
		}
	}
	return rows
}()

// rrArgs is the plugin's command line for tcp-rr and udp-rr alone.
func rrArgs(c config, client string) []string {
	return []string{"path", "-n", namespace, client, "srv", "--probes", "tcp-rr,udp-rr", "--request-size", strconv.Itoa(rrBytes),
		"--response-size", strconv.Itoa(rrBytes), "--duration", fmt.Sprintf("%gs", c.seconds), "-o", "json"}
}

// measureAsFound alternates tcp-rr and udp-rr with sockperf's ping-pong over TCP and UDP.
func measureAsFound(c config, l *lab) (pathResult, error) {
	res := pathResult{spec: asFound, figures: map[string]*figure{}, cpu: map[string][]float64{}, rss: map[string][]float64{}}
	inClient, err := nsRunner(asFound.node, l.ips[asFound.client])
	if err != nil {
		return res, err
	}
	inServer, err := nsRunner(serverNode, l.ips["srv"])
	if err != nil {
		return res, err
	}
	srv, err := startRateServers(inServer)
	if err != nil {
		return res, err
	}
	defer srv.stop()
	for round := 0; round < c.rounds; round++ {
		fmt.Fprintf(os.Stderr, "%s: round %d/%d\n", asFound.name, round+1, c.rounds)
		ours, tcp, udp, err := rrRound(c, asFound.client, inClient, l.ips["srv"], round, false)
		if err != nil {
			return res, err
		}
		if err := res.recordRR(ours, tcp, udp); err != nil {
			return res, err
		}
	}
	return res, nil
}
