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
// printable characters, MinTokenLen at least; a file others may read or write is refused (the
// token is all that admits a client).
func ReadTokenFile(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", fmt.Errorf("%w %s: %w", ErrTokenFile, file, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", fmt.Errorf("%w %s: not a regular file", ErrTokenFile, file)
	} else if st.Mode().Perm()&0o077 != 0 {
		return "", fmt.Errorf("%w %s: mode %04o lets others read or change it: chmod 600 %s", ErrTokenFile, file, st.Mode().Perm(), file)
	}
	b, err := io.ReadAll(io.LimitReader(f, 4097))
	if err != nil {
		return "", fmt.Errorf("%w %s: %w", ErrTokenFile, file, err)
	}
	tok := strings.TrimSpace(string(b))
	switch {
	case len(b) > 4096 || strings.ContainsFunc(tok, func(r rune) bool { return r <= ' ' || r > '~' }):
		return "", fmt.Errorf("%w %s: want one line, the token (kubectl netbench token)", ErrTokenFile, file)
	case len(tok) < MinTokenLen:
		return "", fmt.Errorf("%w %s: a token of %d characters, want %d at least (kubectl netbench token makes one)", ErrTokenFile, file, len(tok), MinTokenLen)
	}
	return tok, nil
}
