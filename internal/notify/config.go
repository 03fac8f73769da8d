package notify

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Defaults of a receiver.
const (
	DefaultTimeout     = 5 * time.Second // notifications.receivers[].timeout
	DefaultQueueSize   = 256             // notifications.receivers[].queue_size
	DefaultMaxAttempts = 5               // notifications.receivers[].max_attempts
	MaxQueueSize       = 100_000
	MaxAttempts        = 20
)

// Receiver kinds.
const (
	KindWebhook   = "webhook"
	KindSlack     = "slack"
	KindPagerDuty = "pagerduty"
)

// DefaultPagerDutyURL is the Events API v2 enqueue URL, used by a
// pagerduty receiver without url / url_file.
const DefaultPagerDutyURL = "https://events.pagerduty.com/v2/enqueue"

// Config is the `notifications` section of the configuration file.
type Config struct {
	Receivers []Receiver `yaml:"receivers"` // where events are sent (default: none)
}

// Receiver is one destination of notifications.
type Receiver struct {
	Name           string        `yaml:"name"`             // unique, used in metrics and logs (required)
	Kind           string        `yaml:"kind"`             // webhook, slack or pagerduty (required)
	URL            string        `yaml:"url"`              // http(s) URL; one of url / url_file (pagerduty: default the Events API v2 URL)
	URLFile        string        `yaml:"url_file"`         // secret file holding the URL (a Slack incoming-webhook URL is a secret)
	SecretFile     string        `yaml:"secret_file"`      // webhook: HMAC-SHA256 key for X-Meridian-Signature over X-Meridian-Timestamp "." body (default: unsigned)
	RoutingKeyFile string        `yaml:"routing_key_file"` // pagerduty: the integration's routing key (required for pagerduty)
	Events         []string      `yaml:"events"`           // event kinds sent: decided, failover, shift, rollback (default: all)
	Timeout        time.Duration `yaml:"timeout"`          // per attempt (default 5s; 100ms..1m)
	QueueSize      int           `yaml:"queue_size"`       // events waiting; the oldest is dropped when full (default 256; 1..100000)
	MaxAttempts    int           `yaml:"max_attempts"`     // attempts per event, with backoff from 500ms doubling to 30s (default 5; 1..20)
}

// Validate checks the section; paths are full YAML paths.
func (c *Config) Validate() []model.FieldError {
	v := validator{}
	seen := map[string]bool{}
	for i, r := range c.Receivers {
		v.prefix = fmt.Sprintf("notifications.receivers[%d].", i)
		v.identity(r, seen)
		seen[r.Name] = true
		v.destination(r)
		v.delivery(r)
	}
	return v.errs
}

// validator collects the errors of the receivers, each under its path.
type validator struct {
	prefix string // the path of the receiver being checked
	errs   []model.FieldError
}

// add records an error for field of the receiver being checked.
func (v *validator) add(field, format string, args ...any) {
	v.errs = append(v.errs, model.FieldError{Path: v.prefix + field, Msg: fmt.Sprintf(format, args...)})
}

// identity checks a receiver's name (unique among those seen before) and
// kind.
func (v *validator) identity(r Receiver, seen map[string]bool) {
	switch {
	case strings.TrimSpace(r.Name) == "":
		v.add("name", "is required (a unique name, used in metrics and logs)")
	case seen[r.Name]:
		v.add("name", "%q is used by another receiver (names are unique)", r.Name)
	case len(r.Name) > 63 || strings.ContainsAny(r.Name, " \t\n\"'"):
		v.add("name", "%q is not allowed (up to 63 characters, no spaces or quotes)", r.Name)
	}
	switch r.Kind {
	case KindWebhook, KindSlack, KindPagerDuty:
	case "":
		v.add("kind", "is required (allowed: webhook, slack, pagerduty)")
	default:
		v.add("kind", "%q is not allowed (allowed: webhook, slack, pagerduty)", r.Kind)
	}
}

// destination checks where a receiver sends: its URL and the secrets its
// kind takes (a webhook's signing key, a pagerduty routing key).
func (v *validator) destination(r Receiver) {
	switch {
	case r.URL != "" && r.URLFile != "":
		v.add("url", "set url or url_file, not both")
	case r.URL != "":
		if err := checkURL(r.URL); err != nil {
			v.add("url", "%v", err)
		}
	case r.URLFile == "" && r.Kind != KindPagerDuty:
		v.add("url", "is required (or url_file, a secret file holding the URL)")
	}
	if r.SecretFile != "" && r.Kind != KindWebhook {
		v.add("secret_file", "only a webhook receiver signs its body (kind is %q)", r.Kind)
	}
	if r.Kind == KindPagerDuty && r.RoutingKeyFile == "" {
		v.add("routing_key_file", "is required for a pagerduty receiver (a secret file holding the routing key)")
	}
	if r.RoutingKeyFile != "" && r.Kind != KindPagerDuty {
		v.add("routing_key_file", "only a pagerduty receiver has a routing key (kind is %q)", r.Kind)
	}
}

// delivery checks what a receiver is sent and how: its event kinds, the
// timeout, the queue size and the attempts.
func (v *validator) delivery(r Receiver) {
	for j, e := range r.Events {
		if !slices.Contains(EventKinds, e) {
			v.add(fmt.Sprintf("events[%d]", j), "%q is not allowed (allowed: %s)", e, strings.Join(EventKinds, ", "))
		}
	}
	if t := r.Timeout; t != 0 && (t < 100*time.Millisecond || t > time.Minute) {
		v.add("timeout", "%s is out of range (allowed 100ms..1m; 0 = default %s)", t, DefaultTimeout)
	}
	if n := r.QueueSize; n < 0 || n > MaxQueueSize {
		v.add("queue_size", "%d is out of range (allowed 1..%d; 0 = default %d)", n, MaxQueueSize, DefaultQueueSize)
	}
	if n := r.MaxAttempts; n < 0 || n > MaxAttempts {
		v.add("max_attempts", "%d is out of range (allowed 1..%d; 0 = default %d)", n, MaxAttempts, DefaultMaxAttempts)
	}
}

// checkURL accepts an absolute http or https URL with a host.
func checkURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("%q is not an http(s) URL with a host", redact(s))
	}
	return nil
}

// redact keeps scheme and host of a URL: a webhook URL's path often holds
// its secret (Slack), so it is never logged or shown whole.
func redact(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" {
		return "<invalid URL>"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// ApplyDefaults fills the defaults in.
func (c *Config) ApplyDefaults() {
	for i := range c.Receivers {
		r := &c.Receivers[i]
		if r.Timeout == 0 {
			r.Timeout = DefaultTimeout
		}
		if r.QueueSize == 0 {
			r.QueueSize = DefaultQueueSize
		}
		if r.MaxAttempts == 0 {
			r.MaxAttempts = DefaultMaxAttempts
		}
		if r.Kind == KindPagerDuty && r.URL == "" && r.URLFile == "" {
			r.URL = DefaultPagerDutyURL
		}
		if len(r.Events) == 0 {
			r.Events = slices.Clone(EventKinds)
		}
	}
}
