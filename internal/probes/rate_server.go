package probes

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"sync/atomic"
	"time"
)

// rateFirst is every connection's first answer (the acceptance, then a response of zeros) and,
// from its second byte, every later response: one read-only buffer all connections share.
var rateFirst = append([]byte{sinkAccepted}, make([]byte, MaxRateBytes)...)

// rateIdle is how long the server waits for a connection's next request (detached: each
// read(2) waits that long at most, so a token holder trickling its request holds it up to
// twice as long).
const rateIdle = 10 * time.Second

// servingRate counts the rate connections the process serves at the moment, past their hello.
var servingRate atomic.Int64

// errNotAlone is why a rate connection served beside others stays in the poller.
var errNotAlone = errors.New("other rate connections are served at the same time")

// ServeRate is the server side of one tcp-rr or tcp-crr connection whose RateMagic has
// already been read from r (r wraps c). admit decides whether the connection is let in, as
// for ServeThroughput; then each request of the hello's size is answered with a response of
// its size, the first behind one byte of acceptance, until the client closes or ctx ends. From
// the third on (a tcp-crr connection has one), the requests of a connection the process serves
// alone are waited for in blocking reads (blockingSocket), as the client's tcp-rr of one
// connection does; with several (a tcp-rr of several connections, a matrix agent's peers at
// once) all of them stay in the poller, as their clients do, so that none is served faster.
func ServeRate(ctx context.Context, c net.Conn, r *bufio.Reader, admit func(token string) error) error {
	defer c.Close()
	closeAtEnd := context.AfterFunc(ctx, func() { c.Close() })
	defer closeAtEnd()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	req, resp, err := readRateHello(r, c, admit)
	if err != nil {
		return err
	}
	servingRate.Add(1)
	defer servingRate.Add(-1)
	out := rateFirst[1 : 1+resp]
	poller := func() { _ = c.SetDeadline(time.Now().Add(rateIdle)) }
	// The first answer: acceptance and response in one segment.
	if eof, err := answer(r, c, req, rateFirst[:1+resp], 1, poller); eof || err != nil {
		return err
	}
	if eof, err := answer(r, c, req, out, 1, poller); eof || err != nil {
		return err
	}
	var bs *blockingSocket
	err = errNotAlone
	if servingRate.Load() == 1 {
		bs, err = detach(c, rateIdle)
	}
	if err != nil { // in Go's network poller
		_, err := answer(r, c, req, out, -1, poller)
		return err
	}
	defer bs.close()
	stop := context.AfterFunc(ctx, bs.interrupt)
	defer stop()
	// What the client sent behind its last request is in r already.
	r = bufio.NewReaderSize(io.MultiReader(io.LimitReader(r, int64(r.Buffered())), bs), r.Size())
	_, err = answer(r, bs, req, out, -1, func() { bs.deadline = time.Now().Add(rateIdle) })
	return err
}

// answer answers n requests (n < 0: every one) of req bytes read from r with out, or fewer
// if the client closes first (eof). Reads and writes both have a deadline, renewed by deadline
// before each request: a client that stops reading its answers does not hold the connection
// (and its slot) past rateIdle.
func answer(r *bufio.Reader, w io.Writer, req int, out []byte, n int, deadline func()) (eof bool, err error) {
	for ; n != 0; n-- {
		deadline()
		if _, err := r.Discard(req); err != nil {
			return errors.Is(err, io.EOF), ignoreEOF(err)
		}
		if _, err := w.Write(out); err != nil {
			return false, err
		}
	}
	return false, nil
}

func ignoreEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// readRateHello reads a hello's token and sizes and lets admit decide; a refusal is answered
// with its reason.
func readRateHello(r *bufio.Reader, c net.Conn, admit func(string) error) (req, resp int, err error) {
	if err := readToken(r, c, admit); err != nil {
		return 0, 0, fmt.Errorf("rate connection: %w", err)
	}
	var sizes [8]byte
	if _, err := io.ReadFull(r, sizes[:]); err != nil {
		return 0, 0, err
	}
	req, resp = int(binary.BigEndian.Uint32(sizes[:])), int(binary.BigEndian.Uint32(sizes[4:]))
	if req < 1 || req > MaxRateBytes || resp < 1 || resp > MaxRateBytes {
		return 0, 0, fmt.Errorf("rate hello: request %d and response %d bytes: want 1-%d each", req, resp, MaxRateBytes)
	}
	return req, resp, nil
}
