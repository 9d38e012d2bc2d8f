package render

import (
	_ "embed"
	"fmt"
	"html/template"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

//go:embed ladder.html.tmpl
var ladderHTML string

// WriteLadderHTML writes the ladder as one self-contained HTML page: the table and SVG charts
// (RTT per rung, latency CDF per rung, throughput, the Service's same-zone share), with no
// script and nothing fetched, to attach to a ticket.
func WriteLadderHTML(w io.Writer, r *report.LadderReport) error {
	t, err := template.New("ladder").Funcs(template.FuncMap{"cell": htmlCell, "micros": report.Micros,
		"list": func(s ...*report.RungSpread) []*report.RungSpread { return s }}).Parse(ladderHTML)
	if err != nil {
		return err
	}
	var rungs []*report.LadderRung
	for i := range r.Rungs {
		if r.Rungs[i].Skipped == "" {
			rungs = append(rungs, &r.Rungs[i])
		}
	}
	return t.Execute(w, map[string]any{
		"R": r, "Rungs": rungs,
		"RTT":        rttChart(rungs),
		"CDF":        cdfChart(rungs),
		"Throughput": throughputChart(rungs),
		"Share":      shareChart(rungs),
	})
}

// htmlCell is a figure's table cell: the median, then the range and the difference from
// same-node in smaller type.
func htmlCell(f report.Figure, rounds int) template.HTML {
	var sub []string
	if rounds > 1 {
		sub = append(sub, "["+formatValue(f.Min, f.Unit)+"–"+formatValue(f.Max, f.Unit)+"]")
	}
	if d := difference(f); d != "" {
		sub = append(sub, "("+d+")")
	}
	h := template.HTMLEscapeString(formatValue(f.Median, f.Unit))
	if len(sub) > 0 {
		h += "<br><small>" + template.HTMLEscapeString(strings.Join(sub, " ")) + "</small>"
	}
	return template.HTML(h)
}

// chart geometry (SVG user units).
const (
	chartW, chartH = 720.0, 260.0
	padL, padR     = 150.0, 90.0
	padT, padB     = 20.0, 36.0
)

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

// bars draws one horizontal bar group per rung: values[i] are that rung's bars, labelled, on a
// scale up to top (0: the largest value).
func bars(title string, names []string, values [][]float64, labels [][]string, legend []string, top float64) template.HTML {
	if len(names) == 0 {
		return ""
	}
	for _, vs := range values {
		for _, v := range vs {
			top = math.Max(top, v)
		}
	}
	if top <= 0 {
		return ""
	}
	per := len(values[0])
	rowH := 14.0*float64(per) + 10
	h := padT + padB + rowH*float64(len(names))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s"><title>%s</title>`, chartW, h, template.HTMLEscapeString(title), template.HTMLEscapeString(title))
	scale := (chartW - padL - padR) / top
	for i, n := range names {
		y := padT + rowH*float64(i)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end" class="axis">%s</text>`, padL-8, y+rowH/2, template.HTMLEscapeString(n))
		for j, v := range values[i] {
			yy := y + 14*float64(j)
			fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="%.1f" height="12" fill="%s"/>`, padL, yy, math.Max(v*scale, 1), palette[j%len(palette)])
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" class="value">%s</text>`, padL+math.Max(v*scale, 1)+4, yy+10, template.HTMLEscapeString(labels[i][j]))
		}
	}
	for j, l := range legend {
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="10" height="10" fill="%s"/><text x="%.0f" y="%.0f" class="axis">%s</text>`,
			padL+float64(j)*120, h-16, palette[j%len(palette)], padL+float64(j)*120+14, h-7, template.HTMLEscapeString(l))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func rttChart(rungs []*report.LadderRung) template.HTML {
	probe := ""
	for _, p := range []string{"icmp", "tcp-rtt"} {
		if len(rungs) > 0 && rungs[0].Figures != nil {
			if _, ok := rungs[0].Figures[p+".p50"]; ok {
				probe = p
				break
			}
		}
	}
	if probe == "" {
		return ""
	}
	var names []string
	var values [][]float64
	var labels [][]string
	for _, r := range rungs {
		p50, p99 := r.Figures[probe+".p50"].Median, r.Figures[probe+".p99"].Median
		names = append(names, r.Name)
		values = append(values, []float64{p50, p99})
		labels = append(labels, []string{report.Micros(p50), report.Micros(p99)})
	}
	return bars("RTT per rung ("+probe+")", names, values, labels, []string{probe + " p50", probe + " p99"}, 0)
}

func throughputChart(rungs []*report.LadderRung) template.HTML {
	var keys []string
	seen := map[string]bool{}
	for _, r := range rungs {
		for k := range r.Figures {
			if strings.HasSuffix(k, ".gbps") && !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	if len(keys) == 0 {
		return ""
	}
	sort.Strings(keys)
	var names []string
	var values [][]float64
	var labels [][]string
	for _, r := range rungs {
		names = append(names, r.Name)
		var vs []float64
		var ls []string
		for _, k := range keys {
			v := r.Figures[k].Median
			vs, ls = append(vs, v), append(ls, fmt.Sprintf("%.2f Gbit/s", v))
		}
		values, labels = append(values, vs), append(labels, ls)
	}
	return bars("TCP throughput per rung", names, values, labels, keys, 0)
}

func shareChart(rungs []*report.LadderRung) template.HTML {
	var names []string
	var values [][]float64
	var labels [][]string
	for _, r := range rungs {
		if r.Spread == nil {
			continue
		}
		names = append(names, r.Name)
		values = append(values, []float64{r.Spread.SameZonePercent})
		labels = append(labels, []string{fmt.Sprintf("%.1f %% of %d", r.Spread.SameZonePercent, r.Spread.Answered)})
	}
	return bars("Service connections answered in the rung's own zone", names, values, labels, []string{"same-zone share (scale 0–100 %)"}, 100)
}

// cdfChart draws, per rung, the cumulative distribution of the first latency histogram it
// has (HTTP keep-alive, else gRPC), on one linear axis up to the largest p99.
func cdfChart(rungs []*report.LadderRung) template.HTML {
	type series struct {
		name string
		h    v1alpha1.Latency
	}
	var ss []series
	probe := ""
	for _, r := range rungs {
		if len(r.Results) == 0 {
			continue
		}
		for _, p := range r.Results[0].Probes {
			if l := histogramOf(p); l != nil && (probe == "" || probe == p.Name) {
				probe = p.Name
				ss = append(ss, series{r.Name, *l})
				break
			}
		}
	}
	if len(ss) == 0 {
		return ""
	}
	top := 0.0
	for _, s := range ss {
		top = math.Max(top, s.h.P99Micros)
	}
	if top <= 0 {
		return ""
	}
	const legendW = 190.0
	plotW, plotH := chartW-padL-legendW, chartH-padT-padB
	x := func(us float64) float64 { return padL + math.Min(us/top, 1)*plotW }
	y := func(f float64) float64 { return padT + (1-f)*plotH }
	var b strings.Builder
	title := "Latency CDF per rung (" + probe + ", first round, up to the largest p99)"
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %.0f %.0f" role="img" aria-label="%s"><title>%s</title>`, chartW, chartH, title, title)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.0f" x2="%.0f" y2="%.0f" class="grid"/>`, padL, y(0), padL+plotW, y(0))
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" class="axis">0</text><text x="%.0f" y="%.0f" text-anchor="end" class="axis">%s</text>`,
		padL, chartH-10, padL+plotW, chartH-10, report.Micros(top))
	for _, f := range []float64{0.5, 0.9, 0.99} {
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" class="grid"/><text x="%.0f" y="%.1f" text-anchor="end" class="axis">%g</text>`,
			padL, y(f), padL+plotW, y(f), padL-6, y(f)+4, f)
	}
	for i, s := range ss {
		var pts []string
		var seen int64
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(s.h.MinMicros), y(0)))
		for _, bk := range s.h.Histogram {
			seen += bk.Count
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(bk.EndMicros), y(float64(seen)/float64(s.h.Count))))
		}
		c := palette[i%len(palette)]
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`, c, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="10" height="10" fill="%s"/><text x="%.0f" y="%.0f" class="axis">%s</text>`,
			chartW-legendW+12, padT+float64(i)*16, c, chartW-legendW+26, padT+float64(i)*16+9, template.HTMLEscapeString(s.name))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

func histogramOf(p *v1alpha1.ProbeResult) *v1alpha1.Latency {
	switch {
	case p.HTTP != nil && p.Kind == v1alpha1.ProbeHTTP && len(p.HTTP.Latency.Histogram) > 0 && p.HTTP.Latency.Count > 0:
		return &p.HTTP.Latency
	case p.GRPC != nil && len(p.GRPC.Latency.Histogram) > 0 && p.GRPC.Latency.Count > 0:
		return &p.GRPC.Latency
	}
	return nil
}
