package agent

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kubectl-netbench/kubectl-netbench/internal/resolver"
)

// fakeProc makes a /proc with one process whose exe is bin.
func fakeProc(t *testing.T, bin string) string {
	t.Helper()
	proc := t.TempDir()
	if err := os.MkdirAll(filepath.Join(proc, "7"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bin, filepath.Join(proc, "7", "exe")); err != nil {
		t.Fatal(err)
	}
	return proc
}

func TestDetectResolver(t *testing.T) {
	dir := t.TempDir()
	goBin, _ := exec.LookPath("go") // a Go binary other than this test, which DetectResolver skips
	cases := []struct {
		name, bin string
		want      resolver.Kind
		how       string
	}{{"go binary", goBin, resolver.Go, "Go binary"}}
	glibc := filepath.Join(dir, "glibc")
	if exec.Command("gcc", "-o", glibc, "../../test/apps/resolver/resolver.c").Run() == nil {
		cases = append(cases, struct {
			name, bin string
			want      resolver.Kind
			how       string
		}{"glibc dynamic", glibc, resolver.Glibc, "ld-linux"})
	}
	musl := filepath.Join(dir, "musl")
	if exec.Command("musl-gcc", "-static", "-o", musl, "../../test/apps/resolver/resolver.c").Run() == nil {
		cases = append(cases, struct {
			name, bin string
			want      resolver.Kind
			how       string
		}{"musl static", musl, resolver.Musl, "without glibc"})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, how := DetectResolver(fakeProc(t, tc.bin))
			if got != tc.want || !strings.Contains(how, tc.how) {
				t.Errorf("%s: %s (%s), want %s (%s)", tc.bin, got, how, tc.want, tc.how)
			}
		})
	}
	if got, how := DetectResolver(t.TempDir()); got != resolver.Glibc || !strings.Contains(how, "assumed glibc") || !strings.Contains(how, "--resolver") {
		t.Errorf("no process: %s (%s), want an assumption that names --resolver", got, how)
	}
}

// The binary is streamed through a fixed window: a needle split across two reads is found, one
// past the limit is not, and a FIFO is refused rather than read.
func TestFileContainsStreams(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 3<<20)
	at := 64<<10 - 5 // straddles the first window's end
	copy(big[at:], "GLIBC_2.34")
	path := filepath.Join(dir, "bin")
	if err := os.WriteFile(path, big, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		limit int64
		want  bool
	}{{1 << 30, true}, {int64(at + 3), false}} {
		got, err := fileContains(path, tc.limit, []byte("GNU C Library"), []byte("GLIBC_"))
		if err != nil || got != tc.want {
			t.Errorf("limit %d: %v %v, want %v", tc.limit, got, err, tc.want)
		}
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err == nil {
		if _, err := fileContains(fifo, 1<<20, []byte("x")); err == nil {
			t.Error("a FIFO was read")
		}
	}
}
