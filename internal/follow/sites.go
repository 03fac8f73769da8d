package follow

import (
	"context"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/ring"
	"github.com/meridian-gslb/meridian/internal/serving"
	"github.com/meridian-gslb/meridian/internal/sites"
)

// SitesRing is where a SitesFollower reads the ring's members (*ring.Ring).
type SitesRing interface {
	Members() []ring.Member
}

// SitesFollower keeps the pipeline's view of the ring's sites (the names
// and nameservers of zones[].ring, internal/sites) in step with the ring's
// live trusted probers. Serve nodes and the CoreDNS plugin run the same one.
type SitesFollower struct {
	Pipeline *serving.Pipeline
	Ring     SitesRing
	Logger   *slog.Logger

	last *sites.View
	mu   sync.Mutex
	seen map[string]bool // every site seen live since this process started
}

// Seen reports whether site has been seen live by this node. Safe for
// concurrent use.
func (f *SitesFollower) Seen(site string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.seen[site]
}

// KeepNameserver is providers.State.KeepNameserver for the zones of d: the
// ring's nameserver ns-<site>.<apex> of a zone with ring.nameservers whose
// site this node has never seen live (a new site running alone must not
// take the others out of the parent's delegation).
func (f *SitesFollower) KeepNameserver(d *model.Desired) func(string) bool {
	var apexes []string
	for _, z := range d.Zones {
		if z.Ring != nil && z.Ring.Nameservers {
			apexes = append(apexes, model.CanonicalName(z.Apex))
		}
	}
	return func(name string) bool {
		name = model.CanonicalName(name)
		for _, apex := range apexes {
			label, ok := strings.CutSuffix(name, "."+apex)
			site, isNS := strings.CutPrefix(label, "ns-")
			if ok && isNS && site != "" && !strings.Contains(site, ".") {
				return !f.Seen(site)
			}
		}
		return false
	}
}

// Run updates the view on every wake and every interval until ctx is done.
func (f *SitesFollower) Run(ctx context.Context, wake <-chan struct{}, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if err := f.Update(); err != nil {
			f.log().Error("republish after a change of the ring's sites failed: previous snapshot keeps serving", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-wake:
		case <-tick.C:
		}
	}
}

func (f *SitesFollower) log() *slog.Logger { return loggerOr(f.Logger, f.Pipeline) }

// Update builds the view from the members now and hands it to the pipeline
// when it changed. Only calls from one goroutine.
func (f *SitesFollower) Update() error {
	v := SitesView(f.Ring.Members())
	if v.Equal(f.last) {
		return nil
	}
	f.last = v
	f.mu.Lock()
	if f.seen == nil {
		f.seen = map[string]bool{}
	}
	for s := range v.Sites {
		f.seen[s] = true
	}
	f.mu.Unlock()
	if len(v.Conflicts) > 0 {
		f.log().Error("sites claimed by members of different scopes are not served (ring.<zone>, ns-<site>): issue one credential scope per site", "sites", v.Conflicts)
	}
	f.log().Info("the ring's sites changed", "sites", v.Sites)
	return f.Pipeline.SetSites(v)
}

// SitesView is the view of the live trusted probers among members.
func SitesView(members []ring.Member) *sites.View {
	var ms []sites.Member
	for _, m := range members {
		if !m.Trusted || m.Role != ring.RoleProber || m.Site == "" {
			continue
		}
		sm := sites.Member{Site: m.Site, Scope: m.CredentialScope, DNS: m.DNSAddresses}
		if sm.Scope == "" {
			sm.Scope = "peer:" + m.Region // a ring.peers entry: its site and region
		}
		if ap, err := netip.ParseAddrPort(m.Addr); err == nil {
			sm.Gossip = ap.Addr()
		}
		ms = append(ms, sm)
	}
	return sites.FromMembers(ms)
}
