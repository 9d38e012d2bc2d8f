package probes

import (
	"context"
	"fmt"
	"io"
	"time"

	"fortio.org/fortio/fgrpc"
	"fortio.org/fortio/periodic"
	"google.golang.org/grpc/metadata"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// GRPCSpec configures a gRPC unary ping latency probe (fortio's ping service).
type GRPCSpec struct {
	// Address is host:port of a server serving fortio's PingServer service.
	Address     string
	QPS         float64
	Connections int
	Duration    time.Duration
	// Metadata is sent with every call (the agent's token goes here).
	Metadata map[string]string
}

// GRPCResult is v1alpha1.GRPCResult, a type of the reports' schema.
type GRPCResult = v1alpha1.GRPCResult

// GRPCLatency runs fortio's gRPC engine (unary Ping) against spec.Address.
func GRPCLatency(ctx context.Context, spec GRPCSpec) (*GRPCResult, error) {
	if spec.Address == "" {
		return nil, fmt.Errorf("grpc probe: no address")
	}
	if spec.Connections <= 0 {
		spec.Connections = 4
	}
	if spec.QPS <= 0 {
		spec.QPS = 100
	}
	if spec.Duration <= 0 {
		spec.Duration = 5 * time.Second
	}
	quietFortio()
	o := fgrpc.GRPCRunnerOptions{}
	o.Destination = spec.Address
	o.UsePing = true
	o.Streams = 1
	o.NumThreads = spec.Connections
	o.QPS = spec.QPS
	o.Uniform = true // the connections take turns, as in the http probe
	o.Duration = spec.Duration
	latency := RecordLatencies(&o.RunnerOptions)
	o.Out = io.Discard
	o.AllowInitialErrors = true
	// fortio's runner takes the aborter out of o (o.Stop = nil) when it starts: keep our own
	// reference, as the http probe does.
	stop := periodic.NewAborter()
	o.Stop = stop
	if len(spec.Metadata) > 0 {
		o.Metadata = metadata.New(spec.Metadata)
	}
	defer abortOnCancel(ctx, stop)()
	res, err := fgrpc.RunGRPCTest(&o)
	if ctx.Err() != nil {
		return nil, ctx.Err()
	}
	if err != nil {
		return nil, fmt.Errorf("grpc ping load on %s: %w", spec.Address, err)
	}
	r := &GRPCResult{
		Address:         spec.Address,
		Connections:     spec.Connections,
		RequestedQPS:    spec.QPS,
		AchievedQPS:     round3(res.ActualQPS),
		DurationSeconds: round3(res.ActualDuration.Seconds()),
		Latency:         latency(),
	}
	r.Requests = res.DurationHistogram.Count
	if err := sameCount(r.Latency, r.Requests); err != nil {
		return nil, fmt.Errorf("grpc ping load on %s: %w", spec.Address, err)
	}
	for kind, n := range res.RetCodes {
		if kind == "SERVING" {
			continue
		}
		if r.ErrorsByKind == nil {
			r.ErrorsByKind = map[string]int64{}
		}
		r.ErrorsByKind[kind] += n
		r.Errors += n
	}
	if r.Requests > 0 && r.Errors == r.Requests {
		return r, fmt.Errorf("grpc ping load on %s: all %d calls failed", spec.Address, r.Requests)
	}
	return r, nil
}

// PingService answers fortio's gRPC Ping: it echoes the message with the server's timestamp.
type PingService struct{}

// Ping implements fgrpc.PingServerServer.
func (PingService) Ping(_ context.Context, in *fgrpc.PingMessage) (*fgrpc.PingMessage, error) {
	return &fgrpc.PingMessage{Seq: in.GetSeq(), Ts: time.Now().UnixNano(), Payload: in.GetPayload()}, nil
}
