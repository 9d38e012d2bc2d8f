package v1alpha1

import "time"

// DiffReport compares two runs figure by figure (`kubectl netbench diff OLD NEW`).
type DiffReport struct {
	APIVersion string  `json:"apiVersion"`
	Kind       string  `json:"kind"`
	Old        RunInfo `json:"old"`
	New        RunInfo `json:"new"`
	// TolerancePercent is the smallest change, relative to OLD, that counts; a figure with
	// intervals on both sides must also leave the other's interval.
	TolerancePercent float64        `json:"tolerancePercent"`
	Figures          []FigureChange `json:"figures"`
	// OnlyOld and OnlyNew are figures one run has and the other has not.
	OnlyOld      []string `json:"onlyOld,omitempty"`
	OnlyNew      []string `json:"onlyNew,omitempty"`
	Regressions  int      `json:"regressions"`
	Improvements int      `json:"improvements"`
	Warnings     []string `json:"warnings,omitempty"`
}

// RunInfo says which run a side is.
type RunInfo struct {
	File      string    `json:"file"`
	Kind      string    `json:"kind"`
	StartTime time.Time `json:"startTime"`
	// Subject is what was measured (path src → dst, the ladder's destination, the DNS pod).
	Subject string `json:"subject"`
	Profile string `json:"profile,omitempty"`
}

// Verdicts of a figure.
const (
	Regressed    = "regressed"
	Improved     = "improved"
	WithinSpread = "within spread"
)

// FigureChange is one figure in both runs.
type FigureChange struct {
	Name string  `json:"name"`
	Unit string  `json:"unit"`
	Old  float64 `json:"old"`
	New  float64 `json:"new"`
	// Change is New − Old; ChangePercent relative to Old (absent when Old is 0).
	Change        float64  `json:"change"`
	ChangePercent *float64 `json:"changePercent,omitempty"`
	// OldRange and NewRange are each run's own spread where it has one: the rounds' min–max
	// (--repeat), or the 95 % interval of a percentile from its samples (without a high end
	// when too few samples bound it from above).
	OldRange *Range `json:"oldRange,omitempty"`
	NewRange *Range `json:"newRange,omitempty"`
	Verdict  string `json:"verdict"`
	Reason   string `json:"reason"`
}

// Range is a figure's own spread: the rounds' min–max, or the 95 % confidence interval of a
// percentile from its samples. High is nil when the samples bound it only from below (a p99 of
// 20 samples: no rank of 20 holds the p99 with 95 % confidence).
type Range struct {
	Low  float64  `json:"low"`
	High *float64 `json:"high,omitempty"`
}

// Overlaps says whether two ranges share a value.
func (r *Range) Overlaps(o *Range) bool {
	return (r.High == nil || o.Low <= *r.High) && (o.High == nil || r.Low <= *o.High)
}

// Holds says whether v lies in the range.
func (r *Range) Holds(v float64) bool { return r.Low <= v && (r.High == nil || v <= *r.High) }
