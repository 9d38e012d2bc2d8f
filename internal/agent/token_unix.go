//go:build !windows

package agent

import (
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// openNonBlock opens a FIFO without waiting for its writer.
const openNonBlock = syscall.O_NONBLOCK

// othersMay says why users other than this process's may read or change a token file ("" when
// none may).
func othersMay(st fs.FileInfo) string {
	if st.Mode().Perm()&0o077 != 0 {
		return fmt.Sprintf("mode %04o lets others read or change it", st.Mode().Perm())
	}
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != os.Geteuid() {
		return fmt.Sprintf("user %d owns it, not this process's user %d", sys.Uid, os.Geteuid())
	}
	return ""
}
