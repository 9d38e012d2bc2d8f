//go:build linux

package probes

import (
	"context"
	"fmt"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

func (s *streamState) sampleTCPInfo() {
	info := s.tcpInfo()
	if info == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.acked = int64(info.Bytes_acked)
	s.samples++
	s.rttSum += float64(info.Rtt)
	if c := int64(info.Snd_cwnd) * int64(info.Snd_mss); c > s.maxCwnd {
		s.maxCwnd = c
	}
	s.mss = int64(info.Snd_mss)
	s.retrans = int64(info.Total_retrans)
	s.retransBytes = int64(info.Bytes_retrans)
}

// markAcked records the bytes the receiver has acknowledged so far (the hello): the
// stream's delivery is counted from here.
func (s *streamState) markAcked() {
	if info := s.tcpInfo(); info != nil {
		s.ackedAtStart = int64(info.Bytes_acked)
	}
}

// tcpInfo reads the stream's TCP_INFO (nil when it cannot).
func (s *streamState) tcpInfo() *unix.TCPInfo {
	var info *unix.TCPInfo
	var gerr error
	if err := s.raw.Control(func(fd uintptr) {
		info, gerr = unix.GetsockoptTCPInfo(int(fd), unix.IPPROTO_TCP, unix.TCP_INFO)
	}); err != nil || gerr != nil {
		return nil
	}
	return info
}

// sendAll writes to every stream until end, iperf3-style: one OS thread writes to each socket
// in turn without blocking and waits in poll(2) only when every socket is full. This costs less
// CPU per byte than one goroutine per stream, and keeps the streams fair.
func sendAll(ctx context.Context, streams []*streamState, end time.Time) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	buf := make([]byte, throughputBufSize)
	fds := make([]int, len(streams))
	for i, s := range streams {
		if err := s.raw.Control(func(fd uintptr) { fds[i] = int(fd) }); err != nil {
			return err
		}
	}
	pfds := make([]unix.PollFd, len(fds))
	for {
		now := time.Now()
		if !now.Before(end) || ctx.Err() != nil {
			return nil
		}
		progress := false
		for i, fd := range fds {
			n, err := unix.Write(fd, buf)
			if n > 0 {
				streams[i].sent.Add(int64(n))
				progress = true
			}
			if err != nil && err != unix.EAGAIN && err != unix.EINTR {
				return fmt.Errorf("throughput stream %d: %w", i+1, err)
			}
		}
		if progress {
			continue
		}
		for i, fd := range fds {
			pfds[i] = unix.PollFd{Fd: int32(fd), Events: unix.POLLOUT}
		}
		wait := time.Until(end)
		if wait > 100*time.Millisecond {
			wait = 100 * time.Millisecond // re-check ctx now and then
		}
		if _, err := unix.Poll(pfds, int(wait/time.Millisecond)+1); err != nil && err != unix.EINTR {
			return err
		}
	}
}
