package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/notify"
)

func TestParseNotifications(t *testing.T) {
	t.Run("a receiver gets its defaults", func(t *testing.T) {
		f, err := Parse("m.yaml", []byte(base+"notifications:\n  receivers:\n    - {name: pd, kind: pagerduty, routing_key_file: /etc/meridian/pd.key}\n"))
		require.NoError(t, err)
		require.Len(t, f.Notifications.Receivers, 1)
		r := f.Notifications.Receivers[0]
		assert.Equal(t, notify.DefaultPagerDutyURL, r.URL)
		assert.Equal(t, 5*time.Second, r.Timeout)
		assert.Equal(t, notify.EventKinds, r.Events)
	})
	t.Run("a bad receiver is refused naming the field and its line", func(t *testing.T) {
		_, err := Parse("m.yaml", []byte(base+"notifications:\n  receivers:\n    - name: chat\n      kind: email\n      url: https://hooks.example.com/x\n"))
		require.Error(t, err)
		var le *LoadError
		require.ErrorAs(t, err, &le)
		require.Len(t, le.Errors, 1)
		assert.Equal(t, "notifications.receivers[0].kind", le.Errors[0].Path)
		assert.Equal(t, 18, le.Errors[0].Line, "the kind: line")
		assert.Contains(t, le.Errors[0].Msg, "allowed: webhook, slack, pagerduty")
	})
	t.Run("an unknown field lists the receiver's fields", func(t *testing.T) {
		_, err := Parse("m.yaml", []byte(base+"notifications:\n  receivers:\n    - {name: x, kind: webhook, url: http://h/, secret: abc}\n"))
		require.Error(t, err)
		assert.Contains(t, err.Error(), "secret_file")
	})
}
