package agent

import (
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kubectl-netbench/kubectl-netbench/pkg/resolver"
)

// DetectResolver decides which stub resolver the application uses, from the binary of its main
// process: an ephemeral container targeting the app container shares its process namespace,
// so the app is visible under /proc. It says how it decided; when it cannot tell it assumes
// glibc and says so.
func DetectResolver(proc string) (resolver.Kind, string) {
	pid, err := appPID(proc)
	if err != nil {
		return resolver.Glibc, fmt.Sprintf("assumed glibc: no application process visible (%v); pass --resolver", err)
	}
	exe := filepath.Join(proc, strconv.Itoa(pid), "exe")
	target, _ := os.Readlink(exe)
	f, err := elf.Open(exe)
	if err != nil {
		return resolver.Glibc, fmt.Sprintf("assumed glibc: cannot read the binary of pid %d (%v); pass --resolver", pid, err)
	}
	defer f.Close()
	if f.Section(".go.buildinfo") != nil {
		return resolver.Go, fmt.Sprintf("%s (pid %d) is a Go binary: Go's own resolver", target, pid)
	}
	for _, p := range f.Progs {
		if p.Type != elf.PT_INTERP {
			continue
		}
		b, err := io.ReadAll(p.Open())
		if err != nil {
			break
		}
		interp := strings.TrimRight(string(b), "\x00")
		switch {
		case strings.Contains(interp, "ld-musl"):
			return resolver.Musl, fmt.Sprintf("%s (pid %d) is linked against musl (interpreter %s)", target, pid, interp)
		case strings.Contains(interp, "ld-linux"):
			return resolver.Glibc, fmt.Sprintf("%s (pid %d) is linked against glibc (interpreter %s)", target, pid, interp)
		}
	}
	// Static binary: glibc leaves its name in what it links in; musl does not.
	data, err := readSmallFile(exe, 512<<20)
	if err == nil && (bytes.Contains(data, []byte("GNU C Library")) || bytes.Contains(data, []byte("GLIBC_"))) {
		return resolver.Glibc, fmt.Sprintf("%s (pid %d) is a static binary with glibc inside", target, pid)
	}
	return resolver.Musl, fmt.Sprintf("%s (pid %d) is a static non-Go binary without glibc: musl", target, pid)
}

// appPID is the lowest-numbered process that is neither this agent nor a pod sandbox.
func appPID(proc string) (int, error) {
	entries, err := os.ReadDir(proc)
	if err != nil {
		return 0, err
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	sort.Ints(pids)
	self, _ := os.Readlink("/proc/self/exe")
	for _, pid := range pids {
		exe, err := os.Readlink(filepath.Join(proc, strconv.Itoa(pid), "exe"))
		if err != nil || exe == self || filepath.Base(exe) == "pause" {
			continue
		}
		return pid, nil
	}
	return 0, fmt.Errorf("only this agent is visible under %s", proc)
}
