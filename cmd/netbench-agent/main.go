// Command netbench-agent is the lean in-pod agent: the probes and the agent runtime, without
// the Kubernetes client code of the plugin, so that its image stays small.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"

	// The agent image has no root certificates of its own: an egress probe to https:// verifies
	// against the Mozilla roots this package embeds (used only where the system has none).
	_ "golang.org/x/crypto/x509roots/fallback"
)

// ProfileEnv names a file to write a CPU profile of the whole run to (pprof format), for
// profiling the agent where it runs (see benchmarks/notes/2026-12-01-lab-results.md).
const ProfileEnv = "NETBENCH_CPUPROFILE"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	cmd := agent.NewCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	cmd.Use = "netbench-agent"
	endProfile := profile(os.Getenv(ProfileEnv))
	err := cmd.ExecuteContext(ctx)
	endProfile()
	if err != nil {
		fmt.Fprintln(os.Stderr, "netbench-agent:", err)
		stop()
		os.Exit(1)
	}
}

// profile starts a CPU profile into path (none when empty) and returns what ends it.
func profile(path string) (end func()) {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "netbench-agent: %s: %v\n", ProfileEnv, err)
		return func() {}
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }
}
