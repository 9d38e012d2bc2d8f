package hostile

import (
	"fmt"
	"net"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// NetnsDialer dials from inside a network namespace (a pod's, say): one OS thread joins it and
// makes every connection; a socket stays in the namespace it was made in, whichever thread
// uses it afterwards.
type NetnsDialer struct {
	reqs chan dialReq
}

type dialReq struct {
	network, addr string
	reply         chan dialReply
}

type dialReply struct {
	c   net.Conn
	err error
}

// NewNetnsDialer joins the namespace at path (e.g. /run/netns/NAME or /proc/PID/ns/net) on a
// thread of its own until Close.
func NewNetnsDialer(path string) (*NetnsDialer, error) {
	d := &NetnsDialer{reqs: make(chan dialReq)}
	ready := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		f, err := os.Open(path)
		if err == nil {
			err = unix.Setns(int(f.Fd()), unix.CLONE_NEWNET)
			f.Close()
		}
		ready <- err
		if err != nil {
			return
		}
		dialer := net.Dialer{Timeout: time.Second}
		for r := range d.reqs {
			c, err := dialer.Dial(r.network, r.addr)
			r.reply <- dialReply{c, err}
		}
	}()
	if err := <-ready; err != nil {
		return nil, fmt.Errorf("joining the network namespace %s: %w", path, err)
	}
	return d, nil
}

// Dial connects from inside the namespace.
func (d *NetnsDialer) Dial(network, addr string) (net.Conn, error) {
	r := dialReq{network: network, addr: addr, reply: make(chan dialReply, 1)}
	d.reqs <- r
	rep := <-r.reply
	return rep.c, rep.err
}

// Close ends the namespace's thread.
func (d *NetnsDialer) Close() { close(d.reqs) }
