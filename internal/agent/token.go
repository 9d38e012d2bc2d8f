package agent

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
)

// MinTokenLen is the shortest token an agent outside the cluster accepts from a file: 128 bits
// in hex, as the plugin's run tokens.
const MinTokenLen = 32

// ErrTokenFile is wrapped by every error of reading a token file.
var ErrTokenFile = errors.New("token file")

// NewToken is a fresh token for an agent outside the cluster: 256 random bits in hex.
func NewToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// ReadTokenFile reads the token an agent outside the cluster and the plugin share: one line of
// MinTokenLen hex digits at least; a file others may read or write, or that another user owns,
// is refused (the token is all that admits a client).
func ReadTokenFile(file string) (string, error) {
	// Not blocking: a FIFO would wait for a writer forever, before the check below refuses it.
	f, err := os.OpenFile(file, os.O_RDONLY|openNonBlock, 0)
	if err != nil {
		return "", fmt.Errorf("%w %s: %w", ErrTokenFile, file, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", fmt.Errorf("%w %s: not a regular file", ErrTokenFile, file)
	} else if why := othersMay(st); why != "" {
		return "", fmt.Errorf("%w %s: %s: chmod 600 %s, as its owner", ErrTokenFile, file, why, file)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4097))
	if err != nil {
		return "", fmt.Errorf("%w %s: %w", ErrTokenFile, file, err)
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case len(b) > 4096 || strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r > '~' }):
		return "", fmt.Errorf("%w %s: want one line, the token (kubectl netbench token)", ErrTokenFile, file)
	case len(tok) < MinTokenLen || strings.Trim(tok, "0123456789abcdefABCDEF") != "":
		return "", fmt.Errorf("%w %s: a token of %d characters, want %d hex digits at least (kubectl netbench token makes one)", ErrTokenFile, file, len(tok), MinTokenLen)
	}
	return tok, nil
}
