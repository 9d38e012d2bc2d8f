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
	"syscall"

	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
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
	if found, err := fileContains(exe, maxScan, []byte("GNU C Library"), []byte("GLIBC_")); err == nil && found {
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

// maxScan bounds how much of an application's binary the agent reads looking for glibc.
const maxScan = 256 << 20

// fileContains says whether the regular file at path holds any of the needles within its first
// limit bytes. It streams the file through a fixed 64 KiB window: the agent runs inside the
// application's pod, under the pod's memory limit, and must not hold the binary in memory.
func fileContains(path string, limit int64, needles ...[]byte) (bool, error) {
	// Non-blocking: opening a FIFO put where the binary should be must not wait for a writer.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return false, err
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return false, fmt.Errorf("%s is not a regular file", path)
	}
	keep := 0
	for _, n := range needles {
		keep = max(keep, len(n)-1)
	}
	buf := make([]byte, 64<<10)
	r, have := io.LimitReader(f, limit), 0
	for {
		n, err := r.Read(buf[have:])
		have += n
		for _, nd := range needles {
			if bytes.Contains(buf[:have], nd) {
				return true, nil
			}
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if have > keep {
			have = copy(buf, buf[have-keep:have])
		}
	}
}
