// Command resolver-go is test/apps/resolver/resolver.c with Go's own resolver (a static binary:
// net.Resolver with PreferGo, as CGO_ENABLED=0 builds use), so that the lab can run the real Go
// resolver inside pods. The same command line and output:
//
//	resolver-go [--count N] [--every MS] [--family 4|6] [--time] [--idle] NAME...
//
// One line per lookup: "lookup NAME ok ADDR,..." or "lookup NAME error MESSAGE". --count N
// repeats the round of names N times (0 = forever), --every MS between rounds; --idle then
// waits for SIGTERM. --family 4 or 6 asks for one family only (A-only or AAAA-only lookups);
// --time ends each line with " took_us=N".
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

func main() {
	count := flag.Int("count", 1, "rounds of lookups (0: forever)")
	every := flag.Int("every", 0, "milliseconds between rounds")
	family := flag.Int("family", 0, "4 or 6: one address family only")
	timed := flag.Bool("time", false, "end each line with took_us=N")
	idle := flag.Bool("idle", false, "then wait for SIGTERM")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	network := map[int]string{4: "ip4", 6: "ip6"}[*family]
	if network == "" {
		network = "ip"
	}
	r := &net.Resolver{PreferGo: true}
	for round := 0; (*count == 0 || round < *count) && ctx.Err() == nil; round++ {
		for _, name := range flag.Args() {
			lookup(ctx, r, network, name, *timed)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(*every) * time.Millisecond):
		}
	}
	if *idle {
		<-ctx.Done()
	}
}

func lookup(ctx context.Context, r *net.Resolver, network, name string, timed bool) {
	start := time.Now()
	ips, err := r.LookupIP(ctx, network, name)
	took := ""
	if timed {
		took = fmt.Sprintf(" took_us=%d", time.Since(start).Microseconds())
	}
	if err != nil {
		fmt.Printf("lookup %s error %v%s\n", name, err, took)
		return
	}
	s := make([]string, len(ips))
	for i, ip := range ips {
		s[i] = ip.String()
	}
	fmt.Printf("lookup %s ok %s%s\n", name, strings.Join(s, ","), took)
}
