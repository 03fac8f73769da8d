package secretfile

import (
	"bytes"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckMode(t *testing.T) {
	tests := []struct {
		name string
		mode fs.FileMode
		ok   bool
	}{
		{"a file only its owner may read is accepted", 0o600, true},
		{"a read-only owner file is accepted", 0o400, true},
		{"a file without any permission is accepted", 0o000, true},
		{"a group-readable file is refused", 0o640, false},
		{"a world-readable file is refused", 0o644, false},
		{"a group-writable file is refused", 0o620, false},
		{"an other-executable file is refused", 0o601, false},
		{"by its mode alone (owner unknown) a group-readable 0440 is refused", 0o440, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckMode("/etc/meridian/tokens", tc.mode)
			if tc.ok {
				assert.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrOpen)
			assert.Contains(t, err.Error(), "/etc/meridian/tokens")
			assert.Contains(t, err.Error(), "chmod 600 /etc/meridian/tokens")
		})
	}
}

func write(t *testing.T, mode fs.FileMode) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(p, []byte("s3cret\n"), 0o600))
	require.NoError(t, os.Chmod(p, mode))
	return p
}

func TestReadRefusesAnOpenFileAndNamesItsMode(t *testing.T) {
	SetPolicy(Refuse, nil)
	t.Setenv(EnvAllow, "")
	p := write(t, 0o644)
	_, err := Read(p)
	require.Error(t, err)
	var oe *OpenError
	require.True(t, errors.As(err, &oe))
	assert.Equal(t, p, oe.Path)
	assert.Contains(t, err.Error(), "mode 0644")
	assert.Contains(t, err.Error(), "--"+FlagAllow)

	b, err := Read(write(t, 0o600))
	require.NoError(t, err)
	assert.Equal(t, "s3cret\n", string(b))
}

func TestWarnPolicyReadsAndLogs(t *testing.T) {
	var logs bytes.Buffer
	SetPolicy(Warn, slog.New(slog.NewTextHandler(&logs, nil)))
	t.Cleanup(func() { SetPolicy(Refuse, nil) })
	p := write(t, 0o644)
	b, err := Read(p)
	require.NoError(t, err)
	assert.Equal(t, "s3cret\n", string(b))
	assert.Contains(t, logs.String(), "mode=0644")
	assert.Contains(t, logs.String(), "file="+p)
	assert.NotContains(t, logs.String(), "s3cret", "the secret is never logged")
}

func TestEnvironmentAllows(t *testing.T) {
	SetPolicy(Refuse, slog.New(slog.DiscardHandler))
	t.Setenv(EnvAllow, "1")
	require.NoError(t, Check(write(t, 0o644)))
	t.Setenv(EnvAllow, "")
	assert.ErrorIs(t, Check(write(t, 0o644)), ErrOpen)
}

func TestReadRefusesWhatIsNotARegularFile(t *testing.T) {
	SetPolicy(Refuse, nil)
	_, err := Read(t.TempDir())
	assert.ErrorContains(t, err, "not a regular file")
	_, err = Read(filepath.Join(t.TempDir(), "missing"))
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestCheckFollowsSymlinksLikeASecretMount(t *testing.T) {
	SetPolicy(Refuse, nil)
	target := write(t, 0o600)
	link := filepath.Join(t.TempDir(), "key")
	require.NoError(t, os.Symlink(target, link))
	assert.NoError(t, Check(link))
	require.NoError(t, os.Chmod(target, 0o644))
	assert.ErrorIs(t, Check(link), ErrOpen)
}

func TestCheckOwned(t *testing.T) {
	ours := []uint32{1000, 65532}
	tests := []struct {
		name string
		mode fs.FileMode
		o    Owner
		ok   bool
	}{
		{"owner only is accepted", 0o600, Owner{UID: 1000, GID: 1000, EUID: 1000, Groups: ours}, true},
		{"a root-owned owner-only key is accepted", 0o600, Owner{UID: 0, GID: 0, EUID: 1000, Groups: ours}, true},
		{"a root-owned key readable by our group is accepted (a Kubernetes Secret with fsGroup)", 0o440, Owner{UID: 0, GID: 65532, EUID: 65532, Groups: ours}, true},
		{"0640 root:our group is accepted", 0o640, Owner{UID: 0, GID: 65532, EUID: 1000, Groups: ours}, true},
		{"a root-owned key readable by a group we are not in is refused", 0o440, Owner{UID: 0, GID: 50, EUID: 1000, Groups: ours}, false},
		{"a group-readable key owned by a user is refused", 0o640, Owner{UID: 1000, GID: 1000, EUID: 1000, Groups: ours}, false},
		{"a group-writable key is refused even when root owns it", 0o460, Owner{UID: 0, GID: 65532, EUID: 1000, Groups: ours}, false},
		{"a world-readable key is refused even when root owns it", 0o444, Owner{UID: 0, GID: 65532, EUID: 1000, Groups: ours}, false},
		{"an owner-only key of another user is refused when we run as root (that user could rewrite it)", 0o600, Owner{UID: 1000, GID: 1000, EUID: 0, Groups: []uint32{0}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := CheckOwned("/k", tt.mode, tt.o)
			if tt.ok {
				assert.NoError(t, err)
			} else {
				assert.ErrorIs(t, err, ErrOpen)
			}
		})
	}
}
