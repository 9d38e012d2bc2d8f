package render

import (
	"fmt"
	"io"
	"net"
	"strings"
	"text/tabwriter"

	"github.com/kubectl-netbench/kubectl-netbench/internal/report"
	"github.com/kubectl-netbench/kubectl-netbench/pkg/api/v1alpha1"
)

// writeEgress writes what a client measured of a destination with no agent on its far side:
// each phase's latency on new connections, the first byte on a reused one, TLS and addresses.
func writeEgress(w io.Writer, r *v1alpha1.ProbeResult) {
	e := r.Egress
	over := strings.Join(nonEmpty(e.Protocol, e.Scheme), " over ")
	if e.ICMP != nil {
		over = "ICMP echo"
	}
	if e.GRPCStatus != "" {
		over = map[bool]string{true: "gRPC over TLS", false: "gRPC, plaintext"}[e.TLS != nil]
	}
	fmt.Fprintf(w, "\nEgress to %s (%s, %s), from the agent's network and resolver\n", e.Target, over, hostPort(e.Host, e.Port))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tsamples\tmin\tp50\tavg\tp99\tmax\t")
	row := func(name string, l *v1alpha1.Latency) {
		if l == nil || l.Count == 0 {
			return
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t\n", name, l.Count, report.Micros(l.MinMicros), report.Micros(l.P50Micros),
			report.Micros(l.AvgMicros), report.Micros(l.P99Micros), report.Micros(l.MaxMicros))
	}
	row("dns lookup", e.DNS)
	if e.ICMP != nil {
		row("icmp echo", &e.ICMP.RTT)
	}
	row("tcp connect", &e.Connect)
	if e.TLS != nil {
		row("tls handshake", &e.TLS.Latency)
	}
	answer, from := "first byte", "first byte from the request's start (lookup, connect and handshake included, as curl's time_starttransfer)"
	if e.GRPCStatus != "" {
		answer, from = "answer", "a health check's answer from the call's start (lookup, connect, handshake and HTTP/2 settings included)"
	}
	row(answer+", new connection", e.FirstByteNew)
	row(answer+", reused connection", e.FirstByteReused)
	tw.Flush()
	if i := e.ICMP; i != nil {
		fmt.Fprintf(w, "  %s: %d of %d echo requests answered (%.1f %% lost), %.0f ms apart, %s socket, %s time stamps (as iputils ping); %d lookups before them; percentiles exact (nearest rank)\n",
			report.Marked(r), i.Received, i.Sent, i.LossPercent, i.IntervalMillis, i.Method, i.Timestamps, countOf(e.DNS))
	} else {
		fmt.Fprintf(w, "  %s; each phase timed alone, but %s; percentiles exact (nearest rank), nanosecond clock\n",
			report.Marked(r)+": "+fmt.Sprint(e.NewConnections)+" new connections, each with its own lookup", from)
	}
	reached := "connected to"
	if e.ICMP != nil {
		reached = "echo requests to"
	}
	switch {
	case len(e.Addresses) > 0:
		fmt.Fprintf(w, "  %s resolved to %s; %s %s\n", e.Host, strings.Join(e.Addresses, ", "), reached, e.RemoteAddress)
	case e.RemoteAddress != "":
		fmt.Fprintf(w, "  %s %s\n", reached, e.RemoteAddress)
	}
	if t := e.TLS; t != nil {
		verified := "verified against the agent's roots"
		if !t.Verified {
			verified = "NOT verified"
		}
		fmt.Fprintf(w, "  TLS: %s, %s, server name %s, chain %s (%s)\n", t.Version, t.Cipher, t.ServerName, strings.Join(t.Chain, " ← "), verified)
	}
	if e.Status != 0 {
		fmt.Fprintf(w, "  HTTP status %d\n", e.Status)
	}
	if e.GRPCStatus != "" {
		fmt.Fprintf(w, "  gRPC health check (grpc.health.v1.Health/Check of the whole server): %s\n", e.GRPCStatus)
	}
	if e.NotReused != "" {
		fmt.Fprintf(w, "  no reused-connection figures: %s\n", e.NotReused)
	}
	if e.SeenSource != "" {
		fmt.Fprintf(w, "  the far side saw the requests come from %s\n", e.SeenSource)
	}
	if d := e.Download; d != nil {
		writeDownload(w, d)
	}
}

// hostPort is host and port joined, or host alone when it has no port (icmp).
func hostPort(host, port string) string {
	if port == "" {
		return host
	}
	return net.JoinHostPort(host, port)
}

// downloadEnded says in words what ended a download.
var downloadEnded = map[string]string{"end": "the body's end", "limit": "the 1 GiB limit", "duration": "the time --download allowed"}

// writeDownload writes a download's rate, bytes and times, or why it failed.
func writeDownload(w io.Writer, d *v1alpha1.EgressDownload) {
	if d.Error != "" {
		fmt.Fprintf(w, "  download FAILED after %.3f s: %s\n", d.TotalSeconds, d.Error)
		return
	}
	rate := "no rate"
	if d.BitsPerSecond > 0 {
		rate = Bits(d.BitsPerSecond)
	}
	to := "the last"
	if d.Ended == "duration" {
		to = "the end of the time allowed"
	}
	fmt.Fprintf(w, "  download, one more request on a new connection (%s): %s — %d bytes in %.3f s from the first byte to %s (%.3f s from the request's start); ended by %s\n",
		d.Protocol, rate, d.Bytes, d.Seconds, to, d.TotalSeconds, downloadEnded[d.Ended])
	if d.Note != "" {
		fmt.Fprintf(w, "  download: %s\n", d.Note)
	}
}

func countOf(l *v1alpha1.Latency) int64 {
	if l == nil {
		return 0
	}
	return l.Count
}

func nonEmpty(s ...string) []string {
	var out []string
	for _, x := range s {
		if x != "" {
			out = append(out, x)
		}
	}
	return out
}
