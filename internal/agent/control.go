package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"os"
	"syscall"
	"time"
)

// Reasons of error events.
const (
	ReasonRefused = "refused" // the target actively refused the connection
	ReasonTimeout = "timeout" // no answer in time
	// ReasonUnauthorized: the agent server refused the token (ErrTokenRefused).
	ReasonUnauthorized = "unauthorized"
)

// reason classifies a probe error for the plugin's message.
func reason(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return ReasonRefused
	case errors.Is(err, os.ErrDeadlineExceeded), errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return ReasonTimeout
	}
	return ""
}

// introduce presents the token to the server once before any probe: from then on the server
// trusts this source address, and a probe's burst of new connections is not bounded as
// strangers' would be. A server that does not answer is the probes' to report.
// An agent outside the cluster that answers the token 401 was started with another token
// file: ErrTokenRefused, before any probe (agents in the cluster leave refusals to the probes,
// each refused by the server's own gate).
func introduce(ctx context.Context, job Job) error {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	if err := controlCall(ctx, job, http.MethodGet, PathLease, nil); job.ServerOutside && errors.Is(err, ErrTokenRefused) {
		return fmt.Errorf("the agent server at %s refused the token: %w", job.agentAddr(), err)
	}
	return nil
}

// pinHost is host's address, looked up once through the pod's resolver when host is a name:
// every probe then reaches the same agent, and no connection's time includes a lookup.
func pinHost(ctx context.Context, host string, em *Emitter) (string, error) {
	if _, err := netip.ParseAddr(host); err == nil {
		return host, nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		return "", fmt.Errorf("the agent server's host %s: no address (%v)", host, err)
	}
	ip := addrs[0].Unmap().String()
	em.Emit(Event{Type: EventProgress, Message: fmt.Sprintf("%s is %s (looked up once, through the pod's resolver)", host, ip)})
	return ip, nil
}

// ErrTokenRefused means an agent server answered the token 401: it serves another token.
var ErrTokenRefused = errors.New("it serves another token")

// controlClient carries the control API's calls (lease, done, CPU): each bounded, and straight
// to the server (no proxy from the environment: path here runs a client in the plugin, where
// HTTP_PROXY may be set for the API server).
var controlClient = &http.Client{Timeout: 3 * time.Second, Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 2, IdleConnTimeout: 30 * time.Second}}

// controlCall sends one request of the control API to the job's server with the token and
// decodes a JSON answer into out (when not nil).
func controlCall(ctx context.Context, job Job, method, path string, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, "http://"+job.agentAddr()+path, nil)
	if err != nil {
		return err
	}
	req.Header.Set(TokenHeader, job.Token)
	resp, err := controlClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	switch {
	case resp.StatusCode == http.StatusUnauthorized:
		return fmt.Errorf("%s %s: %s: %w", method, path, resp.Status, ErrTokenRefused)
	case resp.StatusCode/100 != 2:
		return fmt.Errorf("%s %s: %s", method, path, resp.Status)
	}
	if out == nil {
		return nil
	}
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(out)
}
