// Package notify sends Meridian's events — decided changes, failovers,
// progressive-shift steps and rollbacks — to webhooks: a generic JSON body
// signed with an HMAC-SHA256 header (X-Meridian-Signature, over the
// X-Meridian-Timestamp header, a dot and the body, so that a receiver can
// refuse a replay: Verify), a
// Slack-compatible {"text": ...} body, or a PagerDuty Events API v2 event
// (trigger on a failover, resolve with the same dedup_key on recovery).
//
// Sending never blocks the caller: Notify appends to a bounded queue per
// receiver (the oldest event is dropped and counted when it is full) and
// one goroutine per receiver sends in order, with up to max_attempts
// attempts and an exponential backoff on network errors, 5xx, 408 and 429.
// A 4xx answer is not retried; a 3xx is neither followed (it would re-post
// the body elsewhere) nor retried. Secrets (the URL of a Slack webhook, the
// HMAC key, the PagerDuty routing key) come from secret files and are never
// logged: URLs are logged as scheme://host/… only.
//
// follow.ChangeEvent is the pure mapping of a failover decision's change to an
// event; the serving Follower calls it for every recorded change, so
// `meridian serve` and the CoreDNS plugin notify the same way. Other
// producers (the progressive shift) build an Event and call Notify.
package notify
