package cmdutil

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

func randomID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// TargetWarnings says what about the targets makes a run measure less than a pod path, or
// costs their pods more than it should.
func TargetWarnings(ts ...*session.Target) []string {
	var w []string
	for _, t := range ts {
		if t.Pod.Spec.HostNetwork {
			w = append(w, fmt.Sprintf("%s/%s uses the host network: this measures the node's network, not a pod path", t.Namespace, t.Pod.Name))
		}
		if n := len(t.Pod.Spec.EphemeralContainers); n >= EphemeralWarnAt {
			w = append(w, fmt.Sprintf("pod %s/%s already holds %d ephemeral containers; each run adds about 1.5 KB to the pod object, which etcd caps at 1.5 MiB: use --mode pod for repeated runs",
				t.Namespace, t.Pod.Name, n))
		}
	}
	return w
}

// Deref is the string behind p, or "" for none.
func Deref[T ~string](p *T) string {
	if p == nil {
		return ""
	}
	return string(*p)
}

// EphemeralWarnAt is the number of ephemeral containers in a pod from which runs warn.
const EphemeralWarnAt = 100
