package v1alpha1

// DNSLoad is the DNS capacity ramp (dns --load): the pod's own query mix sent open loop at rising
// rates, first to the pod's nameserver (the cluster DNS Service, or NodeLocal's address), then to
// each replica behind it, until a step degrades. It is load on a shared service: bounded by
// CeilingQPS, by BudgetSeconds for the whole ramp, and stopped at a server's first errors.
type DNSLoad struct {
	// Mix is the queries one lookup of each name sends as the pod's resolver walks its search
	// path (UDP queries of the cold lookup, A and AAAA as configured), sent round and round.
	Mix []DNSLoadQuery `json:"mix"`
	// Lookups is how many lookups one round of Mix is (the names).
	Lookups int `json:"lookups"`
	// The criteria: a step is degraded when more than MaxLossRatio of its queries go
	// unanswered within TimeoutMillis, any is answered with SERVFAIL or REFUSED, the answers
	// fall behind (KeptPace below MinPaceRatio), or its p99 exceeds P99BudgetMicros.
	P99BudgetMicros float64         `json:"p99BudgetMicros"`
	MaxLossRatio    float64         `json:"maxLossRatio"`
	MinPaceRatio    float64         `json:"minPaceRatio"`
	TimeoutMillis   float64         `json:"timeoutMillis"`
	StepSeconds     float64         `json:"stepSeconds"`
	CeilingQPS      float64         `json:"ceilingQueriesPerSecond"`
	BudgetSeconds   float64         `json:"budgetSeconds"`
	Servers         []DNSServerLoad `json:"servers"`
	// Skipped says why there was no ramp (no queries to send).
	Skipped string `json:"skipped,omitempty"`
}

// DNSLoadQuery is one query of the mix.
type DNSLoadQuery struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

// Why a server's ramp ended (DNSServerLoad.Limit).
const (
	LoadLimitDegraded  = "degraded"     // the knee: SustainedQPS passed, the next step above it did not
	LoadLimitCeiling   = "ceiling"      // the ceiling passed: the knee is above it
	LoadLimitBudget    = "duration cap" // time ran out before the knee was narrowed: a lower bound
	LoadLimitGenerator = "generator"    // the agent could not send the step's rate: a lower bound
	LoadLimitErrors    = "errors"       // the server answered SERVFAIL or REFUSED: stopped at once
	LoadLimitCancelled = "cancelled"    // the run was interrupted
)

// DNSServerLoad is the ramp against one server.
type DNSServerLoad struct {
	DNSReplica
	// Nameserver marks the pod's nameserver (the Service's address); the others are replicas.
	Nameserver bool `json:"nameserver,omitempty"`
	// SustainedQPS is the highest rate of a step that did not degrade (0: none did).
	SustainedQPS float64 `json:"sustainedQueriesPerSecond"`
	// Limit says why the ramp ended (LoadLimit*), and so whether SustainedQPS is the knee.
	Limit string        `json:"limit"`
	Steps []DNSLoadStep `json:"steps"`
}

// DNSLoadStep is one rate held for a step.
type DNSLoadStep struct {
	OfferedQPS float64 `json:"offeredQueriesPerSecond"`
	// SentQPS is the rate the agent achieved sending; AnsweredQPS the answers' rate.
	SentQPS     float64 `json:"sentQueriesPerSecond"`
	AnsweredQPS float64 `json:"answeredQueriesPerSecond"`
	Seconds     float64 `json:"seconds"`
	Sent        int     `json:"sent"`
	Answered    int     `json:"answered"`
	Lost        int     `json:"lost"`
	Errors      int     `json:"errors"`
	// P50Micros and P99Micros are the answered queries' latencies (exact percentiles, Answered
	// samples, nanosecond clock).
	P50Micros float64 `json:"p50Micros"`
	P99Micros float64 `json:"p99Micros"`
	// KeptPace is the answers' rate over the second half of the step as a share of the rate
	// offered: below MinPaceRatio the server fell behind (its queue grew).
	KeptPace float64 `json:"keptPace"`
	// Degraded is why the step failed the criteria ("" passed); a step stopped early says so.
	Degraded string `json:"degraded,omitempty"`
}

// DNSCapacity turns the nameserver's sustained queries per second into the application's
// lookups per second: at the pod's amplification now, and after each fix the report suggests
// (assuming the server's cost per query is the same for the fixed mix).
type DNSCapacity struct {
	// Server is the address whose ramp is converted: the pod's nameserver.
	Server       string  `json:"server"`
	SustainedQPS float64 `json:"sustainedQueriesPerSecond"`
	// LowerBound is set when the ramp ended before a knee (the ceiling, the duration cap or the
	// generator): the capacity is at least SustainedQPS.
	LowerBound bool        `json:"lowerBound,omitempty"`
	Now        LookupsAt   `json:"now"`
	Fixed      []LookupsAt `json:"fixed,omitempty"`
	// Notes say what the figure is not (NodeLocal's cache in front, replicas asked directly).
	Notes []string `json:"notes,omitempty"`
}

// LookupsAt is the lookups per second one amplification allows.
type LookupsAt struct {
	// Fix is "as configured", or the fix ("ndots:2", "fully qualified names").
	Fix              string  `json:"fix"`
	QueriesPerLookup float64 `json:"queriesPerLookup"`
	LookupsPerSecond float64 `json:"lookupsPerSecond"`
}
