package agent

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"
)

// PathJob is where the plugin hands a waiting runner its job (POST, the job as JSON, the run
// token in TokenHeader). The job and the token never appear in the pod's spec: the spec only
// carries the token's SHA-256, which tells the agent whom to accept and tells others nothing.
const PathJob = "/netbench/v1/job"

// ErrNoJob means no job was handed over in time; ErrStoppedBeforeJob that the plugin said to
// stop (PathDone) before it handed one over — an interrupted run.
var (
	ErrNoJob            = errors.New("no job was handed over")
	ErrStoppedBeforeJob = errors.New("told to stop before a job was handed over")
)

const (
	maxJobBytes        = 1 << 20
	handoverReadWindow = 5 * time.Second
)

// TokenDigest is the hex SHA-256 of a run token, as agents are given it.
func TokenDigest(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// tokenAccepter accepts the token itself, or any token whose digest is the given one.
func tokenAccepter(token, digest string) func(string) bool {
	if digest != "" {
		want := []byte(digest)
		return func(tok string) bool { return subtle.ConstantTimeCompare([]byte(TokenDigest(tok)), want) == 1 }
	}
	return func(tok string) bool { return tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(token)) == 1 }
}

// jobFromRequest reads a posted job (at most maxJobBytes), with the caller's token, validated.
func jobFromRequest(r *http.Request) (Job, error) {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxJobBytes+1))
	if err != nil {
		return Job{}, err
	}
	if len(data) > maxJobBytes {
		return Job{}, fmt.Errorf("over %d bytes", maxJobBytes)
	}
	job, err := decodeJob(data)
	if err != nil {
		return Job{}, err
	}
	job.Token = r.Header.Get(TokenHeader)
	return job, job.Validate()
}

// AwaitJob listens on listen, emits ready with its port and returns the first job posted to
// PathJob by a holder of the token with the given digest, the token filled in. Others get
// 401, and connections are admitted through a gate with DefaultLimits: strangers are bounded
// per source and in total and closed unless they present the token within its window, so
// that peers holding connections cannot keep the plugin's hand-over out.
// It gives up with ErrNoJob after within, or when ctx ends. A job that must stop the moment its
// run is interrupted (Job.stopsOnDone) keeps the listener until ctx ends, and the returned
// channel closes when the token's holder posts PathDone; other jobs get a nil channel and the
// listener closes.
func AwaitJob(ctx context.Context, listen, digest string, within time.Duration, em *Emitter, trusted ...netip.Addr) (Job, <-chan struct{}, error) {
	if digest == "" {
		return Job{}, nil, errors.New("awaiting a job needs the token's digest (--token-sha256)")
	}
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		return Job{}, nil, fmt.Errorf("listening on %s: %w", listen, err)
	}
	accept := tokenAccepter("", digest)
	auth := func(w http.ResponseWriter, r *http.Request) bool {
		if accept(r.Header.Get(TokenHeader)) && authenticateRequest(r.Context()) {
			return true
		}
		w.Header().Set("Connection", "close")
		http.Error(w, "missing or wrong "+TokenHeader, http.StatusUnauthorized)
		return false
	}
	jobs, stop := make(chan Job, 1), make(chan struct{})
	var stopOnce sync.Once
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+PathDone, func(w http.ResponseWriter, r *http.Request) {
		if !auth(w, r) {
			return
		}
		stopOnce.Do(func() { close(stop) })
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("POST "+PathJob, func(w http.ResponseWriter, r *http.Request) {
		if !auth(w, r) {
			return
		}
		job, err := jobFromRequest(r)
		if err != nil {
			http.Error(w, "job: "+err.Error(), http.StatusBadRequest)
			return
		}
		select {
		case jobs <- job:
			w.WriteHeader(http.StatusNoContent)
		default:
			http.Error(w, "a job was already handed over", http.StatusConflict)
		}
	})
	srv := &http.Server{Handler: mux, ConnContext: withGated, ReadHeaderTimeout: DefaultLimits.Handshake, ReadTimeout: handoverReadWindow,
		WriteTimeout: handoverReadWindow, IdleTimeout: handoverReadWindow, MaxHeaderBytes: 8 << 10}
	limits := DefaultLimits
	limits.Trusted = trusted
	go func() { _ = srv.Serve(&gatedListener{Listener: ln, g: newGate(limits)}) }()
	shutdown := func() {
		// Let the accepted hand-over's answer go out; then drop everyone.
		c, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(c)
		_ = srv.Close()
	}
	keep := false
	defer closeUnless(ctx, &keep, shutdown)
	em.Emit(Event{Type: EventReady, Port: ln.Addr().(*net.TCPAddr).Port, Message: fmt.Sprintf("awaiting the job on %s for %s", ln.Addr(), within)})

	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case job := <-jobs:
		if keep = job.stopsOnDone(); keep {
			return job, stop, nil
		}
		return job, nil, nil
	case <-stop:
		return Job{}, nil, ErrStoppedBeforeJob
	case <-timer.C:
		return Job{}, nil, fmt.Errorf("%w within %s", ErrNoJob, within)
	case <-ctx.Done():
		return Job{}, nil, ctx.Err()
	}
}

// closeUnless shuts the hand-over server down now, or, when keep is set, once ctx ends.
func closeUnless(ctx context.Context, keep *bool, shutdown func()) {
	if *keep {
		go func() { <-ctx.Done(); shutdown() }()
		return
	}
	shutdown()
}

// stopsOnDone says whether the job must end the moment its run is interrupted, not at its
// deadline: a DNS capacity ramp loads a shared service; an egress probe calls a destination
// outside the cluster, with no server agent whose end would end it.
func (j Job) stopsOnDone() bool {
	for _, p := range j.Probes {
		if p.DNSLoadSeconds > 0 || p.Kind == ProbeEgress {
			return true
		}
	}
	return false
}
