package cmdtest

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	k8stesting "k8s.io/client-go/testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/fakecluster"
)

// DryRunObjects fails the test unless the run sent every create and patch with dryRun=All,
// deleted and updated nothing and talked to no agent, and returns the objects of its -o yaml
// output as "VERB KIND NAMESPACE/NAME", VERB from the comment above each document.
func DryRunObjects(t *testing.T, f *fakecluster.Cluster, out string) []string {
	t.Helper()
	for _, a := range f.Clientset.Actions() {
		switch a := a.(type) {
		case k8stesting.CreateActionImpl:
			if r := a.GetResource().Resource; r != "selfsubjectaccessreviews" && !slices.Contains(a.CreateOptions.DryRun, metav1.DryRunAll) {
				t.Errorf("create %s without dryRun=All", r)
			}
		case k8stesting.PatchActionImpl:
			if !slices.Contains(a.PatchOptions.DryRun, metav1.DryRunAll) {
				t.Errorf("patch %s/%s without dryRun=All", a.GetResource().Resource, a.GetSubresource())
			}
		case k8stesting.DeleteActionImpl, k8stesting.UpdateActionImpl, k8stesting.DeleteCollectionActionImpl:
			t.Errorf("a dry run did %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
	if p := f.ProxiedCalls(); len(p) > 0 {
		t.Errorf("a dry run talked to agents: %v", p)
	}
	return yamlObjects(t, out)
}

// yamlObjects reads a YAML stream of objects, each document after a "# VERB: what" comment.
func yamlObjects(t *testing.T, out string) []string {
	t.Helper()
	var objs []string
	for _, d := range PlannedDocuments(t, out) {
		var obj struct {
			metav1.TypeMeta   `json:",inline"`
			metav1.ObjectMeta `json:"metadata"`
		}
		if err := yaml.Unmarshal(d.YAML, &obj); err != nil || obj.Kind == "" {
			t.Fatalf("document %q: %v", d.YAML, err)
		}
		objs = append(objs, d.Verb+" "+obj.Kind+" "+obj.Namespace+"/"+obj.Name)
	}
	return objs
}

// Document is one object of a dry run's -o yaml stream and the verb of the comment above it.
type Document struct {
	Verb string
	YAML []byte
}

// PlannedDocuments splits a dry run's -o yaml stream into its documents; each must follow a
// "# VERB: what" comment.
func PlannedDocuments(t *testing.T, out string) []Document {
	t.Helper()
	var docs []Document
	r := yaml.NewYAMLReader(bufio.NewReader(bytes.NewBufferString(out)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs
		}
		if err != nil {
			t.Fatalf("reading the YAML stream: %v\n%s", err, out)
		}
		d := Document{YAML: doc}
		for _, line := range strings.Split(string(doc), "\n") {
			if c, found := strings.CutPrefix(line, "# "); found && d.Verb == "" {
				d.Verb, _, _ = strings.Cut(c, ":")
			}
		}
		if d.Verb == "" {
			t.Fatalf("document without its verb: %s", doc)
		}
		docs = append(docs, d)
	}
}
