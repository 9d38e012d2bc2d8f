package agent

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// NewCommand returns the `agent` command with its `serve` and `run` subcommands. The plugin
// mounts it hidden; the lean agent binary uses it as its root.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:           "agent",
		Short:         "The in-pod measuring agent (started by kubectl netbench, not by hand)",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(*cobra.Command, []string) {
			LimitProcs()
			limitMemory()
		},
	}
	cmd.AddCommand(newServeCommand(streams), newRunCommand(streams), newInspectCommand(streams))
	return cmd
}

func newServeCommand(streams genericiooptions.IOStreams) *cobra.Command {
	o := ServeOptions{}
	var deadline time.Duration
	var notAfterArg string
	var idleWhenDone bool
	var tokenFile string
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve HTTP, gRPC and the throughput sink on one port until done or the deadline",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			em := NewEmitter(streams.Out)
			var err error
			switch {
			case tokenFile != "" && (o.Token != "" || o.TokenSHA256 != ""):
				err = errors.New("--token-file, --token and --token-sha256 exclude each other")
			case tokenFile != "":
				o.Token, err = ReadTokenFile(tokenFile)
			case o.Token == "":
				o.Token = os.Getenv(TokenEnv)
			}
			if err == nil {
				o.NotAfter, err = notAfter(notAfterArg, deadline, time.Now())
			}
			if err == nil {
				err = serve(cmd.Context(), o, idleWhenDone, em)
			}
			if err != nil {
				em.Emit(Event{Type: EventError, Message: err.Error()})
			}
			return err
		},
	}
	cmd.Flags().StringVar(&o.Listen, "listen", ":0", "address to listen on (port 0 picks a free port)")
	cmd.Flags().StringSliceVar(&o.IPs, "ip", nil, "listen on these addresses (comma-separated: a dual-stack pod's of each family) at --listen's port, instead of --listen's address")
	cmd.Flags().StringVar(&o.Token, "token", "", "the run token clients must present (default $"+TokenEnv+")")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "read the token from this file (mode 600; kubectl netbench token makes one): an agent outside the cluster, for path SRC agent://HOST:PORT --token-file")
	cmd.Flags().StringVar(&o.TokenSHA256, "token-sha256", "", "accept clients whose token has this hex SHA-256 (the plugin's way: the token stays out of the pod spec)")
	cmd.Flags().DurationVar(&deadline, "deadline", 5*time.Minute, "exit after this long whatever happens")
	cmd.Flags().StringVar(&notAfterArg, "not-after", "", "exit at this RFC 3339 time whatever happens (wins over --deadline)")
	cmd.Flags().StringVar(&o.Identity.Pod, "pod", "", "the pod this server runs in, answered on "+PathWhoAmI)
	cmd.Flags().StringVar(&o.Identity.Node, "node", "", "its node, answered on "+PathWhoAmI)
	cmd.Flags().StringVar(&o.Identity.Zone, "zone", "", "its zone, answered on "+PathWhoAmI)
	cmd.Flags().Var(trustFlag{&o.Limits.Trusted}, "trust", "trust these source addresses from the start (the API server's, comma-separated): strangers' bounds never count them; they still present the token")
	cmd.Flags().BoolVar(&o.Jobs, "jobs", false, "also run jobs token holders post to "+PathJob+", one at a time (an agent that serves its peers and measures them)")
	cmd.Flags().DurationVar(&o.Lease, "lease", 0, "stop serving unless "+PathLease+" is posted within each such period (0: no lease)")
	cmd.Flags().BoolVar(&idleWhenDone, "idle-when-done", false, "once done (lease expired, not-after passed, told done), close the port and wait for SIGTERM instead of exiting; started after --not-after, wait at once (for pods that always restart: a DaemonSet's)")
	return cmd
}

// serve runs the server until o.NotAfter at the latest (the process exits ExitGrace after it
// if the server has not returned). With idleWhenDone, a server whose run is over idles instead
// of returning, and one started after its not-after time idles at once.
func serve(ctx context.Context, o ServeOptions, idleWhenDone bool, em *Emitter) error {
	if !time.Now().Before(o.NotAfter) {
		if idleWhenDone {
			idle(ctx, em, ErrTooLate.Error())
			return nil
		}
		return ErrTooLate // before the hard exit is armed: past its time, it would fire at once
	}
	stop := hardExit(o.NotAfter, em)
	err := Serve(ctx, o, em)
	stop()
	switch {
	case !idleWhenDone || ctx.Err() != nil:
		return err
	case errors.Is(err, ErrTooLate):
		idle(ctx, em, err.Error())
		return nil
	case err != nil:
		return err
	}
	idle(ctx, em, "the server has stopped")
	return nil
}

func newRunCommand(streams genericiooptions.IOStreams) *cobra.Command {
	var jobArg, notAfterArg, listen, digest string
	var trusted []netip.Addr
	var deadline, await time.Duration
	cmd := &cobra.Command{
		Use:   "run --job JSON|-|@FILE",
		Short: "Run a job of probes and print JSON-lines events",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			em := NewEmitter(streams.Out)
			end, err := notAfter(notAfterArg, deadline, time.Now())
			if err == nil && !time.Now().Before(end) {
				err = ErrTooLate
			}
			if err != nil {
				em.Emit(Event{Type: EventError, Message: err.Error()})
				return err
			}
			defer hardExit(end, em)()
			ctx, cancel := context.WithDeadline(cmd.Context(), end)
			defer cancel()
			var job Job
			if await > 0 {
				var stopped <-chan struct{}
				if job, stopped, err = AwaitJob(ctx, listen, digest, await, em, trusted...); errors.Is(err, ErrStoppedBeforeJob) {
					em.Emit(Event{Type: EventExit, Message: err.Error()})
					return nil
				}
				ctx = cancelOn(ctx, stopped)
			} else if job, err = readJob(jobArg, streams.In); err == nil && job.Token == "" {
				job.Token = os.Getenv(TokenEnv)
			}
			if err != nil {
				em.Emit(Event{Type: EventError, Message: err.Error()})
				return err
			}
			err = Run(ctx, job, em)
			if err == nil {
				em.Emit(Event{Type: EventExit, Message: "job finished"})
			}
			return err
		},
	}
	cmd.Flags().StringVar(&jobArg, "job", "-", "the job: JSON, - for stdin, or @FILE")
	cmd.Flags().DurationVar(&await, "await-job", 0, "instead of --job, wait this long for the plugin to post the job to "+PathJob+" on --listen")
	cmd.Flags().StringVar(&listen, "listen", ":0", "with --await-job: the address to listen on")
	cmd.Flags().StringVar(&digest, "token-sha256", "", "with --await-job: accept the job from the holder of the token with this hex SHA-256")
	cmd.Flags().Var(trustFlag{&trusted}, "trust", "with --await-job: trust these source addresses from the start (the API server's); they still present the token")
	cmd.Flags().DurationVar(&deadline, "deadline", 10*time.Minute, "give up after this long whatever happens")
	cmd.Flags().StringVar(&notAfterArg, "not-after", "", "give up at this RFC 3339 time whatever happens (wins over --deadline)")
	return cmd
}

// ErrStoppedDuringJob means the plugin said to stop (PathDone) while a job that listens for it ran.
var ErrStoppedDuringJob = errors.New("told to stop during the job")

// cancelOn is ctx, cancelled with ErrStoppedDuringJob when stopped closes (never for nil).
func cancelOn(ctx context.Context, stopped <-chan struct{}) context.Context {
	if stopped == nil {
		return ctx
	}
	c, cancel := context.WithCancelCause(ctx)
	go func() {
		select {
		case <-stopped:
			cancel(ErrStoppedDuringJob)
		case <-c.Done():
		}
	}()
	return c
}

func readJob(arg string, in io.Reader) (Job, error) {
	var data []byte
	var err error
	switch {
	case arg == "-":
		data, err = io.ReadAll(io.LimitReader(in, 1<<20))
	case strings.HasPrefix(arg, "@"):
		data, err = readSmallFile(arg[1:], 1<<20)
	default:
		data = []byte(arg)
	}
	if err != nil {
		return Job{}, fmt.Errorf("reading the job: %w", err)
	}
	return decodeJob(data)
}

// decodeJob reads a job strictly: unknown fields are refused.
func decodeJob(data []byte) (Job, error) {
	var job Job
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&job); err != nil {
		return Job{}, fmt.Errorf("decoding the job: %w", err)
	}
	return job, nil
}
