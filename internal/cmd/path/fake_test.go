package path

import (
	"io"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/cmdutil/cmdtest"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func newTestPathOptions(f *fakecluster.Cluster) (*PathOptions, *strings.Builder) {
	out := &strings.Builder{}
	o := NewPathOptions(nil, genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: io.Discard})
	cmdtest.UseCluster(f, &o.CommonOptions)
	o.SrcArg, o.DstArg = "client-1", "web-1"
	o.Probes = []string{"rtt"}
	o.Output = "json"
	return o, out
}
