package app

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// StateDir is where this node keeps what it learns at run time (admin
// overrides, its ring identity, the rotated keyring, zone serials): never
// beside the config, which may be read-only (a ConfigMap, /etc under
// systemd) or inside a source tree (`make run`).
//
// Order: server.state_dir; $STATE_DIRECTORY (systemd's StateDirectory=,
// one node per unit); $XDG_STATE_HOME/meridian/NODE;
// ~/.local/state/meridian/NODE. NODE keeps several nodes run by one user
// (a lab, the e2e tests) apart.
func StateDir(configured, node string) string {
	if configured != "" {
		return configured
	}
	if d := os.Getenv("STATE_DIRECTORY"); d != "" {
		first, _, _ := strings.Cut(d, ":")
		return first
	}
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		if home, err := os.UserHomeDir(); err == nil {
			base = filepath.Join(home, ".local", "state")
		} else {
			base = filepath.Join(os.TempDir(), fmt.Sprintf("meridian-state-%d", os.Getuid()))
		}
	}
	return filepath.Join(base, "meridian", safeName(node))
}

// safeName turns a node name into one path element.
func safeName(node string) string {
	if node == "" || node == "." || node == ".." {
		return "node"
	}
	return strings.NewReplacer("/", "_", "\\", "_", "\x00", "_").Replace(node)
}

// adopt moves state kept at an older default location (legacy) to path
// when path does not exist yet, so an upgrade keeps drains and serials. It
// copies (the old location may be read-only) and says so.
func (a *App) adopt(path, legacy, what string) {
	if legacy == "" || legacy == path {
		return
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		return
	}
	b, err := os.ReadFile(legacy)
	if err != nil {
		return
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		a.log.Warn("state from an older location not adopted", "what", what, "from", legacy, "to", path, "err", err)
		return
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		a.log.Warn("state from an older location not adopted", "what", what, "from", legacy, "to", path, "err", err)
		return
	}
	a.log.Warn("state adopted from its older default location; the old file is no longer used and may be deleted", "what", what, "from", legacy, "to", path)
}

// prepareStateDir creates the state directory with mode 0700, and
// tightens an existing one that gives group or others access (an older
// release, or a directory made by hand, left it 0755) to 0700, saying so:
// it holds the ring identity key, overrides and the ledger of first
// claimants, which no other user should read. It tightens rather than
// refuses (unlike secret files): every file in it is written 0600 anyway,
// and the directory is Meridian's own. When it cannot (the directory
// belongs to another user, e.g. a volume mounted by root), it warns with
// the fix and goes on; the files in it stay 0600.
func prepareStateDir(dir string, log *slog.Logger) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	fi, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", dir)
	}
	perm := fi.Mode().Perm()
	if perm&0o077 == 0 {
		return nil
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		log.Warn("state directory: group or others may read it, and it could not be tightened to 0700; its files are written 0600",
			"dir", dir, "mode", fmt.Sprintf("%04o", perm), "err", err, "fix", "chmod 700 "+dir)
		return nil
	}
	log.Warn("state directory tightened to 0700: group or others could read it", "dir", dir, "was", fmt.Sprintf("%04o", perm))
	return nil
}
