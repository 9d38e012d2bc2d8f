package probes

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"time"
)

// rateFirst is every connection's first answer (the acceptance, then a response of zeros) and,
// from its second byte, every later response: one read-only buffer all connections share.
var rateFirst = append([]byte{sinkAccepted}, make([]byte, MaxRateBytes)...)

// rateIdle is how long the server waits for a connection's next request.
const rateIdle = 10 * time.Second

// ServeRate is the server side of one tcp-rr or tcp-crr connection whose RateMagic has
// already been read from r (r wraps c). admit decides whether the connection is let in, as
// for ServeThroughput; then each request of the hello's size is answered with a response of
// its size, the first behind one byte of acceptance, until the client closes.
func ServeRate(c net.Conn, r *bufio.Reader, admit func(token string) error) error {
	defer c.Close()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	req, resp, err := readRateHello(r, c, admit)
	if err != nil {
		return err
	}
	out := rateFirst[:1+resp] // the first answer: acceptance and response in one segment
	for {
		// Reads and writes both: a client that stops reading its answers does not hold the
		// connection (and its slot) past rateIdle.
		_ = c.SetDeadline(time.Now().Add(rateIdle))
		if _, err := r.Discard(req); err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
		if _, err := c.Write(out); err != nil {
			return err
		}
		out = rateFirst[1 : 1+resp]
	}
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
