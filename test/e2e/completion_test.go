package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// Shell completion offers the namespace's pod names for SRC and DST, directly (__complete) and
// through kubectl's own completion, which runs kubectl_complete-netbench (kubectl ≥ 1.26).
func TestCompletionOffersPodNames(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	createPod(t, cs, ns, pod("alpha-1", "", "netbench.lab/sample-app:1", nil, nil))
	createPod(t, cs, ns, pod("beta-1", "", "netbench.lab/sample-app:1", nil, nil))
	waitPod(t, cs, ns, "alpha-1", 60*time.Second, "running", running)

	out, stderr, err := netbench(t, "__complete", "path", "-n", ns, "al")
	if err != nil || !strings.Contains(out, "alpha-1") || strings.Contains(out, "beta-1") {
		t.Errorf("__complete path al: %v\n%s%s", err, out, stderr)
	}

	// kubectl's plugin completion, with the plugin and its completion script on the PATH.
	dir := t.TempDir()
	for src, dst := range map[string]string{plugin(t): "kubectl-netbench", "../../hack/completion/kubectl_complete-netbench": "kubectl_complete-netbench"} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, dst), b, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(labKubectl(), "__complete", "netbench", "dns", "-n", ns, "be")
	cmd.Env = append(os.Environ(), "PATH="+dir+":"+os.Getenv("PATH"), "KUBECONFIG="+kubeconfigPath())
	b, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(b), "beta-1") || strings.Contains(string(b), "alpha-1") {
		t.Errorf("kubectl __complete netbench dns be: %v\n%s", err, b)
	}
}
