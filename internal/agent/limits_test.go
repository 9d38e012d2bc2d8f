package agent

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"fortio.org/fortio/fgrpc"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
)

// The server decodes at most 16 KiB of HTTP/1 headers and an 8 KiB gRPC header list even from a
// token holder: on its authenticated connection a request just under each bound is served and one
// over it refused (HTTP 431; a gRPC error). A new connection is a stranger's until its request
// shows the token, so there the gate's 8 KiB comes first and closes it.
func TestServerHeaderBounds(t *testing.T) {
	s := startServer(t, "", "tok-limits", 20*time.Second)
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
	newConns := 0
	client := &http.Client{Transport: &http.Transport{MaxConnsPerHost: 1, DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
		newConns++
		return (&net.Dialer{}).DialContext(ctx, network, a)
	}}}
	get := func(c *http.Client, pad int) (int, error) {
		req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/", nil)
		req.Header.Set(TokenHeader, "tok-limits")
		req.Header.Set("X-Pad", strings.Repeat("p", pad))
		resp, err := c.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body) // read to the end, so that the connection is kept
		resp.Body.Close()
		return resp.StatusCode, nil
	}
	for _, tc := range []struct {
		pad  int
		want int
	}{{0, http.StatusOK}, {14 << 10, http.StatusOK}, {24 << 10, http.StatusRequestHeaderFieldsTooLarge}} {
		if code, err := get(client, tc.pad); err != nil || code != tc.want {
			t.Errorf("authenticated connection, %d bytes of padding: status %d (%v), want %d", tc.pad, code, err, tc.want)
		}
	}
	if newConns > 2 { // the 431 closes its connection; nothing before it may have
		t.Errorf("%d connections for three requests: the authenticated one was not kept", newConns)
	}
	if _, err := get(&http.Client{Transport: &http.Transport{}}, DefaultLimits.StrangerBytes+2<<10); err == nil {
		t.Errorf("a new connection sent %d bytes before its request showed the token and was served", DefaultLimits.StrangerBytes+2<<10)
	}

	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ping := func(pad int) error {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		ctx = metadata.AppendToOutgoingContext(ctx, TokenMetadata, "tok-limits", "x-pad", strings.Repeat("p", pad))
		_, err := fgrpc.NewPingServerClient(conn).Ping(ctx, &fgrpc.PingMessage{})
		return err
	}
	if err := ping(6 << 10); err != nil {
		t.Errorf("gRPC header list of 6 KiB: %v", err)
	}
	if err := ping(12 << 10); err == nil {
		t.Error("gRPC header list of 12 KiB was served")
	}
}
