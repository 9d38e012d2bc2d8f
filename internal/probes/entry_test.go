package probes

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// whoServer answers a proof of token "t" as pod p0 on node n1 and names the source it saw;
// mac, when set, replaces the answer's proof.
func whoServer(t *testing.T, mac func(nonce []byte, peer string) string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nonce, err := CheckProof("t", r.Header.Get(ProofHeader), time.Now())
		if err != nil {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		peer, _, _ := net.SplitHostPort(r.RemoteAddr)
		fmt.Fprintf(w, `{"pod":"p0","node":"n1","zone":"z","peer":%q,"mac":%q}`, peer, mac(nonce, peer))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// Every connection is answered with the source the server saw (here the client's own address),
// timed: the handshake, and the answer after it.
func TestEnterRecordsWhoAndTheSourceSeen(t *testing.T) {
	addr := whoServer(t, func(nonce []byte, peer string) string { return AnswerMAC("t", nonce, "p0", "n1", "z", peer, false) })
	res, err := Enter(context.Background(), EntrySpec{Address: addr, Path: "/who", Token: "t", Connections: 20})
	if err != nil {
		t.Fatal(err)
	}
	if res.Connections != 20 || len(res.Answered) != 20 || res.Stopped != "" {
		t.Fatalf("%d connections, %d answered, stopped %q: want 20 answered", res.Connections, len(res.Answered), res.Stopped)
	}
	for _, c := range res.Answered {
		if c.Pod != "p0" || c.Node != "n1" || c.Peer != "127.0.0.1" || c.Local != c.Peer || c.Connect <= 0 || c.Answer < c.Connect {
			t.Fatalf("answer %+v: want p0 on n1, the source 127.0.0.1 as the client's own, connect > 0 and the answer after it", c)
		}
	}
}

// An answer whose proof names another source than the one it says is not counted: a forged
// "source kept" cannot pass.
func TestEnterRefusesAnAnswerProvingAnotherSource(t *testing.T) {
	addr := whoServer(t, func(nonce []byte, _ string) string { return AnswerMAC("t", nonce, "p0", "n1", "z", "10.0.0.1", false) })
	res, err := Enter(context.Background(), EntrySpec{Address: addr, Path: "/who", Token: "t", Connections: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Answered) != 0 || res.ErrorsByKind["not this run's agent"] != 5 || res.Stopped != "" {
		t.Errorf("answered %d, errors %v, stopped %q: want none of 5 counted", len(res.Answered), res.ErrorsByKind, res.Stopped)
	}
}

// A redirect is not followed: an answer from wherever it points would name the client's source
// as seen from there, and the proof would travel to it.
func TestEnterDoesNotFollowRedirects(t *testing.T) {
	agent := whoServer(t, func(nonce []byte, peer string) string { return AnswerMAC("t", nonce, "p0", "n1", "z", peer, false) })
	relay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://"+agent+"/who", http.StatusTemporaryRedirect)
	}))
	t.Cleanup(relay.Close)
	res, err := Enter(context.Background(), EntrySpec{Address: strings.TrimPrefix(relay.URL, "http://"), Path: "/who", Token: "t", Connections: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Answered) != 0 || res.ErrorsByKind["HTTP 307"] != 5 {
		t.Errorf("answered %d, errors %v: want 5 redirects counted as such, none followed", len(res.Answered), res.ErrorsByKind)
	}
}

// A way in that drops connections (they time out) ends after its first ones, not one timeout
// each; one that refuses goes on (an endpoint without an agent refuses, others may answer);
// one whose time runs out ends then.
func TestEnterStopsEarly(t *testing.T) {
	silent, _ := net.Listen("tcp", "127.0.0.1:0") // the kernel completes handshakes; nothing answers
	t.Cleanup(func() { silent.Close() })
	res, err := Enter(context.Background(), EntrySpec{Address: silent.Addr().String(), Path: "/who", Token: "t", Connections: 200, Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Connections != entryGiveUp || res.ErrorsByKind["timeout"] != entryGiveUp || res.Stopped == "" {
		t.Errorf("%d connections, errors %v, stopped %q: want %d timeouts, then stopped", res.Connections, res.ErrorsByKind, res.Stopped, entryGiveUp)
	}
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	res, err = Enter(context.Background(), EntrySpec{Address: closed, Path: "/who", Token: "t", Connections: 20})
	if err != nil || res.Connections != 20 || res.ErrorsByKind["refused"] != 20 || res.Stopped != "" {
		t.Errorf("%d connections, errors %v, stopped %q, %v: want 20 refused, not stopped", res.Connections, res.ErrorsByKind, res.Stopped, err)
	}
	addr := whoServer(t, func(nonce []byte, peer string) string { return AnswerMAC("t", nonce, "p0", "n1", "z", peer, false) })
	res, err = Enter(context.Background(), EntrySpec{Address: addr, Path: "/who", Token: "t", Connections: 1 << 20, Budget: 50 * time.Millisecond})
	if err != nil || res.Stopped == "" || res.Connections >= 1<<20 {
		t.Errorf("%d connections, stopped %q, %v: want stopped by its budget", res.Connections, res.Stopped, err)
	}
}
