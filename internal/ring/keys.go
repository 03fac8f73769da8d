package ring

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/meridian-gslb/meridian/internal/secretfile"
)

// GenerateKey returns a new random 32-byte gossip key, base64 encoded.
func GenerateKey() string {
	k := make([]byte, 32)
	if _, err := rand.Read(k); err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return base64.StdEncoding.EncodeToString(k)
}

// ParseKey decodes a base64 gossip key and checks its length (AES-128/192/256).
func ParseKey(s string) ([]byte, error) {
	k, err := base64.StdEncoding.DecodeString(strings.TrimSpace(s))
	if err != nil {
		return nil, fmt.Errorf("gossip key is not base64: %w", err)
	}
	return ParseKeyBytes(k)
}

// LoadKeyring reads a key file: one base64 key per line, the first is the
// primary (used to encrypt); the others are accepted for decryption.
// Blank lines and lines starting with # are ignored.
func LoadKeyring(path string) ([][]byte, error) {
	data, err := secretfile.Read(path)
	if err != nil {
		return nil, fmt.Errorf("gossip key file %s: %w", path, err)
	}
	var keys [][]byte
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		k, err := ParseKey(s)
		if err != nil {
			return nil, fmt.Errorf("gossip key file %s:%d: %w", path, line, err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("gossip key file %s: no key (write one base64 key per line; `meridian ring keygen` makes one)", path)
	}
	return keys, nil
}

// ParseKeyBytes checks a raw gossip key's length (AES-128/192/256).
func ParseKeyBytes(k []byte) ([]byte, error) {
	switch len(k) {
	case 16, 24, 32:
		return k, nil
	}
	return nil, fmt.Errorf("gossip key is %d bytes (allowed 16, 24 or 32 bytes: AES-128, -192, -256)", len(k))
}

// LoadKeyrings reads the gossip keys a node starts with: the rotated
// keyring in the state directory (stateFile) when it is newer than
// keyFile, else keyFile. keyFile is often read-only (a Kubernetes Secret,
// /etc under systemd), so `meridian ring keys` rotations persist in the
// state directory and survive a restart; a later change of keyFile (the
// operator updated the Secret) wins over them. It returns the keys and the
// file they came from.
func LoadKeyrings(keyFile, stateFile string) ([][]byte, string, error) {
	if stateFile != "" {
		st, serr := os.Stat(stateFile)
		kf, kerr := os.Stat(keyFile)
		if serr == nil && (kerr != nil || st.ModTime().After(kf.ModTime())) {
			keys, err := LoadKeyring(stateFile)
			if err == nil {
				return keys, stateFile, nil
			}
			if kerr != nil {
				return nil, "", err
			}
			// A damaged rotated keyring: the configured one is the fallback.
		}
	}
	keys, err := LoadKeyring(keyFile)
	return keys, keyFile, err
}

// SaveKeyring writes keys (primary first) atomically with mode 0600.
func SaveKeyring(path string, primary []byte, keys [][]byte) error {
	var b strings.Builder
	b.WriteString("# Meridian gossip keyring: first line = primary key. Managed by `meridian ring keys`.\n")
	b.WriteString(base64.StdEncoding.EncodeToString(primary) + "\n")
	for _, k := range keys {
		if !bytes.Equal(k, primary) {
			b.WriteString(base64.StdEncoding.EncodeToString(k) + "\n")
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("gossip key file %s: %w", path, err)
	}
	if err := writeFileAtomic(path, []byte(b.String()), 0o600); err != nil {
		return fmt.Errorf("gossip key file %s: %w", path, err)
	}
	return nil
}
