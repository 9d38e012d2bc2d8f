package cmd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-netbench/kubectl-netbench/internal/agent"
)

// newTokenCommand makes the token an agent outside the cluster and the plugin share.
func newTokenCommand(streams genericiooptions.IOStreams) *cobra.Command {
	var file string
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Make a fresh token for an agent outside the cluster (netbench-agent serve --token-file, path SRC agent://HOST:PORT --token-file)",
		Long: `Make a fresh random token (256 bits, hex) for an agent outside the cluster: the agent serves
only clients that present it, and path hands it to the agent it starts in SRC's pod. Write it to a
new file of mode 600 (--file), copy that file to the outside host, and give both sides the file.`,
		Example: `  kubectl netbench token --file run.token
  scp run.token vm:   # then on vm: netbench-agent serve --listen :7443 --token-file run.token --deadline 1h
  kubectl netbench path deploy/shop agent://vm.example:7443 --token-file run.token`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			tok := agent.NewToken()
			if file == "" {
				_, err := fmt.Fprintln(streams.Out, tok)
				return err
			}
			f, err := os.OpenFile(file, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
			if errors.Is(err, fs.ErrExist) {
				return fmt.Errorf("--file %s: it exists: a token file is never overwritten", file)
			} else if err != nil {
				return fmt.Errorf("--file: %w", err)
			}
			_, err = fmt.Fprintln(f, tok)
			if err == nil {
				err = f.Sync()
			}
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				_ = os.Remove(file) // no half-written token is left
				return fmt.Errorf("--file %s: %w", file, err)
			}
			_, err = fmt.Fprintf(streams.ErrOut, "wrote a new token to %s (mode 600)\n", file)
			return err
		},
	}
	cmd.Flags().StringVar(&file, "file", "", "write the token to this new file (mode 600) instead of printing it")
	return cmd
}
