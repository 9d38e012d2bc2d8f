package probes

import (
	"context"
	"encoding/binary"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// echoSocket sends numbered requests and receives numbered answers with their arrival time.
type echoSocket interface {
	send(seq int) (time.Time, error)
	// recv waits up to the socket's receive timeout; ok is false for a timeout or a datagram
	// that is not an answer of ours.
	recv(buf, oob []byte) (seq int, at time.Time, source string, ok bool, err error)
}

// echoRounds sends spec.Count requests at spec.Interval and receives the answers on a thread of
// their own, blocked in recvmsg. bySeq holds each request's round trip, from just before the
// send to the arrival time stamp (-1: no answer within spec.Timeout).
func echoRounds(ctx context.Context, spec RTTSpec, s echoSocket) (sent int, bySeq []time.Duration, source string, err error) {
	sentAt := make([]time.Time, spec.Count)
	bySeq = make([]time.Duration, spec.Count)
	for i := range bySeq {
		bySeq[i] = -1
	}
	var mu sync.Mutex
	got := 0
	sendsDone := make(chan struct{})
	recvDone := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		buf, oob := make([]byte, UDPMaxDatagram), make([]byte, 128)
		var deadline time.Time
		for {
			select {
			case <-ctx.Done():
				recvDone <- ctx.Err()
				return
			case <-sendsDone:
				if deadline.IsZero() {
					deadline = time.Now().Add(spec.Timeout)
				}
			default:
			}
			mu.Lock()
			all := got == spec.Count
			mu.Unlock()
			if all || (!deadline.IsZero() && time.Now().After(deadline)) {
				recvDone <- nil
				return
			}
			seq, at, src, ok, err := s.recv(buf, oob)
			if err != nil {
				recvDone <- err
				return
			}
			if !ok || seq < 0 || seq >= spec.Count {
				continue
			}
			mu.Lock()
			if !sentAt[seq].IsZero() && bySeq[seq] < 0 {
				if d := at.Sub(sentAt[seq]); d >= 0 && d <= spec.Timeout {
					bySeq[seq], source = d, src
					got++
				}
			}
			mu.Unlock()
		}
	}()
	tick := time.NewTicker(spec.Interval)
	var sendErr error
	for ; sent < spec.Count; sent++ {
		if sent > 0 {
			select {
			case <-ctx.Done():
			case <-tick.C:
			}
			if ctx.Err() != nil {
				break
			}
		}
		mu.Lock()
		t, err := s.send(sent)
		sentAt[sent] = t
		mu.Unlock()
		if err != nil {
			sendErr = err
			break
		}
	}
	tick.Stop()
	close(sendsDone)
	if err := <-recvDone; err != nil {
		return sent, nil, "", err
	}
	return sent, bySeq, source, sendErr
}

// answered lists the round trips that came back, in sequence order.
func answered(bySeq []time.Duration) []time.Duration {
	var out []time.Duration
	for _, d := range bySeq {
		if d >= 0 {
			out = append(out, d)
		}
	}
	return out
}

// ReceivedAt reads the kernel's receive time stamp (SO_TIMESTAMPNS) from a message's control
// data, or falls back to now.
func ReceivedAt(oob []byte, now time.Time) (time.Time, string) {
	if t, ok := kernelStamp(oob, unix.SCM_TIMESTAMPNS); ok {
		return t, TimestampsKernel
	}
	return now, TimestampsUserspace
}

// TransmitStamp reads the kernel's software transmit time stamp (SO_TIMESTAMPING, from the
// error queue) from a message's control data.
func TransmitStamp(oob []byte) (time.Time, bool) { return kernelStamp(oob, unix.SCM_TIMESTAMPING) }

// kernelStamp reads the first time stamp of control message type typ (a timespec).
func kernelStamp(oob []byte, typ int32) (time.Time, bool) {
	cmsgs, err := unix.ParseSocketControlMessage(oob)
	if err != nil {
		return time.Time{}, false
	}
	for _, c := range cmsgs {
		if c.Header.Level == unix.SOL_SOCKET && c.Header.Type == typ && len(c.Data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(c.Data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(c.Data[8:16]))
			return time.Unix(sec, nsec), sec != 0 || nsec != 0
		}
	}
	return time.Time{}, false
}
