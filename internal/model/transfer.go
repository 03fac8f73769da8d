package model

// Transfer lets secondaries pull a zone (AXFR, IXFR) and be notified of
// changes. Validation and defaults: validate_transfer.go.
type Transfer struct {
	Allow       []string `yaml:"allow"`         // addresses or prefixes allowed to transfer (required)
	TSIGKeyFile string   `yaml:"tsig_key_file"` // file with the HMAC-SHA256 key (name and secret); required
	Notify      []string `yaml:"notify"`        // secondaries (IP:port) sent NOTIFY on every content change
}
