// Package secretfile reads files that hold secrets (admin tokens, TLS keys,
// TSIG keys, API tokens, gossip keys) and refuses the ones that other users
// of the machine can read or change.
//
// A secret file must have no group or other permission bits (chmod 600 or
// 400), with one exception taken from PostgreSQL's rule for its key file:
// a file owned by root may be readable by a group this process belongs to
// (0440 / 0640 root:GROUP), which is how Kubernetes mounts a Secret for a
// non-root pod with fsGroup and how a packaged key is shared with a
// service's group. Anything else with group or other bits is refused with an error naming the file, its mode
// and the fix, unless the process allows it (SetPolicy with Warn: the
// `serve --allow-readable-secret-files` flag or the environment variable
// MERIDIAN_ALLOW_READABLE_SECRET_FILES=1), in which case it is read and a
// warning is logged. The check is made on the opened file (fstat), so the
// file checked is the file read.
package secretfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"slices"
	"sync"
	"syscall"
)

// EnvAllow is the environment variable that turns refusals into warnings
// for every command of the process (value "1" or "true").
const EnvAllow = "MERIDIAN_ALLOW_READABLE_SECRET_FILES"

// FlagAllow is the `meridian serve` flag with the same effect.
const FlagAllow = "allow-readable-secret-files"

// MaxSize bounds what Read returns: secret files are small.
const MaxSize = 1 << 20

// Policy says what to do with a secret file that group or other may access.
type Policy int

const (
	Refuse Policy = iota // an error: the caller does not start (default)
	Warn                 // read it and log a warning
)

var (
	mu     sync.Mutex
	policy = Refuse
	logger *slog.Logger
)

// SetPolicy sets the process-wide policy and the logger of its warnings
// (nil: slog.Default()). Call it once at start, before any secret is read.
func SetPolicy(p Policy, log *slog.Logger) {
	mu.Lock()
	defer mu.Unlock()
	policy, logger = p, log
}

func current() (Policy, *slog.Logger) {
	mu.Lock()
	defer mu.Unlock()
	p, l := policy, logger
	if v := os.Getenv(EnvAllow); v == "1" || v == "true" {
		p = Warn
	}
	if l == nil {
		l = slog.Default()
	}
	return p, l
}

// ErrOpen marks a secret file that group or other may access.
var ErrOpen = errors.New("secret file is accessible to group or other")

// OpenError is the refusal of one file.
type OpenError struct {
	Path string
	Mode fs.FileMode
}

func (e *OpenError) Error() string {
	return fmt.Sprintf("secret file %s has mode %04o: group or other may access it (allowed: owner only, e.g. `chmod 600 %s`, "+
		"or owned by root and read-only to a group of this process, e.g. 0440 root:GROUP; "+
		"or start with --%s / %s=1 to only warn)", e.Path, e.Mode.Perm(), e.Path, FlagAllow, EnvAllow)
}

func (e *OpenError) Unwrap() error { return ErrOpen }

// OwnerError refuses a secret file that another user owns (and could rewrite).
type OwnerError struct {
	Path string
	UID  uint32
}

func (e *OwnerError) Error() string {
	return fmt.Sprintf("secret file %s belongs to uid %d, not to this process's user (uid %d) or root: that user could rewrite it (allowed: `chown %d %s`; "+
		"or start with --%s / %s=1 to only warn)", e.Path, e.UID, os.Geteuid(), os.Geteuid(), e.Path, FlagAllow, EnvAllow)
}

func (e *OwnerError) Unwrap() error { return ErrOpen }

// CheckMode is the pure rule: nil when mode gives group and other nothing.
func CheckMode(path string, mode fs.FileMode) error {
	if mode.Perm()&0o077 != 0 {
		return &OpenError{Path: path, Mode: mode}
	}
	return nil
}

// Owner is who owns a file and who the process is.
type Owner struct {
	UID, GID uint32   // the file's owner and group
	EUID     uint32   // the process's effective user
	Groups   []uint32 // the process's primary and supplementary groups
}

// CheckOwned is CheckMode with ownership: the file must belong to this
// process's user or to root (another user could rewrite it), and either
// give group and other nothing, or be root's and read-only to a group of
// ours.
func CheckOwned(path string, mode fs.FileMode, o Owner) error {
	if o.UID != o.EUID && o.UID != 0 {
		return &OwnerError{Path: path, UID: o.UID}
	}
	perm := mode.Perm()
	if perm&0o077 == 0 {
		return nil
	}
	if o.UID == 0 && perm&0o037 == 0 && slices.Contains(o.Groups, o.GID) {
		return nil
	}
	return &OpenError{Path: path, Mode: mode}
}

// owner reads fi's owner and this process's groups (nil off Unix).
func owner(fi fs.FileInfo) *Owner {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil
	}
	o := &Owner{UID: st.Uid, GID: st.Gid, EUID: uint32(os.Geteuid()), Groups: []uint32{uint32(os.Getgid())}}
	if gs, err := os.Getgroups(); err == nil {
		for _, g := range gs {
			o.Groups = append(o.Groups, uint32(g))
		}
	}
	return o
}

// Check stats path (following symlinks, as a Kubernetes Secret mount has
// them) and applies the policy: an *OpenError under Refuse, a warning and
// nil under Warn. A missing file is an error.
func Check(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("secret file: %w", err)
	}
	return apply(path, fi)
}

// Read opens path, checks the opened file's mode like Check and returns its
// content (at most MaxSize bytes).
func Read(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("secret file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("secret file %s is not a regular file (mode %s)", path, fi.Mode())
	}
	if err := apply(path, fi); err != nil {
		return nil, err
	}
	b, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("secret file %s: %w", path, err)
	}
	if len(b) > MaxSize {
		return nil, fmt.Errorf("secret file %s is larger than %d bytes", path, MaxSize)
	}
	return b, nil
}

func apply(path string, fi fs.FileInfo) error {
	var err error
	if o := owner(fi); o != nil {
		err = CheckOwned(path, fi.Mode(), *o)
	} else {
		err = CheckMode(path, fi.Mode())
	}
	if err == nil {
		return nil
	}
	p, log := current()
	if p == Warn {
		log.Warn("secret file is accessible to group or other; reading it anyway because readable secret files are allowed",
			"file", path, "mode", fmt.Sprintf("%04o", fi.Mode().Perm()), "fix", "chmod 600 "+path)
		return nil
	}
	return err
}
