package matrix

import (
	"io"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// options are matrix options on this cluster, writing JSON to out.
func matrixOptions(f *fakecluster.Cluster, out io.Writer) *MatrixOptions {
	o := NewMatrixOptions(nil, genericiooptions.IOStreams{In: strings.NewReader(""), Out: out, ErrOut: io.Discard})
	o.Client, o.Namespace, o.Output = f.Clientset, "netbench", "json"
	o.NewRunID = func() string { return "run1" }
	o.Progress = func(string, ...any) {}
	o.ConfigureSession = func(s *session.Session) { s.Request = f.Request }
	return o
}
