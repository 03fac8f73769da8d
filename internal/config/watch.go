package config

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/fsnotify/fsnotify"
)

// debounce groups the bursts of events an editor or a Kubernetes ConfigMap
// update produces into one reload.
const debounce = 200 * time.Millisecond

// Watcher watches the config file's directory, so that atomic replacements
// (rename over the file, ConfigMap symlink swaps) are seen too.
type Watcher struct {
	w    *fsnotify.Watcher
	path string
	log  *slog.Logger
}

// NewWatcher watches path (through its directory).
func NewWatcher(path string, log *slog.Logger) (*Watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", path, err)
	}
	if err := w.Add(filepath.Dir(path)); err != nil {
		w.Close()
		return nil, fmt.Errorf("watch %s: %w", path, err)
	}
	return &Watcher{w: w, path: path, log: log}, nil
}

// Run calls reload after changes to the file settle, until ctx is done.
func (w *Watcher) Run(ctx context.Context, reload func()) {
	defer w.w.Close()
	base := filepath.Base(w.path)
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case ev, ok := <-w.w.Events:
			if !ok {
				return
			}
			name := filepath.Base(ev.Name)
			if name != base && name != "..data" {
				continue
			}
			if ev.Op&(fsnotify.Write|fsnotify.Create|fsnotify.Rename|fsnotify.Remove) != 0 {
				timer.Reset(debounce)
			}
		case err, ok := <-w.w.Errors:
			if !ok {
				return
			}
			w.log.Warn("config watch", "err", err)
		case <-timer.C:
			reload()
		}
	}
}
