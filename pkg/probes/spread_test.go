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

	"github.com/google/go-cmp/cmp"
)

// Every connection is new and counted where it landed; connections nobody answers are counted
// by kind, and a run where none is answered is an error.
func TestSpread(t *testing.T) {
	var n, conns atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Token") != "t" || r.URL.Path != "/who" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		i := n.Add(1)
		zone := []string{"zone-a", "zone-a", "zone-b"}[i%3]
		fmt.Fprintf(w, `{"pod":"p%d","zone":%q}`, i%3, zone)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	addr := strings.TrimPrefix(srv.URL, "http://")
	h := http.Header{}
	h.Set("X-Token", "t")
	got, err := Spread(context.Background(), SpreadSpec{Address: addr, Path: "/who", Connections: 30, Headers: h})
	if err != nil {
		t.Fatal(err)
	}
	want := &SpreadResult{Address: addr, Connections: 30, Answered: 30, ByZone: map[string]int{"zone-a": 20, "zone-b": 10}, ByPod: map[string]int{"p0": 10, "p1": 10, "p2": 10}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if conns.Load() != 30 {
		t.Errorf("%d TCP connections for 30 asks: want a new one each", conns.Load())
	}

	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	closed := ln.Addr().String()
	ln.Close()
	got, err = Spread(context.Background(), SpreadSpec{Address: closed, Path: "/who", Connections: 5, Headers: h})
	if err == nil || got.Unanswered != 5 || got.ErrorsByKind["refused"] != 5 {
		t.Errorf("nothing listening: %+v, %v", got, err)
	}
}
