// Command render fills in the krew manifest template (plugins/netbench.yaml, krew-release-bot
// style) from release archives on disk: the version, and for every platform the archive's URI
// and sha256.
//
//	go run ./hack/krew/render -dist dist -out dist/netbench.yaml
//
// With -present-only, platforms whose archive is not in dist are left out of the manifest (a
// snapshot built for this platform only, as CI's release check does).
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/template"

	"sigs.k8s.io/yaml"

	"github.com/kubectl-netbench/kubectl-netbench/internal/version"
)

func main() {
	tmpl := flag.String("template", "plugins/netbench.yaml", "the manifest template")
	dist := flag.String("dist", "dist", "directory holding the archives (and GoReleaser's metadata.json)")
	tag := flag.String("tag", "", "release tag, e.g. v0.1.0 (default: v + the version in dist/metadata.json)")
	out := flag.String("out", "", "where to write the manifest (default: stdout)")
	digest := flag.String("agent-digest", "", "file holding the agent image's digest (hack/agent-image.sh's OUT.digest)")
	flag.BoolVar(&presentOnly, "present-only", false, "leave out the platforms whose archive is not in -dist")
	flag.Parse()
	if err := run(*tmpl, *dist, *tag, *out, *digest); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}

var presentOnly bool

// absent stands for the URI of an archive not in dist (with -present-only).
const absent = "absent"

func run(tmplPath, dist, tag, out, digestFile string) error {
	data, err := templateData(dist, tag, digestFile)
	if err != nil {
		return err
	}
	src, err := os.ReadFile(tmplPath)
	if err != nil {
		return err
	}
	funcs := template.FuncMap{"addURIAndSha": addURIAndSha(dist, data)}
	t, err := template.New("manifest").Funcs(funcs).Parse(string(src))
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := t.Execute(&b, data); err != nil {
		return err
	}
	// Drop the template's own comment header.
	lines := strings.Split(b.String(), "\n")
	for len(lines) > 0 && strings.HasPrefix(lines[0], "#") {
		lines = lines[1:]
	}
	res := strings.Join(lines, "\n")
	if presentOnly {
		var err error
		if res, err = dropAbsent(res); err != nil {
			return err
		}
	}
	if out == "" {
		_, err := os.Stdout.WriteString(res)
		return err
	}
	return os.WriteFile(out, []byte(res), 0o644)
}

// templateData is what the template is filled in with: the release tag (without one, from
// GoReleaser's metadata in dist), its version, and the agent image (pinned to the digest in
// digestFile, if given).
func templateData(dist, tag, digestFile string) (map[string]string, error) {
	if tag == "" {
		b, err := os.ReadFile(filepath.Join(dist, "metadata.json"))
		if err != nil {
			return nil, fmt.Errorf("no -tag and no GoReleaser metadata: %w", err)
		}
		var md struct {
			Version string `json:"version"`
		}
		if err := json.Unmarshal(b, &md); err != nil {
			return nil, err
		}
		tag = "v" + strings.TrimPrefix(md.Version, "v")
	}
	data := map[string]string{"TagName": tag, "Version": strings.TrimPrefix(tag, "v")}
	data["AgentImage"] = version.DefaultImageRepo + ":" + data["Version"]
	if digestFile != "" {
		d, err := os.ReadFile(digestFile)
		if err != nil {
			return nil, err
		}
		if !strings.HasPrefix(string(d), "sha256:") {
			return nil, fmt.Errorf("%s: not a digest: %q", digestFile, d)
		}
		data["AgentImage"] += "@" + strings.TrimSpace(string(d))
	}
	return data, nil
}

// addURIAndSha is the template's function of that name: it renders the archive URL (which may
// use .TagName and .Version) and hashes the archive of the same name found in dist.
func addURIAndSha(dist string, data map[string]string) func(urlTmpl, _ string) (string, error) {
	return func(urlTmpl, _ string) (string, error) {
		t, err := template.New("url").Parse(urlTmpl)
		if err != nil {
			return "", err
		}
		var u bytes.Buffer
		if err := t.Execute(&u, data); err != nil {
			return "", err
		}
		f, err := os.Open(filepath.Join(dist, path.Base(u.String())))
		if presentOnly && errors.Is(err, fs.ErrNotExist) {
			return "uri: " + absent + "\n    sha256: " + absent, nil
		}
		if err != nil {
			return "", fmt.Errorf("archive for %s: %w", u.String(), err)
		}
		defer f.Close()
		h := sha256.New()
		if _, err := io.Copy(h, f); err != nil {
			return "", err
		}
		return fmt.Sprintf("uri: %s\n    sha256: %s", u.String(), hex.EncodeToString(h.Sum(nil))), nil
	}
}

// dropAbsent removes the platforms whose archive was absent from a rendered manifest.
func dropAbsent(manifest string) (string, error) {
	var m map[string]any
	if err := yaml.Unmarshal([]byte(manifest), &m); err != nil {
		return "", fmt.Errorf("reading the rendered manifest: %w", err)
	}
	spec, _ := m["spec"].(map[string]any)
	platforms, _ := spec["platforms"].([]any)
	var kept []any
	for _, p := range platforms {
		if pm, ok := p.(map[string]any); ok && pm["uri"] != absent {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return "", errors.New("no platform's archive is in the dist directory")
	}
	spec["platforms"] = kept
	b, err := yaml.Marshal(m)
	return string(b), err
}
