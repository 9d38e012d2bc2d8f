package ladder

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil/cmdtest"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// --dry-run -o yaml sends the server and every round's client of every rung with dryRun=All,
// prints them and creates nothing; nothing waits for an agent.
func TestLadderDryRun(t *testing.T) {
	for mode, server := range map[string]string{
		session.ModeEphemeral: "patch pods/ephemeralcontainers Pod shop/web-1",
		session.ModePod:       "create Pod shop/netbench-run1-server",
	} {
		t.Run(mode, func(t *testing.T) {
			f := ladderCluster(t)
			o, out := newTestLadderOptions(f)
			o.Mode, o.Rounds, o.DryRun, o.Output = mode, 2, true, "yaml"
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := o.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			want := []string{server,
				"create Pod shop/netbench-run1-client-1-1", "create Pod shop/netbench-run1-client-3-1",
				"create Pod shop/netbench-run1-client-1-2", "create Pod shop/netbench-run1-client-3-2"}
			if diff := cmp.Diff(want, cmdtest.DryRunObjects(t, f, out.String())); diff != "" {
				t.Errorf("objects (-want +got):\n%s\n%s", diff, out)
			}
		})
	}
}
