// Command imagebuild writes a single-layer OCI image tarball from local files, without a
// container engine: containerd imports it (`ctr images import`). It builds the agent image and
// the lab's images.
//
//	imagebuild -tag REF -o OUT.tar -entrypoint /netbench-agent -file ./bin/netbench-agent:/netbench-agent:0755
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

func main() {
	var files, tags fileList
	flag.Var(&tags, "tag", "image reference to tag the image with (repeatable)")
	out := flag.String("o", "", "output tarball")
	entry := flag.String("entrypoint", "", "entrypoint, space separated")
	user := flag.String("user", "65532:65532", "uid:gid the image runs as")
	arch := flag.String("arch", "amd64", "image architecture")
	flag.Var(&files, "file", "SRC:DST[:MODE] to put in the image (repeatable)")
	flag.Parse()
	if len(tags) == 0 || *out == "" || len(files) == 0 {
		fmt.Fprintln(os.Stderr, "imagebuild: -tag, -o and at least one -file are required")
		os.Exit(2)
	}
	size, err := build(tags, *out, *entry, *user, *arch, files)
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
	fmt.Printf("%s: %s, uncompressed size %.1f MB (%d bytes)\n", *out, strings.Join(tags, " "), float64(size)/1e6, size)
}

func build(tags []string, out, entry, user, arch string, files []string) (int64, error) {
	uid, gid := 65532, 65532
	if parts := strings.SplitN(user, ":", 2); len(parts) == 2 {
		uid, _ = strconv.Atoi(parts[0])
		gid, _ = strconv.Atoi(parts[1])
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	mtime := time.Unix(0, 0)
	dirs := map[string]bool{}
	addDir := func(dir string, mode int64) error {
		if dirs[dir] {
			return nil
		}
		dirs[dir] = true
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: mode, ModTime: mtime})
	}
	addFile := func(dst string, data []byte, mode int64) error {
		dst = strings.TrimPrefix(dst, "/")
		if i := strings.LastIndex(dst, "/"); i > 0 {
			parts := strings.Split(dst[:i], "/")
			for j := range parts {
				if err := addDir(strings.Join(parts[:j+1], "/"), 0o755); err != nil {
					return err
				}
			}
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: dst, Mode: mode, Size: int64(len(data)), ModTime: mtime}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	// A user database so that tools and runtimes can name the non-root user; /tmp for scratch.
	if err := addFile("etc/passwd", []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", uid, gid)), 0o644); err != nil {
		return 0, err
	}
	if err := addFile("etc/group", []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", gid)), 0o644); err != nil {
		return 0, err
	}
	if err := addDir("tmp", 0o1777); err != nil {
		return 0, err
	}
	for _, f := range files {
		parts := strings.Split(f, ":")
		if len(parts) < 2 {
			return 0, fmt.Errorf("-file %q: want SRC:DST[:MODE]", f)
		}
		mode := int64(0o644)
		if len(parts) == 3 {
			m, err := strconv.ParseInt(parts[2], 8, 64)
			if err != nil {
				return 0, fmt.Errorf("-file %q: mode: %w", f, err)
			}
			mode = m
		}
		data, err := os.ReadFile(parts[0])
		if err != nil {
			return 0, err
		}
		if err := addFile(parts[1], data, mode); err != nil {
			return 0, err
		}
	}
	if err := tw.Close(); err != nil {
		return 0, err
	}
	layerBytes := buf.Bytes()
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	})
	if err != nil {
		return 0, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return 0, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return 0, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Config.User = user
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"PATH=/"}
	if entry != "" {
		cfg.Config.Entrypoint = strings.Fields(entry)
	}
	cfg.Created = v1.Time{Time: mtime}
	img, err = mutate.ConfigFile(img, cfg)
	if err != nil {
		return 0, err
	}
	refs := map[name.Reference]v1.Image{}
	for _, t := range tags {
		ref, err := name.NewTag(t)
		if err != nil {
			return 0, err
		}
		refs[ref] = img
	}
	if err := tarball.MultiRefWriteToFile(out, refs); err != nil {
		return 0, err
	}
	return int64(len(layerBytes)), nil
}
