package notify

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestValidate(t *testing.T) {
	cases := []struct {
		name string
		r    Receiver
		path string // "" = valid
		msg  string
	}{
		{"a webhook with a URL and a secret is valid", Receiver{Name: "hook", Kind: "webhook", URL: "https://hooks.example.com/x", SecretFile: "/s"}, "", ""},
		{"a pagerduty receiver without a URL uses the Events API", Receiver{Name: "pd", Kind: "pagerduty", RoutingKeyFile: "/k"}, "", ""},
		{"a missing name is named", Receiver{Kind: "webhook", URL: "http://h/"}, "notifications.receivers[0].name", "is required"},
		{"an unknown kind lists the allowed ones", Receiver{Name: "x", Kind: "email", URL: "http://h/"}, "notifications.receivers[0].kind", "allowed: webhook, slack, pagerduty"},
		{"a URL that is not http is refused", Receiver{Name: "x", Kind: "slack", URL: "ftp://h/"}, "notifications.receivers[0].url", "not an http(s) URL"},
		{"a slack receiver needs a URL", Receiver{Name: "x", Kind: "slack"}, "notifications.receivers[0].url", "is required"},
		{"url and url_file together are refused", Receiver{Name: "x", Kind: "slack", URL: "http://h/", URLFile: "/u"}, "notifications.receivers[0].url", "not both"},
		{"pagerduty needs a routing key file", Receiver{Name: "x", Kind: "pagerduty"}, "notifications.receivers[0].routing_key_file", "is required"},
		{"only webhooks sign", Receiver{Name: "x", Kind: "slack", URL: "http://h/", SecretFile: "/s"}, "notifications.receivers[0].secret_file", "only a webhook"},
		{"an unknown event kind is named", Receiver{Name: "x", Kind: "webhook", URL: "http://h/", Events: []string{"failover", "boom"}}, "notifications.receivers[0].events[1]", "allowed: decided, failover, shift, rollback"},
		{"a timeout over a minute is refused", Receiver{Name: "x", Kind: "webhook", URL: "http://h/", Timeout: 2 * time.Minute}, "notifications.receivers[0].timeout", "allowed 100ms..1m"},
		{"a negative queue size is refused", Receiver{Name: "x", Kind: "webhook", URL: "http://h/", QueueSize: -1}, "notifications.receivers[0].queue_size", "out of range"},
		{"too many attempts are refused", Receiver{Name: "x", Kind: "webhook", URL: "http://h/", MaxAttempts: 21}, "notifications.receivers[0].max_attempts", "allowed 1..20"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Receivers: []Receiver{tc.r}}
			errs := c.Validate()
			if tc.path == "" {
				assert.Empty(t, errs)
				return
			}
			if assert.Len(t, errs, 1) {
				assert.Equal(t, tc.path, errs[0].Path)
				assert.Contains(t, errs[0].Msg, tc.msg)
			}
		})
	}
}

func TestValidateRefusesDuplicateNames(t *testing.T) {
	c := Config{Receivers: []Receiver{{Name: "a", Kind: "webhook", URL: "http://h/"}, {Name: "a", Kind: "webhook", URL: "http://h/"}}}
	errs := c.Validate()
	if assert.Len(t, errs, 1) {
		assert.Equal(t, "notifications.receivers[1].name", errs[0].Path)
	}
}

func TestApplyDefaults(t *testing.T) {
	c := Config{Receivers: []Receiver{{Name: "pd", Kind: "pagerduty", RoutingKeyFile: "/k"}}}
	c.ApplyDefaults()
	assert.Equal(t, Receiver{Name: "pd", Kind: "pagerduty", URL: DefaultPagerDutyURL, RoutingKeyFile: "/k", Events: EventKinds,
		Timeout: DefaultTimeout, QueueSize: DefaultQueueSize, MaxAttempts: DefaultMaxAttempts}, c.Receivers[0])
}

func TestRedactKeepsOnlySchemeAndHost(t *testing.T) {
	assert.Equal(t, "https://hooks.slack.com/…", redact("https://hooks.slack.com/services/T0/B0/SECRET"))
}
