package dns

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil/cmdtest"
	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
)

// --dry-run -o yaml sends the agent (and the capture agent of --observe) with dryRun=All as
// patches of the pod, prints them and creates nothing.
func TestDNSDryRun(t *testing.T) {
	f := fakecluster.New(t, fakecluster.TwoPods()...)
	out := &strings.Builder{}
	o := NewDNSOptions(nil, fakecluster.GenericStreamsTo(out))
	cmdtest.UseCluster(f, &o.CommonOptions)
	o.TargetArg, o.Names = "web-1", []string{"example.com"}
	o.DryRun, o.Output, o.Observe = true, "yaml", 5*time.Second
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	want := []string{"patch pods/ephemeralcontainers Pod shop/web-1", "patch pods/ephemeralcontainers Pod shop/web-1"}
	if diff := cmp.Diff(want, cmdtest.DryRunObjects(t, f, out.String())); diff != "" {
		t.Errorf("objects (-want +got):\n%s\n%s", diff, out)
	}
}
