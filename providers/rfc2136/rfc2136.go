// Package rfc2136 writes into a zone kept by a primary that takes DNS
// UPDATE (RFC 2136) signed with TSIG (RFC 8945): BIND, Knot, PowerDNS.
// It implements providers.Provider, so the reconciler, the writer
// election, the request budget, the retries and the metrics apply as for
// Route 53 and Cloudflare. In delegate mode (the default) the zone is a
// parent that gets Meridian's delegations; in direct mode it gets the
// decided answers of the services inside it (Translate), plain records
// with an ownership TXT per name. Both read and write the same way:
//
//   - Records reads the whole zone by AXFR over TCP, signed with the key:
//     the names below a delegation (glue, ownership TXT) are occluded, so
//     queries could not see them, and only a transfer shows every name a
//     plan must consider. Every message of the answer must carry a valid
//     TSIG (BIND, Knot and PowerDNS sign each one); records the signer
//     keeps (RRSIG, NSEC, NSEC3, NSEC3PARAM, private types) are left out.
//   - Apply sends the changes as UPDATE messages of at most BatchRecords
//     records, each name's changes (its ownership TXT included) whole in
//     one message. Each change carries a prerequisite: a created RRset must
//     not exist yet, an updated or deleted one must still hold exactly the
//     values read. A change someone made in between (or a retried update
//     that went through before its answer was lost) fails the prerequisite
//     instead of being overwritten; the next pass reads again. When the
//     primary refuses a message (a prerequisite, its update policy), it is
//     split by name until the refused names are alone, and only those are
//     reported; NOTAUTH (key, zone) ends the pass.
//   - Answers must be signed with the key; an unsigned NOERROR is an error.
//
// The key is read from its file on every pass (a file that turns bad keeps
// the last good key, logged).
package rfc2136

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/xfr"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/apicall"
	"github.com/meridian-gslb/meridian/providers/plan"
)

// Algorithms are the TSIG algorithms a key file may name.
var Algorithms = []string{"hmac-sha256", "hmac-sha384", "hmac-sha512"}

// Defaults of Options.
const (
	DefaultMaxRecords   = 1_000_000 // records one transfer may bring
	DefaultBatchRecords = 500       // records (prerequisites and updates) in one UPDATE
	maxMessageBytes     = 60_000    // packed UPDATE size, below the 65 535 of TCP with room for the TSIG
)

// Options of a Provider. Zero fields take their defaults.
type Options struct {
	Server        string        // the primary, IP:port (required)
	KeyFile       string        // the TSIG key file (required): BIND format or hmac-sha256:NAME:BASE64
	RequestBudget int           // transfers and UPDATE messages per BudgetWindow, retries included (default 10)
	BudgetWindow  time.Duration // (default 1s)
	// Retries of a request after SERVFAIL, a timeout or a broken
	// connection (zero: the apicall defaults: 5 attempts, backoff 1s
	// doubling up to 30s, 30s per attempt).
	MaxAttempts    int
	Backoff        time.Duration
	MaxBackoff     time.Duration
	RequestTimeout time.Duration
	MaxRecords     int                   // a transfer bringing more fails (default 1 000 000)
	BatchRecords   int                   // records per UPDATE (default 500)
	Logger         *slog.Logger          // (default slog.Default())
	Metrics        *apicall.Metrics      // the shared provider API metrics (default: registered nowhere)
	Registerer     prometheus.Registerer // where this package's metrics are registered (default: nowhere)
	// Sleep waits between retries; it returns ctx's error when ctx ends
	// first (default: a timer).
	Sleep func(ctx context.Context, d time.Duration) error
}

// Provider is one zone's primary. It implements providers.Provider;
// like every Provider it serves one reconciler at a time.
type Provider struct {
	opts   Options
	caller *apicall.Caller
	log    *slog.Logger
	m      *metrics

	mu     sync.Mutex
	key    xfr.Key                          // the last good key
	keyErr string                           // the key file's error last logged
	live   map[string]map[plan.Key][]dns.RR // zone → its RRsets as last read
}

var _ providers.Provider = (*Provider)(nil)

// New returns a provider of opts.Server. It reads the key file and fails
// when it cannot: there is no last good key yet.
func New(opts Options) (*Provider, error) {
	if opts.Server == "" {
		return nil, fmt.Errorf("rfc2136: no server")
	}
	if opts.RequestBudget <= 0 {
		opts.RequestBudget = model.DefaultRFC2136Budget
	}
	if opts.BudgetWindow <= 0 {
		opts.BudgetWindow = model.DefaultRFC2136BudgetWindow
	}
	if opts.MaxRecords <= 0 {
		opts.MaxRecords = DefaultMaxRecords
	}
	if opts.BatchRecords <= 0 {
		opts.BatchRecords = DefaultBatchRecords
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Metrics == nil {
		opts.Metrics = apicall.NewMetrics(nil)
	}
	pol := apicall.Policy{MaxAttempts: opts.MaxAttempts, Backoff: opts.Backoff, MaxBackoff: opts.MaxBackoff, RequestTimeout: opts.RequestTimeout}.WithDefaults()
	opts.MaxAttempts, opts.Backoff, opts.MaxBackoff, opts.RequestTimeout = pol.MaxAttempts, pol.Backoff, pol.MaxBackoff, pol.RequestTimeout
	key, err := xfr.LoadKeyFileWith(opts.KeyFile, Algorithms...)
	if err != nil {
		return nil, fmt.Errorf("rfc2136 %s: tsig_key_file: %w", opts.Server, err)
	}
	p := &Provider{opts: opts, log: opts.Logger, m: newMetrics(opts.Registerer), key: key, live: map[string]map[plan.Key][]dns.RR{}}
	p.caller = &apicall.Caller{
		Provider: providerLabel, Policy: pol, Budget: apicall.NewRate(float64(opts.RequestBudget) / opts.BudgetWindow.Seconds()),
		Classify: classify, Metrics: opts.Metrics, Logger: opts.Logger, Sleep: opts.Sleep,
	}
	return p, nil
}

// NewFromConfig builds the provider of a providers.rfc2136[] entry; opts
// gives the logger and metrics, z's fields win over opts'.
func NewFromConfig(z model.RFC2136Zone, opts Options) (*Provider, error) {
	ap, err := model.ParseNotifyTarget(z.Server)
	if err != nil {
		return nil, fmt.Errorf("rfc2136 zone %s: server %q: %w", z.Zone, z.Server, err)
	}
	opts.Server, opts.KeyFile = ap.String(), z.TSIGKeyFile
	if z.RequestBudget > 0 {
		opts.RequestBudget = z.RequestBudget
	}
	if w := z.RequestBudgetWindow.D(); w > 0 {
		opts.BudgetWindow = w
	}
	pol := apicall.Policy{MaxAttempts: opts.MaxAttempts, Backoff: opts.Backoff, MaxBackoff: opts.MaxBackoff, RequestTimeout: opts.RequestTimeout}.With(z.ProviderAPI)
	opts.MaxAttempts, opts.Backoff, opts.MaxBackoff, opts.RequestTimeout = pol.MaxAttempts, pol.Backoff, pol.MaxBackoff, pol.RequestTimeout
	p, err := New(opts)
	if err != nil {
		return nil, fmt.Errorf("rfc2136 zone %s: %w", z.Zone, err)
	}
	return p, nil
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return providerLabel }

// currentKey reads the key file again and returns the key to sign with: the
// file's, or the last good one when the file cannot be read now (logged
// once per distinct error).
func (p *Provider) currentKey() xfr.Key {
	k, err := xfr.LoadKeyFileWith(p.opts.KeyFile, Algorithms...)
	p.mu.Lock()
	defer p.mu.Unlock()
	if err != nil {
		if err.Error() != p.keyErr {
			p.keyErr = err.Error()
			p.log.Warn("rfc2136: cannot read the TSIG key file again: signing with the key read before", "server", p.opts.Server, "err", err)
		}
		return p.key
	}
	p.key, p.keyErr = k, ""
	return k
}
