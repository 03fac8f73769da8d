package app

import (
	"os"
	"path/filepath"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/api"
)

// DemoTokenPath is where the demo writes its per-run admin token:
// $XDG_STATE_HOME/meridian/demo-admin-token, else
// ~/.local/state/meridian/demo-admin-token.
func DemoTokenPath() (string, error) {
	dir := os.Getenv("XDG_STATE_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		dir = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(dir, "meridian", "demo-admin-token"), nil
}

// writeDemoToken writes tok to DemoTokenPath, readable by the user only.
func writeDemoToken(tok string) (string, error) {
	p, err := DemoTokenPath()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return "", err
	}
	tmp := p + ".tmp"
	if err := os.WriteFile(tmp, []byte(tok+"\n"), 0o600); err != nil {
		return "", err
	}
	if err := os.Chmod(tmp, 0o600); err != nil { // an old file keeps its mode
		return "", err
	}
	return p, os.Rename(tmp, p)
}

// openTokens loads the admin API tokens: server.admin.token_file, else for
// the demo a fresh token for this run, else none (changes refused).
func (a *App) openTokens(tokenFile string) error {
	switch {
	case tokenFile != "":
		t, err := api.LoadTokens(tokenFile)
		if err != nil {
			return err
		}
		a.tokens = t
	case a.opts.DemoBackends:
		// The demo (make run, or serve without --config): a fresh token for
		// this run, so the README's demo, drain and force examples work
		// without any setup.
		tok := "demo-" + admin.NewID() + admin.NewID()
		a.tokens = api.NewTokens(map[string]string{"demo": tok})
		if p, err := writeDemoToken(tok); err != nil {
			a.log.Warn("demo admin token for this run (could not write it to a file)", "err", err, "export", "MERIDIAN_ADMIN_TOKEN="+tok)
		} else {
			a.log.Warn("demo admin token for this run written (mode 600): changes are accepted with it", "export", "MERIDIAN_ADMIN_TOKEN_FILE="+p)
		}
	default:
		a.log.Warn("changes disabled: set server.admin.token_file to allow drain, force, weight, ring key and demo changes")
	}
	return nil
}
