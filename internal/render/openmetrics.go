package render

import (
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// family is one OpenMetrics metric family a figure maps to.
type family struct {
	name, unit, help string
	// scale converts the figure's unit to the family's base unit.
	scale float64
}

var (
	latencyFamily    = family{"netbench_latency_seconds", "seconds", "Latency percentile of a probe (quantile label), from the run's samples.", 1e-6}
	addedFamily      = family{"netbench_added_latency_seconds", "seconds", "What a step adds to a latency: a new connection per request over keep-alive, a Service's ClusterIP over the pod IP.", 1e-6}
	jitterFamily     = family{"netbench_jitter_seconds", "seconds", "RFC 3550 interarrival jitter of successive round trips.", 1e-6}
	lossFamily       = family{"netbench_loss_ratio", "ratio", "Share of packets sent without an answer.", 1e-2}
	throughputFamily = family{"netbench_throughput_bits_per_second", "bits_per_second", "TCP payload received per second.", 1e9}
	rateFamily       = family{"netbench_requests_per_second", "", "Closed-loop request rate: requests, transactions or connections (tcp-crr) per second (estimate label: achieved or littles-law).", 1}
	rpmFamily        = family{"netbench_loaded_round_trips_per_minute", "", "UDP round trips per minute under load: 60 s over the trimmed mean (lowest 95 %) of the loaded round trips (the IETF IPPM responsiveness draft's unit, not its RPM).", 1}
	retransFamily    = family{"netbench_tcp_retransmitted_segments", "", "TCP segments retransmitted during the probe.", 1}
	mssFamily        = family{"netbench_tcp_mss_bytes", "bytes", "Smallest MSS the probe's TCP streams negotiated.", 1}
	pmtuFamily       = family{"netbench_path_mtu_bytes", "bytes", "Largest IP packet that crossed the path with don't-fragment set.", 1}
	validFamily      = family{"netbench_probe_valid", "", "1 when the probe's figures are the path's, 0 when a CPU limit of an agent or the application's traffic on a pod's interface decided them (validity in -o json says how).", 1}
	dnsQueryFamily   = family{"netbench_dns_queries_per_lookup", "", "Queries the resolver sends for one lookup of the name, as configured.", 1}
	dnsNXFamily      = family{"netbench_dns_nxdomain_answers_per_lookup", "", "NXDOMAIN answers among one lookup's queries.", 1}
	dnsLatFamily     = family{"netbench_dns_lookup_latency_seconds", "seconds", "Warm latency of a whole lookup (every candidate the resolver walks).", 1e-6}
	raceSlowFamily   = family{"netbench_dns_race_slow_lookups", "", "Lookups of the race check (--race) that waited out the resolver's timeout.", 1}
	capQPSFamily     = family{"netbench_dns_sustained_queries_per_second", "", "DNS capacity (dns --load): the highest rate of the pod's query mix the nameserver sustained (its knee).", 1}
	capLookupsFamily = family{"netbench_dns_sustained_lookups_per_second", "", "DNS capacity (dns --load): the application's lookups per second that rate allows at the pod's queries per lookup now.", 1}
	raceLostFamily   = family{"netbench_dns_race_lost_queries", "", "Queries of the race check (--race) left without an answer within the timeout.", 1}
	checkFamily      = family{"netbench_check_violated", "", "1 when a --fail-if condition held (or could not be evaluated), else 0.", 1}
	undefinedFamily  = family{"netbench_figure_undefined", "", "1 for a figure the run could not compute (NaN or infinite; value label): its own sample is left out.", 1}
)

// metricOf maps a figure to its family and the labels that tell it apart.
func metricOf(f report.FigureValue) (family, [][2]string) {
	if f.Probe == "dns-race" {
		switch f.Stat {
		case "slow":
			return raceSlowFamily, nil
		case "lost":
			return raceLostFamily, nil
		}
		return family{}, nil // slow_percent: the count over the lookups, already there
	}
	if f.Probe == "dns-load" {
		return map[string]family{"qps": capQPSFamily, "lookups": capLookupsFamily}[f.Stat], nil
	}
	if f.Stat == "valid" {
		return validFamily, [][2]string{{"probe", f.Probe}}
	}
	if f.Probe == "dns" {
		name := strings.TrimSuffix(strings.TrimPrefix(f.Name, "dns."), "."+f.Stat)
		switch f.Stat {
		case "queries":
			return dnsQueryFamily, [][2]string{{"name", name}}
		case "nxdomains":
			return dnsNXFamily, [][2]string{{"name", name}}
		}
		return dnsLatFamily, [][2]string{{"name", name}, {"quantile", quantileLabel(f.Stat)}}
	}
	probe := [][2]string{{"probe", f.Probe}}
	switch {
	case f.Stat == "idle-p50":
		return latencyFamily, [][2]string{{"probe", f.Probe + ".idle"}, {"quantile", quantileLabel("p50")}}
	case f.Stat == "rpm":
		return rpmFamily, probe
	case report.Quantiles[f.Stat] > 0:
		return latencyFamily, append(probe, [2]string{"quantile", quantileLabel(f.Stat)})
	case strings.HasPrefix(f.Stat, "extra-") || strings.HasPrefix(f.Stat, "added-") || strings.HasPrefix(f.Stat, "vs-dst-") || strings.HasPrefix(f.Stat, "dataplane-") || strings.HasPrefix(f.Stat, "routing-"):
		return addedFamily, [][2]string{{"figure", f.Name}}
	case f.Stat == "jitter":
		return jitterFamily, probe
	case f.Stat == "loss":
		return lossFamily, probe
	case f.Stat == "gbps":
		return throughputFamily, probe
	case strings.HasPrefix(f.Stat, "connect-") && report.Quantiles[strings.TrimPrefix(f.Stat, "connect-")] > 0:
		return latencyFamily, [][2]string{{"probe", f.Probe + ".connect"}, {"quantile", quantileLabel(strings.TrimPrefix(f.Stat, "connect-"))}}
	case f.Stat == "qps", f.Stat == "rate":
		return rateFamily, append(probe, [2]string{"estimate", "achieved"})
	case f.Stat == "littles-law-qps":
		return rateFamily, append(probe, [2]string{"estimate", "littles-law"})
	case f.Stat == "retransmits":
		return retransFamily, probe
	case f.Stat == "mss":
		return mssFamily, probe
	case f.Stat == "bytes":
		return pmtuFamily, probe
	}
	return family{}, nil
}

// tidy drops the binary noise of unit conversion (0.0015999999999999999 → 0.0016).
func tidy(v float64) float64 {
	t, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 12, 64), 64)
	if err != nil {
		return v
	}
	return t
}

func quantileLabel(stat string) string { return fmt.Sprint(report.Quantiles[stat]) }

// metricsWriter gathers families in first-seen order.
type metricsWriter struct {
	order    []string
	families map[string]*dto.MetricFamily
}

func (m *metricsWriter) add(fam family, value float64, labels [][2]string) {
	mf := m.families[fam.name]
	if mf == nil {
		mf = &dto.MetricFamily{Name: proto.String(fam.name), Help: proto.String(fam.help), Type: dto.MetricType_GAUGE.Enum()}
		if fam.unit != "" {
			mf.Unit = proto.String(fam.unit)
		}
		m.families[fam.name] = mf
		m.order = append(m.order, fam.name)
	}
	metric := &dto.Metric{Gauge: &dto.Gauge{Value: proto.Float64(value)}}
	for _, l := range labels {
		if l[1] != "" {
			metric.Label = append(metric.Label, &dto.LabelPair{Name: proto.String(l[0]), Value: proto.String(l[1])})
		}
	}
	mf.Metric = append(mf.Metric, metric)
}

// addFigures adds every figure that maps to a family, with the run's labels and the address
// family it was measured over (ip_family; an IPv6 twin's probe label without its -v6). A
// figure that is NaN or infinite is left out of its family and named in
// netbench_figure_undefined instead.
func (m *metricsWriter) addFigures(fs []report.FigureValue, common [][2]string, ipf ipFamilies) {
	for _, f := range fs {
		var ipFamily string
		f.Probe, ipFamily = ipf.of(f.Probe)
		fam, labels := metricOf(f)
		labels = append(labels, [2]string{"ip_family", ipFamily})
		if fam.name == "" || f.Alias {
			continue // rtt.* repeats icmp.* or tcp-rtt.*
		}
		v := f.Value * fam.scale
		if math.IsNaN(v) || math.IsInf(v, 0) {
			m.add(undefinedFamily, 1, append(append([][2]string{}, common...), [2]string{"figure", f.Name}, [2]string{"value", fmt.Sprint(v)}))
			continue
		}
		m.add(fam, tidy(v), append(append([][2]string{}, common...), labels...))
	}
}

func (m *metricsWriter) addChecks(checks []v1alpha1.CheckResult, common [][2]string) {
	for _, c := range checks {
		v := 0.0
		if c.Violated {
			v = 1
		}
		m.add(checkFamily, v, append(append([][2]string{}, common...), [2]string{"condition", c.Condition}))
	}
}

func (m *metricsWriter) write(w io.Writer) error {
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeOpenMetrics))
	for _, name := range m.order {
		if err := enc.Encode(m.families[name]); err != nil {
			return err
		}
	}
	if c, ok := enc.(expfmt.Closer); ok {
		return c.Close()
	}
	return nil
}

func newMetricsWriter() *metricsWriter {
	return &metricsWriter{families: map[string]*dto.MetricFamily{}}
}

func endpointLabels(prefix string, e report.Endpoint) [][2]string {
	return [][2]string{{prefix + "_namespace", e.Namespace}, {prefix + "_pod", e.Pod}, {prefix + "_node", e.Node}, {prefix + "_zone", e.Zone}}
}

// WritePathMetrics writes a path report as OpenMetrics text: one gauge per figure, labelled with
// both endpoints and the path class.
func WritePathMetrics(w io.Writer, r *report.PathReport) error {
	common := append(append(endpointLabels("source", r.Source), endpointLabels("destination", r.Destination)...), [2]string{"path_class", r.Path.Class})
	ipf := ipFamilies{own: map[string]string{}, run: r.IPFamily}
	for _, p := range append(append([]*v1alpha1.ProbeResult{}, r.Probes...), r.AppPort...) {
		if p == nil {
			continue
		}
		ipf.own[p.Name] = p.IPFamily
		if strings.HasPrefix(p.Name, "svc-") && !strings.HasSuffix(p.Name, v6Suffix) {
			ipf.svc = p.IPFamily // svc.vs-dst-*: the Service's probes against DST's
		}
	}
	return writeRunMetrics(w, r.FigureValues(), r.Checks, common, ipf)
}

// writeRunMetrics writes one run's figures and checks, every sample with the common labels.
func writeRunMetrics(w io.Writer, fs []report.FigureValue, checks []v1alpha1.CheckResult, common [][2]string, ipf ipFamilies) error {
	m := newMetricsWriter()
	m.addFigures(fs, common, ipf)
	m.addChecks(checks, common)
	return m.write(w)
}

// WriteDNSMetrics writes a DNS report as OpenMetrics text, labelled with the pod, the resolver,
// the nameserver and, with --lookup-family 4 or 6, the query type one lookup asks (A or AAAA).
func WriteDNSMetrics(w io.Writer, r *report.DNSReport) error {
	common := endpointLabels("pod", r.Target)
	ipf := ipFamilies{} // the nameserver's
	if r.Result != nil && r.Result.DNSResult != nil {
		common = append(common, [2]string{"resolver", string(r.Result.Resolver)}, [2]string{"nameserver", r.Result.Nameserver})
		if r.Result.Config.LookupFamily != "" { // --lookup-family: the series of a run without it keep their labels
			common = append(common, [2]string{"query_types", strings.Join(r.Result.Config.QueryTypes(), ",")})
		}
		ipf.run = familyOfIP(r.Result.Nameserver)
	}
	return writeRunMetrics(w, r.FigureValues(), r.Checks, common, ipf)
}

// WriteLadderMetrics writes a ladder as OpenMetrics text: each rung's medians, labelled with the
// rung, its class and the client's node and zone.
func WriteLadderMetrics(w io.Writer, r *report.LadderReport) error {
	m := newMetricsWriter()
	dst := endpointLabels("destination", r.Destination)
	ipf := ipFamilies{own: map[string]string{}, run: r.IPFamily}
	if r.Service != nil && len(r.Service.ClusterIPs) > 0 {
		ipf.svc = familyOfIP(r.Service.ClusterIPs[0])
	}
	for _, rung := range r.Rungs {
		for _, round := range rung.Results {
			for _, p := range append(append([]*v1alpha1.ProbeResult{}, round.Probes...), round.AppPort...) {
				if p != nil && p.IPFamily != "" {
					ipf.own[p.Name] = p.IPFamily
				}
			}
		}
	}
	for _, rung := range r.Rungs {
		var fs []report.FigureValue
		for _, name := range r.Figures {
			if f, ok := rung.Figures[name]; ok {
				probe, stat := report.SplitFigure(name)
				fs = append(fs, report.FigureValue{Name: name, Unit: f.Unit, Value: f.Median, Probe: probe, Stat: stat})
			}
		}
		common := append(append([][2]string{}, dst...), [2]string{"rung", rung.Name}, [2]string{"path_class", rung.Class},
			[2]string{"source_node", rung.Node}, [2]string{"source_zone", rung.Zone})
		m.addFigures(fs, common, ipf)
	}
	m.addChecks(r.Checks, dst)
	return m.write(w)
}

// DecodeOpenMetrics reads OpenMetrics text with the Prometheus project's parser, by family name:
// how the tests check what -o openmetrics writes.
func DecodeOpenMetrics(r io.Reader) (map[string]*dto.MetricFamily, error) {
	dec := expfmt.NewDecoder(r, expfmt.NewFormat(expfmt.TypeOpenMetrics))
	fams := map[string]*dto.MetricFamily{}
	for {
		mf := &dto.MetricFamily{}
		err := dec.Decode(mf)
		if errors.Is(err, io.EOF) {
			return fams, nil
		}
		if err != nil {
			return nil, err
		}
		fams[mf.GetName()] = mf
	}
}

// MetricLabels are a sample's labels by name.
func MetricLabels(m *dto.Metric) map[string]string {
	l := map[string]string{}
	for _, lp := range m.GetLabel() {
		l[lp.GetName()] = lp.GetValue()
	}
	return l
}

// WriteMatrixMetrics writes a matrix as OpenMetrics text: each zone cell's figures labelled
// with its source and destination zones, each pair's labelled with both nodes, and the checks.
func WriteMatrixMetrics(w io.Writer, r *report.MatrixReport) error {
	m := newMetricsWriter()
	addMatrixCells(m, r)
	if v6 := r.V6(); v6 != nil {
		addMatrixCells(m, v6)
	}
	m.addChecks(r.Checks, [][2]string{{"namespace", r.Namespace}})
	return m.write(w)
}

// addMatrixCells adds one family's zone cells and pairs, labelled with that family.
func addMatrixCells(m *metricsWriter, r *report.MatrixReport) {
	ipf := ipFamilies{run: r.IPFamily}
	for _, c := range r.Zones {
		common := [][2]string{{"cell", "zone"}, {"source_zone", c.From}, {"destination_zone", c.To}}
		m.addFigures(cellFigures(r.Probe, c.P50Micros, c.P99Micros, c.Gbps, c.PerSecond), common, ipf)
	}
	for _, p := range r.Pairs {
		if report.Measured(p) {
			common := [][2]string{{"cell", "pair"}, {"source_node", p.From}, {"source_zone", p.FromZone}, {"destination_node", p.To}, {"destination_zone", p.ToZone}}
			m.addFigures(cellFigures(r.Probe, p.P50Micros, p.P99Micros, p.Gbps, p.PerSecond), common, ipf)
		}
	}
}

// cellFigures are a zone cell's or a pair's figures: RTT, throughput, and each rate probe's per
// second.
func cellFigures(probe string, p50, p99 float64, gbps *float64, perSecond map[string]float64) []report.FigureValue {
	fs := []report.FigureValue{{Name: probe + ".p50", Unit: report.UnitMicros, Value: p50, Probe: probe, Stat: "p50"},
		{Name: probe + ".p99", Unit: report.UnitMicros, Value: p99, Probe: probe, Stat: "p99"}}
	if gbps != nil {
		fs = append(fs, report.FigureValue{Name: "tcp.gbps", Unit: report.UnitGbps, Value: *gbps, Probe: "tcp", Stat: "gbps"})
	}
	for _, kind := range report.MatrixRateKinds {
		if v, ok := perSecond[kind]; ok {
			fs = append(fs, report.FigureValue{Name: kind + ".rate", Unit: report.UnitReqPerS, Value: v, Probe: kind, Stat: "rate"})
		}
	}
	return fs
}
