package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
)

// labRegistry is where the lab's nodes pull from the private registry (plain HTTP; see
// REGISTRY in hack/lab/lab.sh): the bridge's host address.
const labRegistry = "10.77.0.1:5000"

// privateRegistry serves a registry that wants basic auth on labRegistry until the test ends,
// holding the lab's agent image as repository netbench/agent, tag tag. It counts the requests
// it refused and those it answered with the credentials.
type privateRegistry struct {
	user, password   string
	refused, allowed atomic.Int64
}

func servePrivateRegistry(t *testing.T, tag string) (*privateRegistry, string) {
	t.Helper()
	r := &privateRegistry{user: "netbench", password: rand.Text()}
	ln, err := net.Listen("tcp", labRegistry)
	if err != nil {
		t.Fatalf("the lab's private registry cannot listen on %s: %v", labRegistry, err)
	}
	inner := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if u, p, ok := req.BasicAuth(); !ok || u != r.user || p != r.password {
			r.refused.Add(1)
			w.Header().Set("WWW-Authenticate", `Basic realm="netbench-lab"`)
			http.Error(w, "credentials wanted", http.StatusUnauthorized)
			return
		}
		r.allowed.Add(1)
		inner.ServeHTTP(w, req)
	})}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })

	cache := os.Getenv("LAB_CACHE") // as hack/lab/lab.sh reads it: relative to the repository
	if cache == "" {
		cache = ".cache/lab"
	}
	if !filepath.IsAbs(cache) {
		cache = filepath.Join("../..", cache)
	}
	src, err := name.NewTag(agentImage)
	if err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(filepath.Join(cache, "images", "agent.tar"), &src)
	if err != nil {
		t.Fatalf("the lab's agent image: %v", err)
	}
	// An image of its own (a label in its config): the kubelet remembers which credentials pulled
	// an image, and a pod without them must pull it again (KEP-2535) — an image identical to the
	// lab's agent:dev would send every later pod of the node to pull agent:dev from ghcr.io.
	cfg, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Config.Labels = map[string]string{"netbench.lab/private-registry": tag}
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		t.Fatal(err)
	}
	if err := pushImage(inner, "netbench/agent", tag, img); err != nil {
		t.Fatalf("putting the agent image in the private registry: %v", err)
	}
	return r, labRegistry + "/netbench/agent:" + tag
}

// pushImage puts img into the registry behind h as repo:tag, as a client's push would: each
// blob in one request, then the manifest.
func pushImage(h http.Handler, repo, tag string, img v1.Image) error {
	put := func(method, path, contentType string, body []byte) error {
		req := httptest.NewRequest(method, path, bytes.NewReader(body))
		req.Header.Set("Content-Type", contentType)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != http.StatusCreated && w.Code != http.StatusAccepted {
			return fmt.Errorf("%s %s: %d %s", method, path, w.Code, w.Body)
		}
		return nil
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	blobs := map[v1.Hash]func() ([]byte, error){}
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		blobs[d] = func() ([]byte, error) {
			rc, err := l.Compressed()
			if err != nil {
				return nil, err
			}
			defer rc.Close()
			return io.ReadAll(rc)
		}
	}
	cfg, err := img.ConfigName()
	if err != nil {
		return err
	}
	blobs[cfg] = img.RawConfigFile
	for d, read := range blobs {
		b, err := read()
		if err == nil {
			err = put(http.MethodPost, "/v2/"+repo+"/blobs/uploads/?digest="+d.String(), "application/octet-stream", b)
		}
		if err != nil {
			return err
		}
	}
	m, err := img.RawManifest()
	if err != nil {
		return err
	}
	mt, err := img.MediaType()
	if err != nil {
		return err
	}
	return put(http.MethodPut, "/v2/"+repo+"/manifests/"+tag, string(mt), m)
}

// pullSecret creates Secret name in ns with the registry's credentials.
func (r *privateRegistry) pullSecret(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	auth := base64.StdEncoding.EncodeToString([]byte(r.user + ":" + r.password))
	cfg, err := json.Marshal(map[string]any{"auths": map[string]any{labRegistry: map[string]string{"username": r.user, "password": r.password, "auth": auth}}})
	if err != nil {
		t.Fatal(err)
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, Type: corev1.SecretTypeDockerConfigJson, Data: map[string][]byte{corev1.DockerConfigJsonKey: cfg}}
	if _, err := cs.CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// Agents from a registry that wants credentials: without --image-pull-secret the pull is refused
// and the run says so; a Secret that is not there stops the run before anything is created;
// with the Secret the run measures, the registry having served the image to the credentials.
func TestPullSecretForAPrivateRegistry(t *testing.T) {
	beside(t)
	cs, ns := lab(t)
	workloads(t, cs, ns)
	waitRollout(t, cs, ns, "client")
	waitRollout(t, cs, ns, "web")
	reg, image := servePrivateRegistry(t, ns) // a tag of this run's own: no node has it yet
	reg.pullSecret(t, cs, ns, "regcred")
	args := []string{"-n", ns, "deploy/client", "deploy/web", "--mode", "pod", "--image", image, "--probes", "rtt", "--start-timeout", "60s"}

	_, stderr, err := netbench(t, append([]string{"path"}, args...)...)
	if err == nil || !strings.Contains(stderr, "cannot be pulled") || !strings.Contains(stderr, "--image-pull-secret") || reg.refused.Load() == 0 {
		t.Errorf("without --image-pull-secret: err %v, %d requests refused, stderr %s: want the pull refused and the flag named", err, reg.refused.Load(), stderr)
	}
	noAgentPods(t, cs, ns)

	_, stderr, err = netbench(t, append([]string{"path"}, append(args, "--image-pull-secret", "nope")...)...)
	if err == nil || !strings.Contains(stderr, "--image-pull-secret nope: no such Secret in namespace "+ns) {
		t.Errorf("a Secret that is not there: err %v, stderr %s", err, stderr)
	}
	noAgentPods(t, cs, ns)

	before := reg.allowed.Load()
	r := pathJSON(t, append(args, "--image-pull-secret", "regcred")...)
	if len(r.Probes) == 0 || reg.allowed.Load() == before {
		t.Errorf("with --image-pull-secret: %d probes, %d requests with the credentials", len(r.Probes), reg.allowed.Load()-before)
	}
	t.Logf("the registry refused %d requests and answered %d with the credentials", reg.refused.Load(), reg.allowed.Load())
	noAgentPods(t, cs, ns)
	// The same nodes still start the lab's own agent image, without credentials.
	if r := pathJSON(t, "-n", ns, "deploy/client", "deploy/web", "--mode", "pod", "--probes", "rtt"); len(r.Probes) == 0 {
		t.Error("the lab's agent image after the private registry's: no probe")
	}
	noAgentPods(t, cs, ns)
}

// agentsTaint is the taint of the nodes only temporary agents that ask for it may use.
const agentsTaint = "netbench.lab/agents=only:NoSchedule"

// agentsTaintKey is agentsTaint's key.
const agentsTaintKey = "netbench.lab/agents"

// taintNodes gives nodes the taint agentsTaint until the test ends, leaving their other taints
// as they are (TestMain also takes it off any node a killed run left it on).
func taintNodes(t *testing.T, cs kubernetes.Interface, nodes ...string) {
	t.Helper()
	for _, n := range nodes {
		t.Cleanup(func() {
			if err := setAgentsTaint(cs, n, false); err != nil {
				t.Errorf("untainting %s: %v", n, err)
			}
		})
		if err := setAgentsTaint(cs, n, true); err != nil {
			t.Fatal(err)
		}
	}
}

// setAgentsTaint puts agentsTaint on node, or takes it off, and touches no other taint.
func setAgentsTaint(cs kubernetes.Interface, node string, on bool) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := cs.CoreV1().Nodes().Get(context.Background(), node, metav1.GetOptions{})
		if err != nil {
			return err
		}
		taints := slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == agentsTaintKey })
		if on {
			taints = append(taints, corev1.Taint{Key: agentsTaintKey, Value: "only", Effect: corev1.TaintEffectNoSchedule})
		} else if len(taints) == len(n.Spec.Taints) {
			return nil
		}
		n.Spec.Taints = taints
		_, err = cs.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{})
		return err
	})
}

// Zone-b's nodes tainted for agents only: the ladder's cross-zone rung is left out, naming the
// taint, unless --toleration tolerates it; then its client runs on a zone-b node.
func TestTaintedNodesOnlyWithToleration(t *testing.T) {
	cs, ns := lab(t)
	if _, err := cs.AppsV1().Deployments(ns).Create(context.Background(), deployment("api", "lab-a1", "netbench.lab/sample-app:1", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitRollout(t, cs, ns, "api")
	taintNodes(t, cs, "lab-b1", "lab-b2")
	args := []string{"-n", ns, "deploy/api", "--probes", "rtt", "--duration", "1s"}
	for _, tc := range []struct {
		flags   []string
		skipped string
	}{
		{nil, "has taint " + agentsTaint + " that neither the destination's pod nor a --toleration tolerates"},
		{[]string{"--toleration", agentsTaint}, ""},
	} {
		r := ladderJSON(t, append(args, tc.flags...)...)
		var rung *struct {
			node, skipped string
			results       int
		}
		for _, g := range r.Rungs {
			if g.Zone == "zone-b" || strings.HasPrefix(g.Name, "cross-zone") {
				rung = &struct {
					node, skipped string
					results       int
				}{g.Node, g.Skipped, len(g.Results)}
			}
		}
		switch {
		case rung == nil:
			t.Errorf("%v: no cross-zone rung in %+v", tc.flags, r.Rungs)
		case tc.skipped != "" && !strings.Contains(rung.skipped, tc.skipped):
			t.Errorf("%v: cross-zone rung skipped %q, want %q", tc.flags, rung.skipped, tc.skipped)
		case tc.skipped == "" && (rung.skipped != "" || !strings.HasPrefix(rung.node, "lab-b") || rung.results == 0):
			t.Errorf("%v: cross-zone rung on %q, skipped %q: want it measured on a zone-b node", tc.flags, rung.node, rung.skipped)
		default:
			t.Logf("%v: cross-zone rung on %q, skipped %q", tc.flags, rung.node, rung.skipped)
		}
	}
	noAgentPods(t, cs, ns)
}

// untaintLeftNodes takes agentsTaint off every node, where a killed run of
// TestTaintedNodesOnlyWithToleration left it; nothing when the lab does not answer.
func untaintLeftNodes() {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfigPath())
	if err != nil {
		return
	}
	cfg.Timeout = 5 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return
	}
	nodes, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, n := range nodes.Items {
		if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == agentsTaintKey }) {
			if err := setAgentsTaint(cs, n.Name, false); err != nil {
				fmt.Fprintf(os.Stderr, "taking %s off node %s: %v\n", agentsTaintKey, n.Name, err)
			}
		}
	}
}
