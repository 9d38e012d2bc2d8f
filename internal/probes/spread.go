package probes

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"sort"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// SpreadSpec: open Connections new TCP connections, one after the other, to Address (a
// Service's ClusterIP and port) and ask each which endpoint answered (GET Path).
type SpreadSpec struct {
	Address     string
	Path        string
	Connections int
	// Token is the run's token: each request carries a proof of it (ProofHeader), never the
	// token itself, and each answer must prove it too (AnswerMAC), or it is not counted.
	Token   string
	Timeout time.Duration // per connection (default 2 s)
	// Direct holds the endpoint agents' own addresses by pod, DST the destination agent's:
	// after each connection through the Service, one TCP handshake goes straight to the next of
	// them in turn, so that each endpoint's handshake through the Service is set beside its
	// handshake without the Service's translation, on the same listener, in the same seconds.
	Direct map[string]string
	DST    string
}

// SpreadResult is v1alpha1.SpreadResult, a type of the reports' schema.
type SpreadResult = v1alpha1.SpreadResult

type spreadAnswer struct {
	Pod  string `json:"pod"`
	Node string `json:"node"`
	Zone string `json:"zone"`
	// Peer is the source address the endpoint saw the request come from (after any SNAT).
	Peer string `json:"peer"`
	// PeerIsGateway says Peer is the endpoint's default gateway: its node's own address in the
	// pod network.
	PeerIsGateway bool   `json:"peerIsGateway"`
	MAC           string `json:"mac"`
}

// asked is one connection's answer: who answered, its TCP handshake (from the connect call to
// its return), the time from the connect call to the answer's first byte, and the client's
// own address on it.
type asked struct {
	spreadAnswer
	connect, answer time.Duration
	local           string
}

// ErrNotOurAgent is an answer that does not prove the run's token: a pod that is not one of
// the run's agents (a look-alike carrying the Service's labels, say).
var ErrNotOurAgent = errors.New("an answer that does not prove the run's token (not one of this run's agents)")

// Spread measures how a Service spreads new connections over its endpoints.
func Spread(ctx context.Context, spec SpreadSpec) (*SpreadResult, error) {
	if spec.Address == "" || spec.Connections <= 0 {
		return nil, errors.New("spread probe: an address and a number of connections are needed")
	}
	if spec.Timeout <= 0 {
		spec.Timeout = 2 * time.Second
	}
	res := &SpreadResult{Address: spec.Address, Connections: spec.Connections, ByZone: map[string]int{}, ByPod: map[string]int{}}
	hs := newHandshakes(spec)
	tr := &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{Timeout: spec.Timeout}).DialContext}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: spec.Timeout, CheckRedirect: noRedirects}
	presentToken(ctx, client, spec)
	for i := 0; i < spec.Connections; i++ {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		a, err := askWho(ctx, client, "http://"+spec.Address+spec.Path, spec.Token)
		if err != nil {
			res.Unanswered++
			if res.ErrorsByKind == nil {
				res.ErrorsByKind = map[string]int{}
			}
			res.ErrorsByKind[errorKind(err)]++
		} else {
			res.Answered++
			res.ByZone[a.Zone]++
			res.ByPod[a.Pod]++
			hs.service(a.spreadAnswer, a.connect)
		}
		hs.direct(ctx, i, spec.Connections)
	}
	hs.fill(res)
	if res.Answered == 0 {
		return res, fmt.Errorf("none of %d connections to %s was answered by an agent (%v)", spec.Connections, spec.Address, sortedKinds(res.ErrorsByKind))
	}
	return res, nil
}

// TokenHeader carries the run's token on HTTP requests to an agent.
const TokenHeader = "X-Netbench-Token"

// presentToken presents the token once to each endpoint agent, straight to its own address
// (the pods the plugin started them in: the token goes nowhere else), before any connection is
// counted: the agent then trusts the client's source, as it trusts any token holder's. A proof
// does not make its source trusted (through a Service that source may be a node's SNAT, shared
// with strangers), and an untrusted source's connections are held to the strangers' rate,
// which the straight handshakes, carrying nothing, would soon exceed. Not counted; a failure
// here shows again in the counted connections.
func presentToken(ctx context.Context, c *http.Client, spec SpreadSpec) {
	quick := &http.Client{Transport: c.Transport, Timeout: straightTimeout, CheckRedirect: noRedirects}
	var wg sync.WaitGroup
	for _, addr := range spec.Direct {
		wg.Go(func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+spec.Path, nil)
			if err != nil {
				return
			}
			req.Header.Set(TokenHeader, spec.Token)
			if resp, err := quick.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
				resp.Body.Close()
			}
		})
	}
	wg.Wait()
}

// noRedirects keeps a client on the connection it opened: a redirect is an answer that is not
// an agent's (followed, it would carry a fresh proof to wherever it points, and the agent
// there would name the client's source as seen from somewhere else).
func noRedirects(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

// askWho asks, on a new connection, which endpoint answers and what source it saw.
func askWho(ctx context.Context, c *http.Client, url, token string) (asked, error) {
	var a asked
	var start time.Time
	var took, first atomic.Int64
	var local atomic.Value
	trace := &httptrace.ClientTrace{
		ConnectStart: func(string, string) { start = time.Now() },
		ConnectDone: func(_, _ string, err error) {
			if err == nil {
				took.Store(int64(time.Since(start)))
			}
		},
		GotConn:              func(i httptrace.GotConnInfo) { local.Store(i.Conn.LocalAddr().String()) },
		GotFirstResponseByte: func() { first.Store(int64(time.Since(start))) },
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodGet, url, nil)
	if err != nil {
		return a, err
	}
	proof, nonce := NewProof(token, time.Now())
	req.Header.Set(ProofHeader, proof)
	resp, err := c.Do(req)
	if err != nil {
		return a, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return a, fmt.Errorf("HTTP %d", resp.StatusCode)
	}
	err = json.NewDecoder(io.LimitReader(resp.Body, 4096)).Decode(&a.spreadAnswer)
	switch {
	case err != nil:
		return a, err
	case a.Pod == "":
		return a, errors.New("an answer without a pod")
	case !hmac.Equal([]byte(a.MAC), []byte(AnswerMAC(token, nonce, a.Pod, a.Node, a.Zone, a.Peer, a.PeerIsGateway))):
		return a, ErrNotOurAgent
	}
	a.connect, a.answer = time.Duration(took.Load()), time.Duration(first.Load())
	a.local, _ = local.Load().(string)
	return a, nil
}

func sortedKinds(m map[string]int) []string {
	var ks []string
	for k, n := range m {
		ks = append(ks, fmt.Sprintf("%s ×%d", k, n))
	}
	sort.Strings(ks)
	return ks
}

// errorKind names an error for counting: refused, timeout, reset, closed, an errno, an HTTP
// status; never text that names the connection (one key per connection).
func errorKind(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.Is(err, ErrNotOurAgent):
		return "not this run's agent"
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	case errors.Is(err, syscall.ECONNRESET):
		return "reset"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "closed"
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno.Error()
	}
	var se *url.Error
	if errors.As(err, &se) {
		return "request failed" // its text names the connection's ports: one key per connection
	}
	return err.Error()
}
