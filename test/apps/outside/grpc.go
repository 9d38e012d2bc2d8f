package main

import (
	"crypto/tls"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
)

// newGRPCServer is a gRPC server with the standard health service alone (the whole server
// SERVING), over TLS with cert when it is not nil; bounded in streams, message size, handshake
// time and idleness.
func newGRPCServer(cert *tls.Certificate) *grpc.Server {
	opts := []grpc.ServerOption{
		grpc.MaxConcurrentStreams(maxH2Streams),
		grpc.MaxRecvMsgSize(4 << 10),
		grpc.ConnectionTimeout(5 * time.Second),
		grpc.KeepaliveParams(keepalive.ServerParameters{MaxConnectionIdle: 60 * time.Second}),
	}
	if cert != nil {
		opts = append(opts, grpc.Creds(credentials.NewTLS(&tls.Config{Certificates: []tls.Certificate{*cert}, MinVersion: tls.VersionTLS12})))
	}
	s := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(s, health.NewServer())
	return s
}

// serveGRPC serves s on ln, bounded in connections, until s stops.
func serveGRPC(s *grpc.Server, ln net.Listener) error {
	return s.Serve(limitListener(ln, maxHTTPConns))
}
