package probes

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
)

// The spread probe reaches whichever endpoint a Service picks, and any pod carrying the
// Service's labels can be one: the token is never sent there. A request proves that its client
// holds the token with an HMAC of a fresh nonce (ProofHeader), and the answer proves that the
// endpoint holds it with an HMAC of that nonce and the identity it names. Keys are derived from
// the token with labels of their own; the nonce carries its time, and a server accepts each
// nonce once, within ProofWindow.

// ProofHeader carries a spread request's proof: hex(nonce) "." hex(HMAC).
const ProofHeader = "X-Netbench-Proof"

// ProofWindow is how far a proof's time may be from the server's clock.
const ProofWindow = 30 * time.Second

// ErrBadProof means a proof that does not verify, is stale, or was seen before.
var ErrBadProof = errors.New("not a valid proof of the run's token")

func deriveKey(token, label string) []byte {
	m := hmac.New(sha256.New, []byte(token))
	m.Write([]byte(label))
	return m.Sum(nil)
}

func mac(key []byte, parts ...[]byte) []byte {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(p)))
		m.Write(n[:])
		m.Write(p)
	}
	return m.Sum(nil)
}

// NewProof is a fresh proof of the token and its nonce.
func NewProof(token string, now time.Time) (proof string, nonce []byte) {
	nonce = make([]byte, 24)
	_, _ = rand.Read(nonce[:16])
	binary.BigEndian.PutUint64(nonce[16:], uint64(now.UnixNano()))
	return hex.EncodeToString(nonce) + "." + hex.EncodeToString(mac(deriveKey(token, "kubectl-netbench proof v1"), nonce)), nonce
}

// CheckProof verifies a proof against the token and returns its nonce.
func CheckProof(token, proof string, now time.Time) ([]byte, error) {
	n, m, ok := strings.Cut(proof, ".")
	if !ok || len(n) != 48 || len(m) != 64 {
		return nil, ErrBadProof
	}
	nonce, err1 := hex.DecodeString(n)
	got, err2 := hex.DecodeString(m)
	if err1 != nil || err2 != nil || !hmac.Equal(got, mac(deriveKey(token, "kubectl-netbench proof v1"), nonce)) {
		return nil, ErrBadProof
	}
	at := time.Unix(0, int64(binary.BigEndian.Uint64(nonce[16:])))
	if d := now.Sub(at); d > ProofWindow || d < -ProofWindow {
		return nil, fmt.Errorf("%w: its time is %s from the server's", ErrBadProof, d.Round(time.Second))
	}
	return nonce, nil
}

// AnswerMAC is an endpoint's proof that it holds the token, over the nonce, the identity it
// answers with, the source address it saw the request come from and whether that address is
// its own default gateway.
func AnswerMAC(token string, nonce []byte, pod, node, zone, peer string, peerIsGateway bool) string {
	gw := []byte{0}
	if peerIsGateway {
		gw[0] = 1
	}
	return hex.EncodeToString(mac(deriveKey(token, "kubectl-netbench answer v2"), nonce, []byte(pod), []byte(node), []byte(zone), []byte(peer), gw))
}

// Nonces remembers the nonces a server accepted, at most max of them, each until its own time
// is more than ProofWindow past (CheckProof refuses it from then on): a replayed proof is
// refused, and a flood of proofs (which needs the token) cannot grow it past max.
type Nonces struct {
	mu   sync.Mutex
	max  int
	seen map[[24]byte]time.Time
}

// NewNonces remembers up to max nonces.
func NewNonces(max int) *Nonces { return &Nonces{max: max, seen: map[[24]byte]time.Time{}} }

// First says whether nonce (as CheckProof returned it) is new, and remembers it.
func (s *Nonces) First(nonce []byte, now time.Time) bool {
	if len(nonce) != 24 {
		return false
	}
	k := [24]byte(nonce)
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.seen[k]; ok {
		return false
	}
	if len(s.seen) >= s.max {
		for n, at := range s.seen {
			if now.Sub(at) > ProofWindow {
				delete(s.seen, n)
			}
		}
		if len(s.seen) >= s.max {
			return false
		}
	}
	s.seen[k] = time.Unix(0, int64(binary.BigEndian.Uint64(nonce[16:])))
	return true
}
