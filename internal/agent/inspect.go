package agent

import (
	"encoding/json"
	"net"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Inspection is what `agent inspect` reports about the network namespace and files it sees.
type Inspection struct {
	APIVersion string   `json:"apiVersion"`
	Hostname   string   `json:"hostname"`
	Addresses  []string `json:"addresses"`
	ResolvConf string   `json:"resolvConf"`
	UID        int      `json:"uid"`
}

// Inspect reads the hostname, the non-loopback addresses and /etc/resolv.conf.
func Inspect() (Inspection, error) {
	in := Inspection{APIVersion: APIVersion, UID: os.Getuid()}
	in.Hostname, _ = os.Hostname()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return in, err
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && !ipn.IP.IsLoopback() {
			in.Addresses = append(in.Addresses, ipn.IP.String())
		}
	}
	b, err := os.ReadFile("/etc/resolv.conf")
	if err != nil && !os.IsNotExist(err) {
		return in, err
	}
	in.ResolvConf = string(b)
	return in, nil
}

func newInspectCommand(streams genericiooptions.IOStreams) *cobra.Command {
	var idle bool
	cmd := &cobra.Command{
		Use:   "inspect",
		Short: "Print the addresses, hostname and resolv.conf this container sees, as JSON",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			in, err := Inspect()
			if err != nil {
				return err
			}
			if err := json.NewEncoder(streams.Out).Encode(in); err != nil {
				return err
			}
			if idle {
				ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGTERM, os.Interrupt)
				defer stop()
				<-ctx.Done()
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&idle, "idle", false, "then wait for SIGTERM (to keep a pod running)")
	return cmd
}
