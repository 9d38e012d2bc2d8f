package render

import (
	"fmt"
	"io"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubectl-netbench/kubectl-netbench/internal/session"
)

// WritePlanned writes what a dry run sent to the API server: -o yaml every object as one YAML
// document, preceded by a comment saying what it is for; -o json one v1 List; otherwise a line
// per object. Every object was admitted by the API server's dry run (dryRun=All).
func WritePlanned(w io.Writer, format string, planned []session.Planned) error {
	switch format {
	case "yaml":
		for _, p := range planned {
			if _, err := fmt.Fprintf(w, "---\n# %s: %s\n", p.Verb, p.What); err != nil {
				return err
			}
			if err := (&printers.YAMLPrinter{}).PrintObj(p.Object, w); err != nil {
				return err
			}
		}
		return nil
	case "json":
		list := &corev1.List{TypeMeta: metav1.TypeMeta{Kind: "List", APIVersion: "v1"}}
		for _, p := range planned {
			list.Items = append(list.Items, runtime.RawExtension{Object: p.Object})
		}
		return (&printers.JSONPrinter{}).PrintObj(list, w)
	}
	for _, p := range planned {
		if _, err := fmt.Fprintf(w, "would %s %s: %s\n", p.Verb, objectName(p), p.What); err != nil {
			return err
		}
	}
	_, err := fmt.Fprintf(w, "nothing was created: the API server admitted these %d objects with dryRun=All (-o yaml prints them)\n", len(planned))
	return err
}

// objectName is "Kind namespace/name", with the ephemeral container of a patch.
func objectName(p session.Planned) string {
	kind := p.Object.GetObjectKind().GroupVersionKind().Kind
	m, err := meta.Accessor(p.Object)
	if err != nil {
		return kind
	}
	name := fmt.Sprintf("%s %s/%s", kind, m.GetNamespace(), m.GetName())
	if pod, ok := p.Object.(*corev1.Pod); ok && p.Verb == session.VerbPatchEphemeral && len(pod.Spec.EphemeralContainers) > 0 {
		name += " (container " + pod.Spec.EphemeralContainers[0].Name + ")"
	}
	return name
}
