package model

import (
	"fmt"
	"strings"
)

// dnssec validates the online signing settings of a zone (nil: unsigned).
// The key files themselves are read when the config is served.
func (v *validator) dnssec(p string, d *DNSSEC) {
	if d == nil {
		return
	}
	if len(d.KeyFiles) == 0 && strings.TrimSpace(d.KeyDirectory) == "" {
		v.add(p+".key_files", "at least one key file, or key_directory, is required (the .private file written by `meridian dnssec keygen`, with its .key beside it)")
	}
	seen := map[string]bool{}
	for i, f := range d.KeyFiles {
		fp := fmt.Sprintf("%s.key_files[%d]", p, i)
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSpace(f), ".private"), ".key")
		switch {
		case strings.TrimSpace(f) == "":
			v.add(fp, "is empty (a key file path such as keys/Kexample.com.+013+12345.private)")
		case seen[base]:
			v.add(fp, "key %q is listed twice", f)
		}
		seen[base] = true
	}
}
