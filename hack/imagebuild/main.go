// Command imagebuild writes single-layer images from local files, without a container engine.
// It is the one recipe for the agent image: the lab and the e2e tests import its tarball into
// containerd, the release writes the same images for every architecture as an OCI index
// (published with crane, see hack/release-check.sh). It also builds the lab's own images.
//
//	imagebuild -tag REF -o OUT.tar -entrypoint /netbench-agent -file bin/netbench-agent:/netbench-agent:0755
//	imagebuild -tag REF -arch amd64,arm64 -oci DIR -digest-file F -file bin/linux_{arch}/netbench-agent:/netbench-agent:0755
//
// {arch} in a file's source stands for each architecture. Every timestamp is the epoch, so the
// same inputs give the same digest on any machine.
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
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

type fileList []string

func (f *fileList) String() string     { return strings.Join(*f, ",") }
func (f *fileList) Set(v string) error { *f = append(*f, v); return nil }

// spec is what goes into each image.
type spec struct {
	entry, user string
	files       []string
}

func main() {
	var files, tags fileList
	flag.Var(&tags, "tag", "image reference to tag the image with (repeatable)")
	out := flag.String("o", "", "output: a tarball containerd imports (one architecture)")
	ociDir := flag.String("oci", "", "output: an OCI image layout holding an index of every -arch")
	digestFile := flag.String("digest-file", "", "write the digest of the image (-o) or index (-oci) here")
	entry := flag.String("entrypoint", "", "entrypoint, space separated")
	user := flag.String("user", "65532:65532", "uid:gid the image runs as")
	arch := flag.String("arch", "amd64", "image architecture(s), comma separated")
	flag.Var(&files, "file", "SRC:DST[:MODE] to put in the image (repeatable; {arch} in SRC is each architecture)")
	flag.Parse()
	var msg string
	var err error
	switch {
	case len(tags) == 0 || (*out == "") == (*ociDir == "") || len(files) == 0:
		fmt.Fprintln(os.Stderr, "imagebuild: -tag, one of -o or -oci, and at least one -file are required")
		os.Exit(2)
	default:
		msg, err = write(tags, *out, *ociDir, *digestFile, strings.Split(*arch, ","), spec{*entry, *user, files})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "imagebuild:", err)
		os.Exit(1)
	}
	fmt.Println(msg)
}

// write builds the image of each architecture and writes them as a tarball or an OCI index.
func write(tags []string, out, ociDir, digestFile string, archs []string, sp spec) (string, error) {
	if out != "" && len(archs) != 1 {
		return "", fmt.Errorf("-o holds one architecture, not %d: use -oci", len(archs))
	}
	var imgs []v1.Image
	var size int64
	for _, a := range archs {
		img, n, err := build(a, sp)
		if err != nil {
			return "", fmt.Errorf("%s: %w", a, err)
		}
		imgs, size = append(imgs, img), size+n
	}
	var digest v1.Hash
	var err error
	if out != "" {
		digest, err = writeTarball(out, tags, imgs[0])
	} else {
		digest, err = writeLayout(ociDir, archs, imgs)
	}
	if err != nil {
		return "", err
	}
	if digestFile != "" {
		if err := os.WriteFile(digestFile, []byte(digest.String()+"\n"), 0o644); err != nil {
			return "", err
		}
	}
	return fmt.Sprintf("%s%s: %s %s, %s, uncompressed layers %.1f MB (%d bytes)", out, ociDir, strings.Join(tags, " "), strings.Join(archs, ","), digest, float64(size)/1e6, size), nil
}

func writeTarball(out string, tags []string, img v1.Image) (v1.Hash, error) {
	refs := map[name.Reference]v1.Image{}
	for _, t := range tags {
		ref, err := name.NewTag(t)
		if err != nil {
			return v1.Hash{}, err
		}
		refs[ref] = img
	}
	if err := tarball.MultiRefWriteToFile(out, refs); err != nil {
		return v1.Hash{}, err
	}
	return img.Digest()
}

// writeLayout writes an OCI layout whose index lists one image per architecture.
func writeLayout(dir string, archs []string, imgs []v1.Image) (v1.Hash, error) {
	var idx v1.ImageIndex = empty.Index
	for i, img := range imgs {
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: &v1.Platform{OS: "linux", Architecture: archs[i]},
		}})
	}
	if err := os.RemoveAll(dir); err != nil {
		return v1.Hash{}, err
	}
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	if err := p.AppendIndex(idx); err != nil {
		return v1.Hash{}, err
	}
	return idx.Digest()
}

// build makes the image of one architecture and returns it with its layer's size.
func build(arch string, sp spec) (v1.Image, int64, error) {
	layerBytes, err := layerTar(arch, sp)
	if err != nil {
		return nil, 0, err
	}
	img, err := image(arch, sp, layerBytes)
	if err != nil {
		return nil, 0, err
	}
	return img, int64(len(layerBytes)), nil
}

// mtime is every entry's and the image's timestamp: the same inputs give the same digest.
var mtime = time.Unix(0, 0)

// layerTar is the image's single layer for arch: a user database for sp's user, /tmp, and sp's
// files.
func layerTar(arch string, sp spec) ([]byte, error) {
	uid, gid := 65532, 65532
	if parts := strings.SplitN(sp.user, ":", 2); len(parts) == 2 {
		uid, _ = strconv.Atoi(parts[0])
		gid, _ = strconv.Atoi(parts[1])
	}
	var buf bytes.Buffer
	lw := &layerWriter{tw: tar.NewWriter(&buf), dirs: map[string]bool{}}
	// A user database so that tools and runtimes can name the non-root user; /tmp for scratch.
	if err := lw.addFile("etc/passwd", []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", uid, gid)), 0o644); err != nil {
		return nil, err
	}
	if err := lw.addFile("etc/group", []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", gid)), 0o644); err != nil {
		return nil, err
	}
	if err := lw.addDir("tmp", 0o1777); err != nil {
		return nil, err
	}
	for _, f := range sp.files {
		dst, data, mode, err := readFileArg(f, arch)
		if err != nil {
			return nil, err
		}
		if err := lw.addFile(dst, data, mode); err != nil {
			return nil, err
		}
	}
	if err := lw.tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// readFileArg reads the source of a -file SRC:DST[:MODE] for arch.
func readFileArg(f, arch string) (dst string, data []byte, mode int64, err error) {
	parts := strings.Split(f, ":")
	if len(parts) < 2 {
		return "", nil, 0, fmt.Errorf("-file %q: want SRC:DST[:MODE]", f)
	}
	mode = int64(0o644)
	if len(parts) == 3 {
		m, err := strconv.ParseInt(parts[2], 8, 64)
		if err != nil {
			return "", nil, 0, fmt.Errorf("-file %q: mode: %w", f, err)
		}
		mode = m
	}
	data, err = os.ReadFile(strings.ReplaceAll(parts[0], "{arch}", arch))
	if err != nil {
		return "", nil, 0, err
	}
	return parts[1], data, mode, nil
}

// layerWriter writes a layer's entries, each directory once and before what it holds.
type layerWriter struct {
	tw   *tar.Writer
	dirs map[string]bool
}

func (lw *layerWriter) addDir(dir string, mode int64) error {
	if lw.dirs[dir] {
		return nil
	}
	lw.dirs[dir] = true
	return lw.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir + "/", Mode: mode, ModTime: mtime})
}

func (lw *layerWriter) addFile(dst string, data []byte, mode int64) error {
	dst = strings.TrimPrefix(dst, "/")
	if i := strings.LastIndex(dst, "/"); i > 0 {
		parts := strings.Split(dst[:i], "/")
		for j := range parts {
			if err := lw.addDir(strings.Join(parts[:j+1], "/"), 0o755); err != nil {
				return err
			}
		}
	}
	if err := lw.tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: dst, Mode: mode, Size: int64(len(data)), ModTime: mtime}); err != nil {
		return err
	}
	_, err := lw.tw.Write(data)
	return err
}

// image is the image of arch whose single layer is layerBytes, configured as sp says.
func image(arch string, sp spec, layerBytes []byte) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerBytes)), nil
	})
	if err != nil {
		return nil, err
	}
	img, err := mutate.AppendLayers(empty.Image, layer)
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture = "linux", arch
	cfg.Config.User = sp.user
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"PATH=/"}
	if sp.entry != "" {
		cfg.Config.Entrypoint = strings.Fields(sp.entry)
	}
	cfg.Created = v1.Time{Time: mtime}
	return mutate.ConfigFile(img, cfg)
}
