// Package report is the advice and analysis of the reports kubectl-netbench prints: their
// figures (what --fail-if and diff compare), DNS fixes and race advice, the matrix's cells and
// outliers, the ladder's summary, diffs of two runs, and a run read back from its file.
// Rendering is internal/render's. The reports' types are the versioned schema of
// pkg/api/v1alpha1; this file gives them their names here.
package report

import "github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"

// APIVersion versions every report; the schema is documented in docs/output.md.
const APIVersion = v1alpha1.APIVersion

// Path classes.
const (
	SameNode    = v1alpha1.SameNode
	SameZone    = v1alpha1.SameZone
	CrossZone   = v1alpha1.CrossZone
	CrossRegion = v1alpha1.CrossRegion
	Unknown     = v1alpha1.Unknown
)

// Units of figures.
const (
	UnitMicros  = v1alpha1.UnitMicros
	UnitReqPerS = v1alpha1.UnitReqPerS
	UnitGbps    = v1alpha1.UnitGbps
	UnitCount   = v1alpha1.UnitCount
	UnitPercent = v1alpha1.UnitPercent
	UnitBytes   = v1alpha1.UnitBytes
)

// Verdicts of a figure.
const (
	Regressed    = v1alpha1.Regressed
	Improved     = v1alpha1.Improved
	WithinSpread = v1alpha1.WithinSpread
)

// States of a pod's node-local DNS cache.
const (
	NodeLocalInUse    = v1alpha1.NodeLocalInUse
	NodeLocalNotInUse = v1alpha1.NodeLocalNotInUse
	NodeLocalUnknown  = v1alpha1.NodeLocalUnknown
)

// The reports that carry analysis here (FigureValues, Summarize, BuildMatrix) are types of their
// own over the schema's: the same fields and JSON, and a pointer to one converts to a pointer to
// the other, (*v1alpha1.PathReport)(r).
type (
	// PathReport is the result of `kubectl netbench path`.
	PathReport v1alpha1.PathReport
	// LadderReport is the result of `kubectl netbench ladder`.
	LadderReport v1alpha1.LadderReport
	// DNSReport is the result of `kubectl netbench dns`.
	DNSReport v1alpha1.DNSReport
	// MatrixReport is the result of `kubectl netbench matrix`.
	MatrixReport v1alpha1.MatrixReport
	// EntryReport is the result of `kubectl netbench ladder --via nodeport`.
	EntryReport v1alpha1.EntryReport
)

// The other types of the reports, as the schema defines them.
type (
	DiffReport    = v1alpha1.DiffReport
	RunInfo       = v1alpha1.RunInfo
	FigureChange  = v1alpha1.FigureChange
	Range         = v1alpha1.Range
	Endpoint      = v1alpha1.Endpoint
	PathClass     = v1alpha1.PathClass
	Dataplane     = v1alpha1.Dataplane
	Cost          = v1alpha1.Cost
	EgressCost    = v1alpha1.EgressCost
	WayIn         = v1alpha1.WayIn
	Timing        = v1alpha1.Timing
	Phase         = v1alpha1.Phase
	PolicyCheck   = v1alpha1.PolicyCheck
	PolicyBlock   = v1alpha1.PolicyBlock
	LadderRung    = v1alpha1.LadderRung
	LadderService = v1alpha1.LadderService
	RungSpread    = v1alpha1.RungSpread
	LadderRound   = v1alpha1.LadderRound
	Figure        = v1alpha1.Figure
	DNSFix        = v1alpha1.DNSFix
	Patch         = v1alpha1.Patch
	RaceAdvice    = v1alpha1.RaceAdvice
	DNSService    = v1alpha1.DNSService
	NodeLocalDNS  = v1alpha1.NodeLocalDNS
	MatrixPlan    = v1alpha1.MatrixPlan
	MatrixNode    = v1alpha1.MatrixNode
	MatrixExcl    = v1alpha1.MatrixExcl
	MatrixPair    = v1alpha1.MatrixPair
	MatrixCell    = v1alpha1.MatrixCell
	NodeSummary   = v1alpha1.NodeSummary
	MatrixFlag    = v1alpha1.MatrixFlag
)
