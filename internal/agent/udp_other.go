//go:build !linux

package agent

import (
	"context"
	"errors"
)

func serveUDP(context.Context, int, func() []byte) (func(), error) {
	return nil, errors.New("the UDP echo runs on Linux only")
}
