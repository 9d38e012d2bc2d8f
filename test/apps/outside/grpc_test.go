package main

import (
	"context"
	"crypto/tls"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
)

// Plain and over TLS (a certificate for outside.lab), the whole server answers SERVING.
func TestGRPCHealth(t *testing.T) {
	cert, pool := testCert(t, "outside.lab")
	for _, tlsOn := range []bool{false, true} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		creds := insecure.NewCredentials()
		s := newGRPCServer(nil)
		if tlsOn {
			s = newGRPCServer(&cert)
			creds = credentials.NewTLS(&tls.Config{RootCAs: pool, ServerName: "outside.lab"})
		}
		go func() { _ = serveGRPC(s, ln) }()
		conn, err := grpc.NewClient("passthrough:///"+ln.Addr().String(), grpc.WithTransportCredentials(creds))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{})
		cancel()
		if err != nil || resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
			t.Errorf("tls %v: %v %v, want SERVING", tlsOn, resp, err)
		}
		conn.Close()
		s.Stop()
	}
}
