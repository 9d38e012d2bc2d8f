// Command render fills in the krew manifest template (plugins/netbench.yaml, krew-release-bot
// style) from release archives on disk: the version, and for every platform the archive's URI
// and sha256.
//
//	go run ./hack/krew/render -dist dist -out dist/netbench.yaml
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"
	"text/template"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/version"
)

func main() {
	tmpl := flag.String("template", "plugins/netbench.yaml", "the manifest template")
	dist := flag.String("dist", "dist", "directory holding the archives (and GoReleaser's metadata.json)")
	tag := flag.String("tag", "", "release tag, e.g. v0.1.0 (default: v + the version in dist/metadata.json)")
	out := flag.String("out", "", "where to write the manifest (default: stdout)")
	digest := flag.String("agent-digest", "", "file holding the agent image's digest (hack/agent-image.sh's OUT.digest)")
	flag.Parse()
	if err := run(*tmpl, *dist, *tag, *out, *digest); err != nil {
		fmt.Fprintln(os.Stderr, "render:", err)
		os.Exit(1)
	}
}

func run(tmplPath, dist, tag, out, digestFile string) error {
	if tag == "" {
		b, err := os.ReadFile(filepath.Join(dist, "metadata.json"))
		if err != nil {
			return fmt.Errorf("no -tag and no GoReleaser metadata: %w", err)
		}
		var md struct {
			Version string `json:"version"`
		}
		if err := json.Unmarshal(b, &md); err != nil {
			return err
		}
		tag = "v" + strings.TrimPrefix(md.Version, "v")
	}
	data := map[string]string{"TagName": tag, "Version": strings.TrimPrefix(tag, "v")}
	data["AgentImage"] = version.DefaultImageRepo + ":" + data["Version"]
	if digestFile != "" {
		d, err := os.ReadFile(digestFile)
		if err != nil {
			return err
		}
		if !strings.HasPrefix(string(d), "sha256:") {
			return fmt.Errorf("%s: not a digest: %q", digestFile, d)
		}
		data["AgentImage"] += "@" + strings.TrimSpace(string(d))
	}
	src, err := os.ReadFile(tmplPath)
	if err != nil {
		return err
	}
	funcs := template.FuncMap{
		// addURIAndSha renders the archive URL (which may use .TagName and .Version) and
		// hashes the archive of the same name found in dist.
		"addURIAndSha": func(urlTmpl, _ string) (string, error) {
			t, err := template.New("url").Parse(urlTmpl)
			if err != nil {
				return "", err
			}
			var u bytes.Buffer
			if err := t.Execute(&u, data); err != nil {
				return "", err
			}
			f, err := os.Open(filepath.Join(dist, path.Base(u.String())))
			if err != nil {
				return "", fmt.Errorf("archive for %s: %w", u.String(), err)
			}
			defer f.Close()
			h := sha256.New()
			if _, err := io.Copy(h, f); err != nil {
				return "", err
			}
			return fmt.Sprintf("uri: %s\n    sha256: %s", u.String(), hex.EncodeToString(h.Sum(nil))), nil
		},
	}
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
	if out == "" {
		_, err := os.Stdout.WriteString(res)
		return err
	}
	return os.WriteFile(out, []byte(res), 0o644)
}
