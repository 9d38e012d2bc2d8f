package egress

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
)

// MaxRootsBytes bounds a PEM bundle of roots (a system bundle of ~150 roots is ~220 KB).
const MaxRootsBytes = 512 << 10

// RootCAs is the pool of the PEM certificates in b, every block a certificate; nil for no b
// (the system's roots). A bundle that is too large, holds no certificate or a bad one is refused.
func RootCAs(b []byte) (*x509.CertPool, error) {
	if len(b) == 0 {
		return nil, nil
	}
	if len(b) > MaxRootsBytes {
		return nil, fmt.Errorf("%w: %d bytes, want at most %d", ErrRoots, len(b), MaxRootsBytes)
	}
	pool, n := x509.NewCertPool(), 0
	for rest := b; ; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		c, err := x509.ParseCertificate(block.Bytes)
		if block.Type != "CERTIFICATE" || err != nil {
			return nil, fmt.Errorf("%w: block %d is not a certificate (%s)", ErrRoots, n+1, block.Type)
		}
		pool.AddCert(c)
		n++
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: no PEM certificate found", ErrRoots)
	}
	return pool, nil
}
