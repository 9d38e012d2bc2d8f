package agent

import (
	"fmt"
	"io"
	"os"
	"syscall"
)

// readSmallFile reads a regular file of at most limit bytes: a FIFO, a device or a huge file
// that the application put where the agent looks must not block or bloat the agent.
func readSmallFile(path string, limit int64) ([]byte, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO must not wait for a writer
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file", path)
	}
	if st.Size() > limit {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d read", path, st.Size(), limit)
	}
	return io.ReadAll(io.LimitReader(f, limit))
}
