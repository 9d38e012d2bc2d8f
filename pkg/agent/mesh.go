package agent

import (
	"bytes"
	"context"
	"net/http"
	"sync/atomic"
	"time"
)

// MaxMeshJob bounds one job a serving agent runs for a peer measurement (serve --jobs): the
// plugin waits for its answer through the API server, so it must be short.
const MaxMeshJob = 60 * time.Second

// meshJobs runs jobs posted to PathJob on a server started with --jobs (the matrix's agents,
// which serve their peers and measure them): one at a time, each answered with its events as
// JSON lines once it is over. The caller's token becomes the job's token, so a job can only
// measure servers of the same run, and a job never tells its server to stop.
type meshJobs struct {
	busy atomic.Bool
	run  func(ctx context.Context, job Job, em *Emitter) error
}

func (m *meshJobs) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !m.busy.CompareAndSwap(false, true) {
		http.Error(w, "a job is already running", http.StatusConflict)
		return
	}
	defer m.busy.Store(false)
	job, err := jobFromRequest(r)
	job.Done = false
	if err != nil {
		http.Error(w, "job: "+err.Error(), http.StatusBadRequest)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), MaxMeshJob)
	defer cancel()
	_ = http.NewResponseController(w).SetWriteDeadline(time.Now().Add(MaxMeshJob + 5*time.Second))
	var out bytes.Buffer
	_ = m.run(ctx, job, NewEmitter(&out)) // a failed probe is an error event in the answer
	w.Header().Set("Content-Type", "application/x-ndjson")
	_, _ = w.Write(out.Bytes())
}
