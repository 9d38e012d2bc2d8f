package reftools

import (
	"bufio"
	"bytes"
	"math"
	"regexp"
	"strconv"
	"time"
)

// Replies are iputils ping's round trips in µs, by the time stamp ping printed with each.
type Replies map[time.Time]float64

// PingDuring runs iputils ping to addr every interval (each reply time-stamped, -D) while
// during runs, and returns its replies: a reference taken alongside a probe, over the same
// time, rather than before or after it.
func PingDuring(run Runner, addr string, interval time.Duration, during func()) (Replies, error) {
	var out bytes.Buffer
	cmd := run("ping", "-D", "-n", "-i", strconv.FormatFloat(interval.Seconds(), 'f', 3, 64), addr)
	cmd.Stdout = &out
	cmd.WaitDelay = time.Second // a child left holding the output does not hold the caller
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	during()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	replies := Replies{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		m := pingStamped.FindStringSubmatch(sc.Text())
		if m == nil {
			continue
		}
		at, err1 := strconv.ParseFloat(m[1], 64)
		ms, err2 := strconv.ParseFloat(m[2], 64)
		if err1 == nil && err2 == nil {
			replies[time.Unix(0, int64(at*1e9))] = ms * 1000
		}
	}
	return replies, nil
}

var pingStamped = regexp.MustCompile(`^\[([\d.]+)\].*time=([\d.]+) ms`)

// Between is the median of the replies stamped within [from, until] and how many there were
// (NaN and 0 when none).
func (r Replies) Between(from, until time.Time) (float64, int) {
	var vs []float64
	for at, v := range r {
		if !at.Before(from) && !at.After(until) {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return math.NaN(), 0
	}
	return Median(vs), len(vs)
}
