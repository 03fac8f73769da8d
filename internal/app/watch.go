package app

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

// watcher watches the config file's directory, so that atomic replacements
// (rename over the file, ConfigMap symlink swaps) are seen too.
type watcher struct {
	w    *fsnotify.Watcher
	path string
	log  *slog.Logger
}

func newWatcher(path string, log *slog.Logger) (*watcher, error) {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", path, err)
	}
	if err := w.Add(filepath.Dir(path)); err != nil {
		w.Close()
		return nil, fmt.Errorf("watch %s: %w", path, err)
	}
	return &watcher{w: w, path: path, log: log}, nil
}

// run calls reload after changes to the file settle, until ctx is done.
func (w *watcher) run(ctx context.Context, reload func()) {
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
