package model

// DNSSEC turns on online signing for a zone. Validation and defaults:
// validate_dnssec.go.
type DNSSEC struct {
	KeyFiles []string `yaml:"key_files"` // private key files (BIND format .private with .key), ECDSA P-256 or Ed25519
	// KeyDirectory holds the zone's keys as BIND's key-directory does:
	// every K<zone>+<alg>+<tag>.private in it (with its .key) signs, read
	// again at every reload and every 5 s by the key watcher (internal/zonekeys); a mounted Secret of `meridian dnssec keygen`
	// files, whatever their tags (default "": key_files only).
	KeyDirectory string `yaml:"key_directory"`
}
