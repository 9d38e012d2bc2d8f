package cmd

import (
	"bytes"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// Every command is wired into the root, and one runs through it as the binary runs it.
func TestRootCommandRunsEveryCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	root := NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	for _, name := range []string{"path", "ladder", "matrix", "dns", "diff", "cleanup", "version"} {
		if c, _, err := root.Find([]string{name}); err != nil || c.Name() != name {
			t.Errorf("kubectl netbench %s: not a command (%v)", name, err)
		}
	}
	root.SetArgs([]string{"diff", "testdata-none/old.json", "testdata-none/new.json"})
	err := root.Execute()
	if err == nil || !strings.Contains(err.Error(), "old.json") {
		t.Errorf("diff of missing files through the root: %v, want an error naming the file", err)
	}
}
