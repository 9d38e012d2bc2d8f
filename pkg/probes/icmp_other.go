//go:build !linux

package probes

import (
	"context"
	"errors"
	"net"
	"time"
)

// ICMPRTT is implemented on Linux only, where the agent runs.
func ICMPRTT(context.Context, RTTSpec) (*RTTResult, error) {
	return nil, errors.New("the ICMP probe runs on Linux only")
}

func handshakeRTT(*net.TCPConn) (time.Duration, bool) { return 0, false }
