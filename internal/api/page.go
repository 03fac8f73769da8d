package api

import (
	"embed"
	"encoding/json"
	"io/fs"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/model"
)

// Overview is the body of GET /v1/overview and of every GET /v1/events
// message: everything the live status page draws.
type Overview struct {
	Generation uint64    `json:"generation"`
	Built      time.Time `json:"built"`
	Now        time.Time `json:"now"` // when the overview was built (ages are relative to it)
	Node       string    `json:"node,omitempty"`
	Region     string    `json:"region,omitempty"`
	Probing    bool      `json:"probing"` // false: health comes from the config only
	DecidedAt  time.Time `json:"decided_at"`

	ConfigPath    string     `json:"config_path,omitempty"`
	LastReload    *time.Time `json:"last_reload,omitempty"`
	LastReloadErr string     `json:"last_reload_error,omitempty"`

	Services []ServiceOverview `json:"services"`
	Clusters []ClusterOverview `json:"clusters"`
	Probers  []ProberOverview  `json:"probers"`
	Changes  []ChangeOverview  `json:"changes"` // most recent first
	// Providers are the Route 53 / Cloudflare zones this node pushes to
	// (absent when none is configured).
	Providers []ProviderOverview `json:"providers,omitempty"`
}

// ProviderOverview is the last sync of one provider zone.
type ProviderOverview struct {
	Provider string     `json:"provider"`
	Zone     string     `json:"zone"`
	LastSync *time.Time `json:"last_sync,omitempty"` // last successful sync
	Error    string     `json:"error,omitempty"`     // the last sync's error, when it failed
	Notice   string     `json:"notice,omitempty"`    // a standing condition, e.g. no Load Balancing on the account
}

// Share modes of a service: how ServiceOverview's shares were computed.
const (
	ShareWeighted   = "weighted"    // by weight among the available endpoints
	ShareEqual      = "equal"       // roundrobin: equal among the available endpoints
	ShareFailover   = "failover"    // the first group with an available endpoint, by weight
	ShareByLocation = "by location" // geo, latency: depends on the client; shown equal among the available
)

// ServiceOverview is one service and the share of answers each endpoint gets.
type ServiceOverview struct {
	Name      string `json:"name"`
	Strategy  string `json:"strategy"`
	ShareMode string `json:"share_mode"`
	FailOpen  bool   `json:"fail_open,omitempty"` // no endpoint of some family available: its answers fail open
	NoData    bool   `json:"no_data,omitempty"`   // some family answers nothing: none available and when_all_down: nodata, or every endpoint drained or forced down
	// FailOpenFamilies and NoDataFamilies name those families (A, AAAA, CNAME).
	FailOpenFamilies []string           `json:"fail_open_families,omitempty"`
	NoDataFamilies   []string           `json:"no_data_families,omitempty"`
	Order            []string           `json:"failover_order,omitempty"`
	Endpoints        []EndpointOverview `json:"endpoints"`
	// Clients: for services that answer by where the client is (geo,
	// latency), the shares each group of clients gets, the clients we
	// cannot locate included.
	Clients []ClientSharesOverview `json:"clients,omitempty"`
}

// ClientSharesOverview is what one group of clients of a geo or latency
// service is answered.
type ClientSharesOverview struct {
	Clients   string             `json:"clients"`             // which clients, in words
	Unlocated bool               `json:"unlocated,omitempty"` // the group of the clients we cannot locate
	Shares    map[string]float64 `json:"shares"`              // endpoint target -> percent of its family's answers
	FailOpen  bool               `json:"fail_open,omitempty"`
	NoData    []string           `json:"no_data,omitempty"` // families that answer nothing
}

// EndpointOverview is one endpoint of a service.
type EndpointOverview struct {
	Target    string     `json:"target"`
	Family    string     `json:"family"` // A, AAAA or CNAME: shares add up to 100 within a family
	Cluster   string     `json:"cluster"`
	Weight    int        `json:"weight"`
	State     string     `json:"state"` // as answered: up, down, unknown
	Drained   bool       `json:"drained,omitempty"`
	Forced    bool       `json:"forced_down,omitempty"` // an operator or the config said down: never answered, not even by fail-open
	Available bool       `json:"available"`             // not down and not drained
	Share     float64    `json:"share"`                 // percent of the answers of its address family, 0..100 (geo, latency: among the clients we cannot locate)
	Probed    bool       `json:"probed"`                // health-checked by the prober ring (false: no health_check, or probing is off)
	Note      string     `json:"note,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	Since     *time.Time `json:"since,omitempty"`
	Voters    []string   `json:"voters,omitempty"`
	HeldUntil *time.Time `json:"held_until,omitempty"`
	Braked    bool       `json:"braked,omitempty"`
	// Capacity is the ready fraction the weight is drawn with, its source
	// and why (capacity-aware services only); EffectiveWeight is weight ×
	// that fraction.
	Capacity        *engine.CapacityState `json:"capacity,omitempty"`
	EffectiveWeight *float64              `json:"effective_weight,omitempty"`
}

// ClusterOverview is one cluster of the federation.
type ClusterOverview struct {
	Name      string     `json:"name"`
	Region    string     `json:"region"`
	State     string     `json:"state"` // ready, unreachable, failed-over
	Monitored bool       `json:"monitored"`
	Heartbeat bool       `json:"heartbeat"`                       // a heartbeat is configured
	LastBeat  *float64   `json:"heartbeat_age_seconds,omitempty"` // youngest heartbeat vote
	Since     *time.Time `json:"since,omitempty"`
	Reason    string     `json:"reason,omitempty"`
	Voters    []string   `json:"voters,omitempty"`
	HeldUntil *time.Time `json:"held_until,omitempty"`
	Drained   bool       `json:"drained,omitempty"`
	AdminDown bool       `json:"admin_down,omitempty"`
	Note      string     `json:"note,omitempty"`
}

// ProberOverview is one member of the prober ring.
type ProberOverview struct {
	Name       string   `json:"name"`
	Region     string   `json:"region"`
	Role       string   `json:"role,omitempty"`
	Self       bool     `json:"self,omitempty"`
	Outlier    bool     `json:"outlier,omitempty"`
	LastVoteAt *float64 `json:"last_vote_age_seconds,omitempty"`
}

// ChangeOverview is one decided state change of the failover timeline.
type ChangeOverview struct {
	At      time.Time `json:"at"`
	Kind    string    `json:"kind"`              // endpoint or cluster
	Service string    `json:"service,omitempty"` // endpoint changes
	Target  string    `json:"target"`            // the endpoint's target or the cluster's name
	From    string    `json:"from"`
	To      string    `json:"to"`
	Reason  string    `json:"reason"`
	Voters  []string  `json:"voters,omitempty"`
	// Held: a decision that kept the state (From == To) in words, e.g. a
	// removal the brake holds.
	Held string `json:"held,omitempty"`
}

// BuildOverview combines a snapshot (what is answered) and a health report
// (why) into the status page's view. snap may be nil (nothing loaded yet).
func BuildOverview(snap *engine.Snapshot, rep HealthReport) Overview {
	o := Overview{
		Now: time.Now().UTC(), Node: rep.Node, Region: rep.Region, Probing: rep.Probing, DecidedAt: rep.DecidedAt,
		Services: []ServiceOverview{}, Clusters: []ClusterOverview{}, Probers: []ProberOverview{}, Changes: []ChangeOverview{},
	}
	type key struct{ service, target string }
	eh := make(map[key]*EndpointHealth, len(rep.Endpoints))
	for i := range rep.Endpoints {
		e := &rep.Endpoints[i]
		eh[key{e.Service, e.Target}] = e
	}
	ch := make(map[string]*ClusterHealth, len(rep.Clusters))
	for i := range rep.Clusters {
		ch[rep.Clusters[i].Name] = &rep.Clusters[i]
	}
	if snap != nil {
		o.Generation, o.Built = snap.Generation(), snap.Built().UTC()
		d := snap.Desired()
		for _, s := range snap.Services() {
			var ms *model.Service
			if d != nil {
				if i := slices.IndexFunc(d.Services, func(m model.Service) bool { return m.Name == s.Name }); i >= 0 {
					ms = &d.Services[i]
				}
			}
			so := ServiceOverview{Name: s.Name, Strategy: s.Strategy, Endpoints: make([]EndpointOverview, len(s.Endpoints))}
			for i, e := range s.Endpoints {
				eo := EndpointOverview{Target: e.Target, Family: family(e.Target), Probed: rep.Probing && probed(ms), Cluster: e.Cluster, Weight: e.Weight, State: e.State.String(), Drained: e.Drained, Forced: e.Forced,
					Available: e.State != engine.Down && !e.Drained, Note: snap.Note(s.Name, e.Target)}
				if cp := e.Capacity; cp != nil {
					c, eff := *cp, e.EffectiveWeight()
					eo.Capacity, eo.EffectiveWeight = &c, &eff
				}
				if h := eh[key{s.Name, e.Target}]; h != nil {
					eo.Reason, eo.Voters, eo.HeldUntil, eo.Braked = h.Reason, h.Voters, h.HeldUntil, h.Braked
					if !h.Since.IsZero() {
						t := h.Since.UTC()
						eo.Since = &t
					}
				}
				so.Endpoints[i] = eo
			}
			cs, _ := snap.ServiceShares(s.Name)
			computeShares(&so, s, ms, cs)
			o.Services = append(o.Services, so)
		}
		if d != nil {
			for _, c := range d.Clusters {
				co := ClusterOverview{Name: c.Name, Region: c.Region, State: "ready", Heartbeat: c.Heartbeat != nil,
					Drained: c.Drain, AdminDown: c.State == model.StateDown, Note: snap.Note("", c.Name)}
				if h := ch[c.Name]; h != nil {
					fillCluster(&co, h)
					delete(ch, c.Name)
				}
				o.Clusters = append(o.Clusters, co)
			}
		}
	}
	for _, h := range rep.Clusters { // clusters the report knows and the snapshot does not
		if _, ok := ch[h.Name]; ok {
			co := ClusterOverview{Name: h.Name}
			fillCluster(&co, &h)
			o.Clusters = append(o.Clusters, co)
		}
	}
	for _, p := range rep.Probers {
		o.Probers = append(o.Probers, ProberOverview{Name: p.Name, Region: p.Region, Role: p.Role, Self: p.Name == rep.Node && rep.Node != "",
			Outlier: p.Outlier, LastVoteAt: p.LastVoteAgeSecond})
	}
	for _, c := range rep.Changes {
		co := ChangeOverview{At: c.At.UTC(), From: c.From, To: c.To, Reason: c.Reason, Voters: c.Voters}
		if name, ok := strings.CutPrefix(c.Subject, "cluster "); ok {
			co.Kind, co.Target = "cluster", name
		} else {
			co.Kind = "endpoint"
			co.Service, co.Target, _ = strings.Cut(c.Subject, " ")
		}
		co.Held = held(co)
		o.Changes = append(o.Changes, co)
	}
	return o
}

func fillCluster(co *ClusterOverview, h *ClusterHealth) {
	co.State, co.Monitored, co.Reason, co.Voters, co.HeldUntil = h.State, h.Monitored, h.Reason, h.Voters, h.HeldUntil
	if !h.Since.IsZero() {
		t := h.Since.UTC()
		co.Since = &t
	}
	for _, v := range h.Votes {
		if co.LastBeat == nil || v.AgeSeconds < *co.LastBeat {
			age := v.AgeSeconds
			co.LastBeat = &age
		}
	}
}

// computeShares sets the share of answers of every endpoint from the pools
// the engine draws from (engine.Snapshot.ServiceShares), per address
// family: the share of its family's answers. For services that answer by
// where the client is, each group of clients is listed in Clients and an
// endpoint's Share is the share among the clients we cannot locate.
func computeShares(so *ServiceOverview, s engine.ServiceStatus, ms *model.Service, cs engine.ClientShares) {
	so.ShareMode = ShareWeighted
	switch s.Strategy {
	case model.StrategyRoundRobin:
		so.ShareMode = ShareEqual
	case model.StrategyGeo, model.StrategyLatency:
		so.ShareMode = ShareByLocation
	case model.StrategyFailover:
		so.ShareMode = ShareFailover
		if ms != nil && ms.Failover != nil && len(ms.Failover.Order) > 0 {
			so.Order = slices.Clone(ms.Failover.Order)
		}
	}
	index := make(map[string]int, len(so.Endpoints))
	for i, e := range so.Endpoints {
		index[e.Target] = i
	}
	for _, g := range cs.Groups {
		co := ClientSharesOverview{Clients: g.Label(), Unlocated: g.Unlocated, Shares: map[string]float64{}}
		main := g.Unlocated || so.ShareMode != ShareByLocation
		for _, f := range g.Families {
			co.FailOpen = co.FailOpen || f.FailOpen
			if len(f.Shares) == 0 {
				co.NoData = append(co.NoData, f.Family)
			}
			for _, t := range f.Shares {
				co.Shares[t.Target] = t.Share
				if i, ok := index[t.Target]; ok && main {
					so.Endpoints[i].Share = t.Share
				}
			}
		}
		if main {
			for _, f := range g.Families {
				if f.FailOpen {
					so.FailOpenFamilies = append(so.FailOpenFamilies, f.Family)
				}
			}
			so.NoDataFamilies = co.NoData
			so.FailOpen, so.NoData = len(so.FailOpenFamilies) > 0, len(co.NoData) > 0
		}
		if so.ShareMode == ShareByLocation {
			so.Clients = append(so.Clients, co)
		}
	}
}

// probed reports whether the service's endpoints are health-checked.
func probed(ms *model.Service) bool {
	return ms != nil && ms.HealthCheck != nil && ms.HealthCheck.Kind != "" && ms.HealthCheck.Kind != model.CheckNone
}

// held says in words what a decision that kept a state did (From == To):
// a removal the brake holds, a recovery waiting for its hold-down, a new
// failure during one.
func held(c ChangeOverview) string {
	if c.From != c.To {
		return ""
	}
	switch {
	case c.Reason == "brake":
		return "down votes held by the brake: still answered (the removal applies one interval later if they stay)"
	case c.Reason == "hold-down":
		return "probes pass again: recovery held down until the hold-down ends"
	default:
		return "failed again during its hold-down: the hold-down starts over"
	}
}

// family is the answer family of a target: A, AAAA or CNAME.
func family(target string) string {
	a, err := netip.ParseAddr(target)
	switch {
	case err != nil:
		return engine.FamilyCNAME
	case a.Is4():
		return engine.FamilyA
	default:
		return engine.FamilyAAAA
	}
}

//go:embed assets
var pageAssets embed.FS

// registerPage serves the live status page at / with its assets, the
// overview at GET /v1/overview and its Server-Sent Events stream at
// GET /v1/events (see events.go).
func registerPage(mux *router, overview func() Overview, status func() Status, maxStreams int, m *Metrics) {
	build := func() Overview {
		o := overview()
		if status != nil {
			st := status()
			o.ConfigPath, o.LastReloadErr = st.ConfigPath, st.LastReloadErr
			if !st.LastReload.IsZero() {
				t := st.LastReload.UTC()
				o.LastReload = &t
			}
		}
		return o
	}
	static, _ := fs.Sub(pageAssets, "assets")
	index, _ := fs.ReadFile(static, "index.html")
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Cache-Control", "no-cache")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; connect-src 'self'")
		w.Write(index)
	})
	mux.Handle("GET /assets/", http.StripPrefix("/assets/", http.FileServerFS(static)))
	mux.HandleFunc("GET /v1/overview", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		writeJSON(w, http.StatusOK, build())
	})
	hub := newEventHub(build, maxStreams, m)
	mux.HandleFunc("GET /v1/events", hub.ServeHTTP)
}

// fingerprint is the overview without what merely ages with the clock (the
// page ages its figures itself): an unchanged fingerprint sends nothing.
// Ages become the times they point at, to the second.
func (o Overview) fingerprint() []byte {
	at := func(age *float64) *float64 {
		if age == nil {
			return nil
		}
		t := float64(o.Now.Add(-time.Duration(*age * float64(time.Second))).Unix())
		return &t
	}
	o.Probers = slices.Clone(o.Probers)
	for i := range o.Probers {
		o.Probers[i].LastVoteAt = at(o.Probers[i].LastVoteAt)
	}
	o.Clusters = slices.Clone(o.Clusters)
	for i := range o.Clusters {
		o.Clusters[i].LastBeat = at(o.Clusters[i].LastBeat)
	}
	o.Now = time.Time{}
	b, _ := json.Marshal(o)
	return b
}
