//go:build !linux

package probes

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// ICMPRTT is implemented on Linux only, where the agent runs.
func ICMPRTT(context.Context, RTTSpec) (*RTTResult, error) {
	return nil, errors.New("the ICMP probe runs on Linux only")
}

func handshakeRTT(*net.TCPConn) (time.Duration, bool) { return 0, false }

// UDPSpec configures the UDP probe (Linux only).
type UDPSpec struct {
	RTTSpec
	Size int
	Key  []byte
}

// UDPRTT is implemented on Linux only, where the agent runs.
func UDPRTT(context.Context, UDPSpec) (*RTTResult, error) {
	return nil, errors.New("the UDP probe runs on Linux only")
}

// PathMTU is implemented on Linux only, where the agent runs.
func PathMTU(context.Context, string, []byte, time.Duration) (*PMTUResult, error) {
	return nil, errors.New("the path-MTU probe runs on Linux only")
}

// InterfaceMTU is implemented on Linux only, where the agent runs.
func InterfaceMTU(net.IP) int { return 0 }

// MaxLoadedSeconds bounds a loaded-rtt probe's load.
const MaxLoadedSeconds = 60

// LoadedSpec configures a loaded-rtt probe (Linux only).
type LoadedSpec struct {
	UDP    UDPSpec
	Load   ThroughputSpec
	WarmUp time.Duration
}

// LoadedRTT is implemented on Linux only, where the agent runs.
func LoadedRTT(context.Context, LoadedSpec) (*v1alpha1.LoadedResult, error) {
	return nil, errors.New("the loaded-rtt probe runs on Linux only")
}
