package ring

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"os"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/ringca"
)

// LoadTrust reads the ring CAs that ring.ca names, for the ring called
// trustDomain with ring.revoked; nil without ring.ca.
func LoadTrust(trustDomain string, mr model.Ring) (*ringca.Pool, error) {
	if len(mr.CA) == 0 {
		return nil, nil
	}
	return ringca.LoadPool(trustDomain, mr.CA, mr.Revoked)
}

// LoadCredential reads this node's credential (ring.credential); nil without one.
func LoadCredential(mr model.Ring) (*ringca.Credential, error) {
	if mr.Credential.CertFile == "" {
		return nil, nil
	}
	c, err := ringca.LoadCredential(mr.Credential.CertFile, mr.Credential.KeyFile)
	if err != nil {
		return nil, err
	}
	return &c, nil
}

// DefaultTrustCheck is how often a Keeper looks at the CA and credential
// files for a change (cert-manager renews a credential by updating its
// Secret, which the kubelet writes into the pod within about a minute).
const DefaultTrustCheck = 10 * time.Second

// Keeper keeps a running ring's peers, CAs, revocations and credential in
// step with the config (Update, on every reload) and with the files it
// names (Run: a credential renewed on disk is taken without a restart). A
// change that fails to load is logged and counted; what was in use stays.
type Keeper struct {
	Ring   *Ring
	Logger *slog.Logger

	mu    sync.Mutex
	td    string
	cfg   model.Ring // the trust fields last applied: Peers, CA, Revoked, Credential
	files [32]byte   // hash of the files' contents last applied
}

// Started records what the ring was started with, so that Update and Run
// apply changes only.
func (k *Keeper) Started(trustDomain string, mr model.Ring) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.td, k.cfg = trustDomain, trustFields(mr)
	k.files, _ = filesSum(k.cfg)
}

// trustFields keeps the fields of mr a Keeper follows.
func trustFields(mr model.Ring) model.Ring {
	return model.Ring{Peers: slices.Clone(mr.Peers), CA: slices.Clone(mr.CA), Revoked: slices.Clone(mr.Revoked), Credential: mr.Credential}
}

// Update applies a config: cheap when its trust fields did not change (the
// files are then left to Run). Safe for concurrent use.
func (k *Keeper) Update(trustDomain string, mr model.Ring) {
	k.mu.Lock()
	defer k.mu.Unlock()
	cfg := trustFields(mr)
	if k.td == trustDomain && reflect.DeepEqual(cfg, k.cfg) {
		return
	}
	k.apply(trustDomain, cfg, "config")
}

// Run looks at the files every interval until ctx is done.
func (k *Keeper) Run(ctx context.Context, every time.Duration) {
	if every <= 0 {
		every = DefaultTrustCheck
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		k.mu.Lock()
		if sum, ok := filesSum(k.cfg); ok && sum != k.files {
			k.apply(k.td, k.cfg, "files")
		}
		k.mu.Unlock()
	}
}

// apply loads and applies cfg (k.mu held). On an error nothing changes
// but what is remembered: the same files are not tried again until they
// change.
func (k *Keeper) apply(td string, cfg model.Ring, why string) {
	k.td, k.cfg = td, cfg
	k.files, _ = filesSum(cfg)
	r := k.Ring
	fail := func(what string, err error) {
		r.m.TrustReloads.WithLabelValues("error").Inc()
		k.Logger.Error("ring: "+what+" not applied: the previous one stays in use", "trigger", why, "err", err)
	}
	pool, err := LoadTrust(td, cfg)
	if err != nil {
		fail("ring.ca / ring.revoked", err)
		return
	}
	// The CAs first: a credential renewed by a new CA needs it.
	if err := r.SetTrust(cfg.Peers, pool); err != nil {
		fail("ring.peers / ring.ca", err)
		return
	}
	cred, err := LoadCredential(cfg)
	if err != nil {
		fail("ring.credential", err)
		return
	}
	if cred != nil {
		if err := r.SetCredential(*cred); err != nil {
			fail("ring.credential", err)
			return
		}
	}
	r.m.TrustReloads.WithLabelValues("ok").Inc()
}

// filesSum hashes the contents of the files cfg names; false when one
// cannot be read (it is being replaced: look again next time).
func filesSum(cfg model.Ring) ([32]byte, bool) {
	h := sha256.New()
	names := append(slices.Clone(cfg.CA), cfg.Credential.CertFile, cfg.Credential.KeyFile)
	for _, f := range names {
		if f == "" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			return [32]byte{}, false
		}
		h.Write([]byte(f))
		h.Write([]byte{0})
		h.Write(b)
	}
	var out [32]byte
	h.Sum(out[:0])
	return out, true
}

// FromConfig is the ring configuration the config file's ring section
// gives, the same for every front end (meridian serve's prober, the CoreDNS
// plugin's observer): node name, role, region, gossip addresses, key and
// encryption, peers, the CA's trust, clock skew, intervals. The caller adds
// what is its own: its identity and credential, the callbacks, metrics, a
// computed advertise address.
func FromConfig(d *model.Desired, node, role string) (Config, error) {
	pool, err := LoadTrust(d.DefaultTrustDomain(), d.Ring)
	if err != nil {
		return Config{}, err
	}
	return Config{
		NodeName: node, Role: role, Region: d.Ring.Region,
		Bind: d.Ring.Bind, Advertise: d.Ring.Advertise, Seeds: d.Ring.Seeds,
		KeyFile: d.Ring.KeyFile, Label: d.Ring.Label, RequireEncryption: d.Ring.RequireEncryption,
		RejoinInterval: d.Ring.RejoinInterval.D(), Memberlist: d.Ring.Memberlist,
		Peers: d.Ring.Peers, MaxClockSkew: d.Ring.MaxClockSkew.D(), Trust: pool,
		// The probers' summary period: how long a prober counts as live.
		SummaryInterval: d.Health.Interval.D(),
	}, nil
}
