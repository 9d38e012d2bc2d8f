package render

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// A gRPC destination's rows are answers to its health check, which is named with its status; an
// HTTP destination's rows are first bytes, with its status.
func TestEgressNamesWhatWasTimed(t *testing.T) {
	lat := v1alpha1.Latency{Count: 10, P50Micros: 2000}
	for _, tc := range []struct {
		e          v1alpha1.EgressResult
		want, lack []string
	}{
		{v1alpha1.EgressResult{Target: "grpcs://api.example:443", Scheme: "grpcs", Protocol: "gRPC", Host: "api.example", Port: "443", GRPCStatus: "SERVING",
			TLS: &v1alpha1.TLSHandshake{Latency: lat, Version: "TLS 1.3"}, FirstByteNew: &lat, FirstByteReused: &lat},
			[]string{"(gRPC over TLS, api.example:443)", "answer, new connection", "answer, reused connection", "a health check's answer from the call's start", "gRPC health check (grpc.health.v1.Health/Check of the whole server): SERVING"},
			[]string{"first byte", "HTTP status"}},
		{v1alpha1.EgressResult{Target: "grpc://api.example:50051", Scheme: "grpc", Protocol: "gRPC", Host: "api.example", Port: "50051", GRPCStatus: "Unimplemented", FirstByteNew: &lat},
			[]string{"(gRPC, plaintext, api.example:50051)", "Health/Check of the whole server): Unimplemented"}, []string{"tls handshake"}},
		{v1alpha1.EgressResult{Target: "https://api.example/", Scheme: "https", Protocol: "HTTP/2.0", Host: "api.example", Port: "443", Status: 200, FirstByteNew: &lat, FirstByteReused: &lat,
			Addresses: []string{"192.0.2.7"}, RemoteAddress: "192.0.2.7:443"},
			[]string{"(HTTP/2.0 over https, api.example:443)", "first byte, new connection", "first byte, reused connection", "HTTP status 200", "api.example resolved to 192.0.2.7; connected to 192.0.2.7:443"}, []string{"answer,", "gRPC", "download"}},
		{v1alpha1.EgressResult{Target: "http://192.0.2.7/big", Scheme: "http", Host: "192.0.2.7", Port: "80", RemoteAddress: "192.0.2.7:80", FirstByteNew: &lat,
			Download: &v1alpha1.EgressDownload{Bytes: 104857600, Seconds: 0.5, TotalSeconds: 0.51, BitsPerSecond: 1677721600, Ended: "end", Protocol: "HTTP/1.1"}},
			[]string{"\n  connected to 192.0.2.7:80\n", "download, one more request on a new connection (HTTP/1.1): 1.68 Gbit/s — 104857600 bytes in 0.500 s from the first byte to the last (0.510 s from the request's start); ended by the body's end"},
			[]string{"resolved to"}},
		{v1alpha1.EgressResult{Target: "http://192.0.2.7/", Scheme: "http", Host: "192.0.2.7", Port: "80", FirstByteNew: &lat,
			Download: &v1alpha1.EgressDownload{Bytes: 3, Seconds: 0.001, Ended: "end", Note: "no rate: a body of 3 bytes times the first round trips"}},
			[]string{": no rate — 3 bytes", "download: no rate: a body of 3 bytes times the first round trips"}, nil},
		{v1alpha1.EgressResult{Target: "http://192.0.2.7/", Scheme: "http", Host: "192.0.2.7", Port: "80", FirstByteNew: &lat,
			Download: &v1alpha1.EgressDownload{Error: "server error: http://192.0.2.7/ answered 404 Not Found: a download needs a 2xx answer's body", TotalSeconds: 0.002}},
			[]string{"download FAILED after 0.002 s: server error: http://192.0.2.7/ answered 404 Not Found"}, []string{"no rate"}},
		{v1alpha1.EgressResult{Target: "http://192.0.2.7/", Scheme: "http", Host: "192.0.2.7", Port: "80", FirstByteNew: &lat,
			Download: &v1alpha1.EgressDownload{Bytes: 5 << 20, Seconds: 2, TotalSeconds: 2.1, BitsPerSecond: 20971520, Ended: "duration", Protocol: "HTTP/2.0"}},
			[]string{"(HTTP/2.0): 21.0 Mbit/s — 5242880 bytes in 2.000 s from the first byte to the end of the time allowed", "ended by the time --download allowed"}, nil},
	} {
		var b bytes.Buffer
		writeEgress(&b, &v1alpha1.ProbeResult{Name: "egress", Kind: v1alpha1.ProbeEgress, Egress: &tc.e})
		for _, w := range tc.want {
			if !strings.Contains(b.String(), w) {
				t.Errorf("%s: lacks %q:\n%s", tc.e.Target, w, b.String())
			}
		}
		for _, l := range tc.lack {
			if strings.Contains(b.String(), l) {
				t.Errorf("%s: says %q:\n%s", tc.e.Target, l, b.String())
			}
		}
	}
}
