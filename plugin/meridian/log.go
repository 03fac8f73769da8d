package meridian

import (
	"context"
	"log/slog"
)

// slogFor routes the slog records of Meridian's packages (ring, watcher)
// into CoreDNS's plugin log.
func slogFor() *slog.Logger { return slog.New(clogHandler{}) }

type clogHandler struct{ attrs []slog.Attr }

func (clogHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h clogHandler) Handle(_ context.Context, r slog.Record) error {
	msg := r.Message
	add := func(a slog.Attr) bool {
		msg += " " + a.Key + "=" + a.Value.String()
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	switch {
	case r.Level >= slog.LevelError:
		log.Error(msg)
	case r.Level >= slog.LevelWarn:
		log.Warning(msg)
	default:
		log.Info(msg)
	}
	return nil
}

func (h clogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return clogHandler{attrs: append(append([]slog.Attr{}, h.attrs...), as...)}
}

func (h clogHandler) WithGroup(string) slog.Handler { return h }
