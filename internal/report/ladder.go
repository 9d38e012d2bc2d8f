package report

import (
	"math"
	"sort"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// Summarize fills each measured rung's Figures from its rounds and the comparison with the
// same-node rung, and the report's figure order.
func (r *LadderReport) Summarize() {
	r.Figures = nil
	seen := map[string]bool{}
	for i := range r.Rungs {
		r.Rungs[i].Figures = roundFigures(r.Rungs[i].Results, &r.Figures, seen)
	}
	r.compareBaselines()
	var base *LadderRung
	for i := range r.Rungs {
		if r.Rungs[i].Class == SameNode && r.Rungs[i].Figures != nil {
			base = &r.Rungs[i]
		}
	}
	if base == nil {
		return
	}
	for i := range r.Rungs {
		rung := &r.Rungs[i]
		if rung == base {
			continue
		}
		for name, f := range rung.Figures {
			b, ok := base.Figures[name]
			if !ok {
				continue
			}
			d := round3(f.Median - b.Median)
			f.VsSameNode = &d
			if b.Median > 0 {
				p := Round1(100 * d / b.Median)
				f.VsSameNodePercent = &p
			}
			rung.Figures[name] = f
		}
	}
}

// roundFigures summarises rounds of results per figure: the median, the range and the number of
// rounds (a validity figure takes its worst round: one round a CPU limit decided makes the
// figure so). Each figure's name is appended to order the first time seen sees it; nil when no
// round has a figure.
func roundFigures(rounds []v1alpha1.LadderRound, order *[]string, seen map[string]bool) map[string]Figure {
	values, units := map[string][]float64{}, map[string]string{}
	for _, round := range rounds {
		for _, nv := range ProbeFigures(append(append([]*v1alpha1.ProbeResult{}, round.Probes...), round.AppPort...)) {
			if nv.Alias {
				continue // rtt.* and valid: named again by FigureValues
			}
			values[nv.Name] = append(values[nv.Name], nv.Value)
			units[nv.Name] = nv.Unit
			if !seen[nv.Name] {
				seen[nv.Name] = true
				*order = append(*order, nv.Name)
			}
		}
	}
	if len(values) == 0 {
		return nil
	}
	figs := map[string]Figure{}
	for name, vs := range values {
		f := summarize(units[name], vs)
		if IsValidity(name) {
			f.Median = f.Min
		}
		figs[name] = f
	}
	return figs
}

func summarize(unit string, vs []float64) Figure {
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	med := s[len(s)/2]
	if len(s)%2 == 0 {
		med = (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return Figure{Unit: unit, Median: round3(med), Min: round3(s[0]), Max: round3(s[len(s)-1]), Samples: len(s)}
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// Round1 rounds to one decimal, halves away from zero (negative figures too).
func Round1(v float64) float64 { return math.Round(v*10) / 10 }

// compareBaselines sets, on a rung with a Baseline (the host-network rung), the baseline rung's
// median minus its own for every figure both have: what the pod network adds on that path.
func (r *LadderReport) compareBaselines() {
	for i := range r.Rungs {
		rung := &r.Rungs[i]
		if rung.Baseline == "" || rung.Figures == nil {
			continue
		}
		for j := range r.Rungs {
			b := &r.Rungs[j]
			if b.Name != rung.Baseline || b.Figures == nil {
				continue
			}
			rung.VsBaseline = map[string]float64{}
			for name, f := range rung.Figures {
				if bf, ok := b.Figures[name]; ok {
					rung.VsBaseline[name] = round3(bf.Median - f.Median)
				}
			}
		}
	}
}
