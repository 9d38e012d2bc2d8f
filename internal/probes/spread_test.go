package probes

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Every connection is new and counted where it landed; connections nobody answers are counted
// by kind, and a run where none is answered is an error.
func TestSpread(t *testing.T) {
	var n, conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nonce, err := CheckProof("t", r.Header.Get(ProofHeader), time.Now())
		if err != nil || r.Header.Get("X-Netbench-Token") != "" || r.URL.Path != "/who" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		i := n.Add(1)
		pod, zone := fmt.Sprintf("p%d", i%3), []string{"zone-a", "zone-a", "zone-b"}[i%3]
		mac := AnswerMAC("t", nonce, pod, "", zone, "", false)
		if i%10 == 0 { // a look-alike that cannot prove the token
			mac = AnswerMAC("guess", nonce, pod, "", zone, "", false)
		}
		fmt.Fprintf(w, `{"pod":%q,"zone":%q,"mac":%q}`, pod, zone, mac)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	got, err := Spread(context.Background(), SpreadSpec{Address: addr, Path: "/who", Connections: 30, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	want := &SpreadResult{Address: addr, Connections: 30, Answered: 27, Unanswered: 3, ErrorsByKind: map[string]int{"not this run's agent": 3},
		ByZone: map[string]int{"zone-a": 18, "zone-b": 9}, ByPod: map[string]int{"p0": 9, "p1": 9, "p2": 9}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if conns.Load() != 30 {
		t.Errorf("%d TCP connections for 30 asks: want a new one each", conns.Load())
	}

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	got, err = Spread(context.Background(), SpreadSpec{Address: closed, Path: "/who", Connections: 5, Token: "t"})
	if err == nil || got.Unanswered != 5 || got.ErrorsByKind["refused"] != 5 {
		t.Errorf("nothing listening: %+v, %v", got, err)
	}
}

// A proof verifies once, with its own token, within its window; the answer's MAC binds the
// nonce and the identity.
func TestProofs(t *testing.T) {
	now := time.Now()
	proof, nonce := NewProof("tok", now)
	if _, err := CheckProof("other", proof, now); err == nil {
		t.Error("a proof verified with another token")
	}
	if _, err := CheckProof("tok", proof, now.Add(2*ProofWindow)); err == nil {
		t.Error("a stale proof verified")
	}
	got, err := CheckProof("tok", proof, now)
	if err != nil || string(got) != string(nonce) {
		t.Fatalf("a fresh proof: %v", err)
	}
	seen := NewNonces(2)
	if !seen.First(nonce, now) || seen.First(nonce, now) {
		t.Error("a nonce was not accepted once and refused after")
	}
	// Full, it forgets the nonces whose own time is past the window, and only those.
	_, second := NewProof("tok", now)
	_, third := NewProof("tok", now)
	if !seen.First(second, now) || seen.First(third, now) {
		t.Error("a full set took a nonce while none of its own was past the window")
	}
	if !seen.First(third, now.Add(ProofWindow+time.Second)) {
		t.Error("a full set did not forget nonces past their window")
	}
	if AnswerMAC("tok", nonce, "a", "n", "z", "", false) == AnswerMAC("tok", nonce, "b", "n", "z", "", false) {
		t.Error("the answer's MAC does not bind the pod")
	}
}

// With the endpoint agents' own addresses, each connection through the Service is followed by
// one handshake straight to the next endpoint (then DST) in turn: every endpoint that answered
// has its handshakes both ways, counted, and DST its own.
func TestSpreadHandshakes(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nonce, err := CheckProof("t", r.Header.Get(ProofHeader), time.Now())
		if err != nil {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"pod":"p0","zone":"zone-a","mac":%q}`, AnswerMAC("t", nonce, "p0", "", "zone-a", "", false))
	}))
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	got, err := Spread(context.Background(), SpreadSpec{Address: addr, Path: "/who", Connections: 30, Token: "t",
		Direct: map[string]string{"p0": addr, "p1": addr}, DST: addr})
	if err != nil {
		t.Fatal(err)
	}
	var counts []string
	for _, e := range got.Endpoints {
		counts = append(counts, fmt.Sprintf("%s %d/%d", e.Pod, e.Service.Count, e.Direct.Count))
		if e.Direct.Count > 0 && e.Direct.P50Micros <= 0 || e.Service.Count > 0 && e.Service.P50Micros <= 0 {
			t.Errorf("endpoint %+v: a handshake without a time", e)
		}
	}
	if diff := cmp.Diff([]string{"p0 30/10", "p1 0/10"}, counts); diff != "" || got.DST == nil || got.DST.Count != 10 {
		t.Errorf("endpoints (-want +got):\n%s\nDST %+v", diff, got.DST)
	}

	// Five connections still give every target ten straight handshakes; a target that refuses
	// is given up after three failures in a row.
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	got, err = Spread(context.Background(), SpreadSpec{Address: addr, Path: "/who", Connections: 5, Token: "t",
		Direct: map[string]string{"p0": addr, "gone": closed}, DST: addr})
	if err != nil {
		t.Fatal(err)
	}
	counts = nil
	for _, e := range got.Endpoints {
		counts = append(counts, fmt.Sprintf("%s %d/%d failed %d", e.Pod, e.Service.Count, e.Direct.Count, e.Direct.Failed))
	}
	if diff := cmp.Diff([]string{"gone 0/0 failed 3", "p0 5/10 failed 0"}, counts); diff != "" || got.DST.Count != 10 {
		t.Errorf("few connections (-want +got):\n%s\nDST %+v", diff, got.DST)
	}
}

// Before the first counted connection, each endpoint agent gets one request with the token
// straight to its own address (and only there; through the Service, proofs): its gate then
// knows the client as a token holder, whatever strangers do (docs/security.md). That request is
// not counted.
func TestSpreadPresentsTheTokenFirst(t *testing.T) {
	var order []string
	var mu = make(chan struct{}, 1)
	answer := func(name string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get(TokenHeader) == "t" {
				mu <- struct{}{}
				order = append(order, name+" with the token")
				<-mu
				return
			}
			nonce, err := CheckProof("t", r.Header.Get(ProofHeader), time.Now())
			if err != nil {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			mu <- struct{}{}
			order = append(order, name)
			<-mu
			fmt.Fprintf(w, `{"pod":"p0","zone":"zone-a","mac":%q}`, AnswerMAC("t", nonce, "p0", "", "zone-a", "", false))
		}
	}
	svc, direct := httptest.NewServer(answer("service")), httptest.NewServer(answer("direct"))
	defer svc.Close()
	defer direct.Close()
	got, err := Spread(context.Background(), SpreadSpec{Address: strings.TrimPrefix(svc.URL, "http://"), Path: "/who", Connections: 3, Token: "t",
		Direct: map[string]string{"p0": strings.TrimPrefix(direct.URL, "http://")}})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"direct with the token", "service", "service", "service"}, order); diff != "" || got.Answered != 3 || got.Connections != 3 {
		t.Errorf("requests in order (-want +got):\n%s\nresult %+v", diff, got)
	}
}
