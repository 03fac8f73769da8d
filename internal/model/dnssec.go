package model

// DNSSEC turns on online signing for a zone. Validation and defaults:
// validate_dnssec.go.
type DNSSEC struct {
	KeyFiles []string `yaml:"key_files"` // private key files (BIND format .private with .key), ECDSA P-256 or Ed25519
}
