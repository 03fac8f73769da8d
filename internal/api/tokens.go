package api

import (
	"bufio"
	"bytes"
	"crypto/subtle"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/meridian-gslb/meridian/internal/secretfile"
)

// Tokens are the bearer tokens allowed to make changes, by name. A set read
// from a file can be reloaded: a bad file keeps the last good set.
type Tokens struct {
	path   string                            // "" for a set made in memory
	byName atomic.Pointer[map[string]string] // never nil
}

// LoadTokens reads a token file: one "NAME TOKEN" per line; blank lines and
// lines starting with # are ignored. Tokens must be at least 16 characters.
// The file must be readable by its owner only (see package secretfile).
func LoadTokens(path string) (*Tokens, error) {
	t := &Tokens{path: path}
	if err := t.Reload(); err != nil {
		return nil, err
	}
	return t, nil
}

// NewTokens makes a token set in memory (name -> token).
func NewTokens(byName map[string]string) *Tokens {
	m := make(map[string]string, len(byName))
	for n, tok := range byName {
		m[n] = tok
	}
	t := &Tokens{}
	t.byName.Store(&m)
	return t
}

// Path is the token file ("" for a set made in memory).
func (t *Tokens) Path() string { return t.path }

// Len is the number of tokens in force.
func (t *Tokens) Len() int { return len(*t.byName.Load()) }

// Reload reads the token file again. On any error the tokens in force stay
// as they were and the error says why; a set made in memory never changes.
// Safe for concurrent use with requests.
func (t *Tokens) Reload() error {
	if t.path == "" {
		return nil
	}
	data, err := secretfile.Read(t.path)
	if err != nil {
		return fmt.Errorf("admin token file: %w", err)
	}
	m, err := parseTokens(t.path, data)
	if err != nil {
		return err
	}
	t.byName.Store(&m)
	return nil
}

// parseTokens is the token file's format (see LoadTokens).
func parseTokens(path string, data []byte) (map[string]string, error) {
	m := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			return nil, fmt.Errorf("admin token file %s:%d: want \"NAME TOKEN\" (two fields), got %d fields", path, n, len(fields))
		}
		if len(fields[1]) < 16 {
			return nil, fmt.Errorf("admin token file %s:%d: the token of %s is shorter than 16 characters", path, n, fields[0])
		}
		if _, dup := m[fields[0]]; dup {
			return nil, fmt.Errorf("admin token file %s:%d: name %s appears twice", path, n, fields[0])
		}
		m[fields[0]] = fields[1]
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("admin token file %s: %w", path, err)
	}
	if len(m) == 0 {
		return nil, fmt.Errorf("admin token file %s has no token", path)
	}
	return m, nil
}

// who returns the name of the token presented, comparing in constant time
// against every token.
func (t *Tokens) who(token string) (string, bool) {
	name := ""
	for n, tok := range *t.byName.Load() {
		if subtle.ConstantTimeCompare([]byte(tok), []byte(token)) == 1 {
			name = n
		}
	}
	return name, name != ""
}
