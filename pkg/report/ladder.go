package report

import (
	"math"
	"sort"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
	"github.com/kubectl-netbench/kubectl-netbench/internal/gate"
)

// LadderReport is `kubectl netbench ladder`: the same probes from a client on each rung (same
// node, same zone, every other zone, other regions) to one server agent next to the destination.
type LadderReport struct {
	APIVersion  string    `json:"apiVersion"`
	Kind        string    `json:"kind"`
	ToolVersion string    `json:"toolVersion"`
	StartTime   time.Time `json:"startTime"`
	// Mode is how the server agent was started; clients are always temporary pods.
	Mode        string   `json:"mode"`
	Profile     string   `json:"profile"`
	Destination Endpoint `json:"destination"`
	// Rounds is --repeat: each round runs every rung once, in order.
	Rounds int          `json:"rounds"`
	Rungs  []LadderRung `json:"rungs"`
	// Figures lists, in display order, the figure names the rungs' Figures hold.
	Figures []string `json:"figures"`
	// Service is the Service measured from every rung (DST svc/NAME or --service).
	Service *LadderService `json:"service,omitempty"`
	// Policy is what the NetworkPolicies allow the run's agents (the clients, the server and the
	// Service's endpoint agents).
	Policy   *PolicyCheck `json:"networkPolicy,omitempty"`
	Timing   Timing       `json:"timing"`
	Warnings []string     `json:"warnings,omitempty"`
	// Checks are the --fail-if conditions and how they came out.
	Checks []gate.Result `json:"checks,omitempty"`
}

// LadderRung is one rung: where its client ran, each round's results and their summary.
type LadderRung struct {
	Name   string `json:"name"`
	Class  string `json:"class"`
	Node   string `json:"node,omitempty"`
	Zone   string `json:"zone,omitempty"`
	Region string `json:"region,omitempty"`
	// Skipped says why the rung was not measured.
	Skipped string `json:"skipped,omitempty"`
	// Baseline names, on the host-network rung, the rung on the same pair of nodes whose
	// figures it is set beside (what the pod network adds over the nodes' own path).
	Baseline string `json:"baseline,omitempty"`
	// VsBaseline holds, on the host-network rung, Baseline's median minus this rung's per figure.
	VsBaseline map[string]float64 `json:"vsBaseline,omitempty"`
	// Results holds every round's probe results, in round order.
	Results []LadderRound `json:"results,omitempty"`
	// Figures summarises the rounds per figure (see LadderReport.Figures).
	Figures map[string]Figure `json:"figures,omitempty"`
	// Cost of the bytes this rung's throughput probes moved, for cross-zone and cross-region rungs.
	Cost *Cost `json:"cost,omitempty"`
	// Spread is where the Service sent this rung's new connections, over all rounds.
	Spread *RungSpread `json:"spread,omitempty"`
}

// LadderService describes the Service a ladder measured and how its spread was measured.
type LadderService struct {
	Namespace             string         `json:"namespace"`
	Name                  string         `json:"name"`
	ClusterIP             string         `json:"clusterIP"`
	Port                  int            `json:"port"`
	TrafficDistribution   string         `json:"trafficDistribution,omitempty"`
	InternalTrafficPolicy string         `json:"internalTrafficPolicy,omitempty"`
	TopologyMode          string         `json:"topologyMode,omitempty"`
	ReadyEndpoints        int            `json:"readyEndpoints"`
	EndpointsByZone       map[string]int `json:"endpointsByZone"`
	// MeasuredEndpoints ran an agent on AgentPort behind TemporaryService (a copy of the
	// Service's selector and traffic settings); SpreadSkipped says why none did.
	MeasuredEndpoints int `json:"measuredEndpoints"`
	// Dataplane is the Service proxy and its mode, as far as a user can read it.
	Dataplane        *Dataplane `json:"dataplane,omitempty"`
	AgentPort        int        `json:"agentPort,omitempty"`
	TemporaryService string     `json:"temporaryService,omitempty"`
	SpreadSkipped    string     `json:"spreadSkipped,omitempty"`
	// SpreadCaveat says why the spread may not be the Service's own (its copy was not routed
	// as the Service is).
	SpreadCaveat string `json:"spreadCaveat,omitempty"`
}

// RungSpread is where a Service sent one rung's new connections.
type RungSpread struct {
	Connections int `json:"connections"`
	Answered    int `json:"answered"`
	// Unanswered connections reached an endpoint without an agent (or failed); the shares are
	// of the answered ones.
	Unanswered int `json:"unanswered"`
	// ZonePercent is the share of answered connections per endpoint zone; SameZonePercent the
	// share in the rung's own zone.
	ZonePercent     map[string]float64 `json:"zonePercent"`
	SameZonePercent float64            `json:"sameZonePercent"`
	// MonthlyUSDPerGbps is what 1 Gbit/s sustained from this rung through the Service costs
	// in cross-zone transfer for 30 days at that share.
	MonthlyUSDPerGbps float64 `json:"monthlyUSDPerGbps"`
	// Estimate says how the share was estimated when not every endpoint ran an agent.
	Estimate string `json:"estimate,omitempty"`
}

// LadderRound is one round of one rung.
type LadderRound struct {
	Round     int                  `json:"round"`
	ClientPod string               `json:"clientPod"`
	Probes    []*agent.ProbeResult `json:"probes"`
	AppPort   []*agent.ProbeResult `json:"appPort,omitempty"`
}

// Figure is one figure of a rung over its rounds: the median with the range, and the
// difference of the median from the same-node rung's.
type Figure struct {
	Unit    string  `json:"unit"`
	Median  float64 `json:"median"`
	Min     float64 `json:"min"`
	Max     float64 `json:"max"`
	Samples int     `json:"samples"`
	// VsSameNode and VsSameNodePercent compare the median with the same-node rung's (absent on
	// that rung or when it was not measured).
	VsSameNode        *float64 `json:"vsSameNode,omitempty"`
	VsSameNodePercent *float64 `json:"vsSameNodePercent,omitempty"`
}

// Summarize fills each measured rung's Figures from its rounds and the comparison with the
// same-node rung, and the report's figure order.
func (r *LadderReport) Summarize() {
	r.Figures = nil
	seen := map[string]bool{}
	for i := range r.Rungs {
		rung := &r.Rungs[i]
		values, units := map[string][]float64{}, map[string]string{}
		for _, round := range rung.Results {
			for _, nv := range ProbeFigures(append(append([]*agent.ProbeResult{}, round.Probes...), round.AppPort...)) {
				if nv.Probe == "rtt" {
					continue // an alias, named again by FigureValues
				}
				values[nv.Name] = append(values[nv.Name], nv.Value)
				units[nv.Name] = nv.Unit
				if !seen[nv.Name] {
					seen[nv.Name] = true
					r.Figures = append(r.Figures, nv.Name)
				}
			}
		}
		if len(values) == 0 {
			continue
		}
		rung.Figures = map[string]Figure{}
		for name, vs := range values {
			rung.Figures[name] = summarize(units[name], vs)
		}
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
				p := round1(100 * d / b.Median)
				f.VsSameNodePercent = &p
			}
			rung.Figures[name] = f
		}
	}
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
func round1(v float64) float64 { return math.Round(v*10) / 10 }

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
