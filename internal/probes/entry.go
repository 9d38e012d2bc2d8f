package probes

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fault"
)

// EntrySpec: open Connections new TCP connections, one after the other, to Address (a node's
// NodePort, say: a way into the cluster from where this runs) and ask each which endpoint
// answered and what source address it saw (GET Path, with a proof of Token, as the spread
// probe does).
type EntrySpec struct {
	Address     string
	Path        string
	Token       string
	Connections int
	Timeout     time.Duration // per connection (default 1 s)
	// Budget, when set, bounds the whole probe: it stops opening connections once it is spent.
	Budget time.Duration
}

// EntryConn is one answered connection.
type EntryConn struct {
	Pod, Node, Zone string
	// Peer is the source address the endpoint saw (PeerIsGateway: its default gateway, its
	// node's address in the pod network); Local the client's own on the connection.
	Peer, Local   string
	PeerIsGateway bool
	// Connect is the TCP handshake; Answer the time from the connect call to the answer's first
	// byte (a new connection's time to first byte).
	Connect, Answer time.Duration
}

// EntryResult is every connection's outcome.
type EntryResult struct {
	Address      string
	Connections  int // attempted
	Answered     []EntryConn
	ErrorsByKind map[string]int
	// Stopped says why the probe ended before Connections (none of the first ones answered).
	Stopped string
}

// entryGiveUp is how many first connections may time out, none answered, before the probe
// stops: a node that drops the way in (externalTrafficPolicy Local without a local endpoint)
// would otherwise cost a timeout per connection. Other failures (refused, an answer that is not
// an agent's) do not stop it: they are counted, as an endpoint without an agent refuses.
const entryGiveUp = 3

// Enter measures one way in. An address where nothing answers is a result (Stopped), not an
// error; the context's end is.
func Enter(ctx context.Context, spec EntrySpec) (*EntryResult, error) {
	if spec.Address == "" || spec.Connections <= 0 {
		return nil, errors.New("entry probe: an address and a number of connections are needed")
	}
	if spec.Timeout <= 0 {
		spec.Timeout = time.Second
	}
	tr := &http.Transport{DisableKeepAlives: true, DialContext: (&net.Dialer{Timeout: spec.Timeout}).DialContext}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: spec.Timeout, CheckRedirect: noRedirects}
	res := &EntryResult{Address: spec.Address}
	began := time.Now()
	for i := 0; i < spec.Connections; i++ {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if spec.Budget > 0 && time.Since(began) > spec.Budget {
			res.Stopped = "its time (" + spec.Budget.String() + ") ran out"
			break
		}
		res.Connections++
		a, err := askWho(ctx, client, "http://"+spec.Address+spec.Path, spec.Token)
		if err == nil {
			if fault.On(fault.EntryConnectToAnswer) {
				a.connect = a.answer
			}
			res.Answered = append(res.Answered, EntryConn{Pod: a.Pod, Node: a.Node, Zone: a.Zone, Peer: a.Peer, PeerIsGateway: a.PeerIsGateway, Local: hostOf(a.local), Connect: a.connect, Answer: a.answer})
			continue
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if res.ErrorsByKind == nil {
			res.ErrorsByKind = map[string]int{}
		}
		kind := errorKind(err)
		res.ErrorsByKind[kind]++
		if kind == "timeout" && len(res.Answered) == 0 && res.ErrorsByKind[kind] == res.Connections && res.Connections == entryGiveUp {
			res.Stopped = fmt.Sprintf("its first %d connections timed out: the node drops this way in", entryGiveUp)
			break
		}
	}
	return res, nil
}

func hostOf(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}
