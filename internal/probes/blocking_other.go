//go:build !linux

package probes

import (
	"errors"
	"net"
	"time"
)

// blockingSocket is Linux's; elsewhere the rate probes wait in Go's network poller.
type blockingSocket struct{ deadline time.Time }

var errNoSocket = errors.New("blocking sockets on Linux only")

// SocketCloser is a connection that can close its descriptor apart from the rest of it.
type SocketCloser interface{ CloseSocket() error }

func detach(net.Conn, time.Duration) (*blockingSocket, error) { return nil, errNoSocket }

func (*blockingSocket) Read([]byte) (int, error)  { return 0, errNoSocket }
func (*blockingSocket) Write([]byte) (int, error) { return 0, errNoSocket }
func (*blockingSocket) interrupt()                {}
func (*blockingSocket) readBy(time.Time) error    { return errNoSocket }
func (*blockingSocket) close()                    {}
