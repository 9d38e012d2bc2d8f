// Command kubectl-netbench is the kubectl plugin `kubectl netbench`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	_ "k8s.io/client-go/plugin/pkg/client/auth"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmd"
	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil"
)

func main() {
	// The first Ctrl-C cancels the run, which then cleans up under its own short deadlines; a
	// second one, once relaying has stopped, ends the process at once.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	root := cmd.NewRootCommand(genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr})
	if err := root.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "error:", err)
		stop()
		if errors.Is(err, cmdutil.ErrGateFailed) {
			os.Exit(cmdutil.ExitGateFailed)
		}
		os.Exit(1)
	}
}
