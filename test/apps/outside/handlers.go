package main

import (
	"io"
	"net"
	"net/http"
	"strconv"
	"time"
)

const (
	maxDelayMS = 10000     // /delay/MS
	maxBytes   = 100 << 20 // /bytes/N
)

// newMux serves the paths of the package comment; any other path is 404, another method 405.
func newMux() *http.ServeMux {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) { text(w, "ok\n") })
	mux.HandleFunc("GET /ip", serveIP)
	mux.HandleFunc("GET /status/{code}", serveStatus)
	mux.HandleFunc("GET /delay/{ms}", serveDelay)
	mux.HandleFunc("GET /bytes/{n}", serveBytes)
	return mux
}

func text(w http.ResponseWriter, s string) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, s)
}

// serveIP answers the client's address as seen here: behind the lab's router, a pod's node.
func serveIP(w http.ResponseWriter, r *http.Request) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	text(w, host+"\n")
}

func serveStatus(w http.ResponseWriter, r *http.Request) {
	code, ok := number(r.PathValue("code"), 101, 599)
	if !ok {
		http.Error(w, "want /status/N with 100 < N < 600", http.StatusBadRequest)
		return
	}
	if code == http.StatusSwitchingProtocols { // a client would wait for the protocol it did not ask for
		http.Error(w, "101 switches protocols: not served", http.StatusBadRequest)
		return
	}
	w.WriteHeader(int(code))
}

// serveDelay answers after the delay asked for, or not at all if the client goes first.
func serveDelay(w http.ResponseWriter, r *http.Request) {
	ms, ok := number(r.PathValue("ms"), 0, maxDelayMS)
	if !ok {
		http.Error(w, "want /delay/MS with MS at most 10000", http.StatusBadRequest)
		return
	}
	t := time.NewTimer(time.Duration(ms) * time.Millisecond)
	defer t.Stop()
	select {
	case <-t.C:
		text(w, "ok\n")
	case <-r.Context().Done():
	}
}

var zeros = make([]byte, 64<<10)

func serveBytes(w http.ResponseWriter, r *http.Request) {
	n, ok := number(r.PathValue("n"), 0, maxBytes)
	if !ok {
		http.Error(w, "want /bytes/N with N at most 104857600 (100 MiB)", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
	if r.Method == http.MethodHead {
		return
	}
	for n > 0 {
		chunk := min(n, int64(len(zeros)))
		if _, err := w.Write(zeros[:chunk]); err != nil {
			return // the client is gone or the write timed out
		}
		n -= chunk
	}
}

// number parses a decimal path segment within [lo, hi].
func number(s string, lo, hi int64) (int64, bool) {
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil && n >= lo && n <= hi
}
