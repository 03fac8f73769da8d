// Package admin holds the operators' overrides — drain, force up/down,
// weight — with who set them, why and until when. The state is a
// last-writer-wins set keyed by override id, so nodes of the ring merge
// each other's states without losing a change, and it persists in a small
// file written atomically.
package admin

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Kinds of overrides.
const (
	KindDrain     = "drain"      // out of the answers, nothing deleted
	KindForceUp   = "force-up"   // answered whatever the probes say
	KindForceDown = "force-down" // out of the answers whatever the probes say
	KindWeight    = "weight"     // endpoint weight replaced
	KindShift     = "shift"      // a service's traffic moved step by step to a cluster (see internal/shift)
)

// Kinds lists every kind, in documentation order.
var Kinds = []string{KindDrain, KindForceUp, KindForceDown, KindWeight, KindShift}

// Override is one operator decision on a cluster or an endpoint.
type Override struct {
	ID       string     `json:"id"`
	Kind     string     `json:"kind"`
	Cluster  string     `json:"cluster,omitempty"`  // a whole cluster (drain, force-up, force-down)
	Service  string     `json:"service,omitempty"`  // with endpoint: one endpoint of a service
	Endpoint string     `json:"endpoint,omitempty"` // address or CNAME target
	Weight   *int       `json:"weight,omitempty"`   // kind weight: 0..1000
	Shift    *Shift     `json:"shift,omitempty"`    // kind shift: the spec and where it stands
	Who      string     `json:"who"`
	Reason   string     `json:"reason"`
	At       time.Time  `json:"at"`
	Expires  *time.Time `json:"expires,omitempty"`
	// Forced records a change accepted with force past a guard rail: what
	// the rule said ("" = no rule was broken).
	Forced string `json:"forced,omitempty"`
}

// Target names what the override applies to.
func (o Override) Target() string {
	if o.Kind == KindShift {
		return "service " + strings.TrimSuffix(o.Service, ".")
	}
	if o.Cluster != "" {
		return "cluster " + o.Cluster
	}
	return "endpoint " + o.Endpoint + " of " + strings.TrimSuffix(o.Service, ".")
}

// Describe is the human note shown on the status page and in explain.
func (o Override) Describe() string {
	var b strings.Builder
	switch o.Kind {
	case KindDrain:
		b.WriteString("drained")
	case KindForceUp:
		b.WriteString("forced up")
	case KindForceDown:
		b.WriteString("forced down")
	case KindWeight:
		if o.Weight != nil {
			fmt.Fprintf(&b, "weight set to %d", *o.Weight)
		} else {
			b.WriteString("weight set") // never stored without one (validate); kept safe anyway
		}
	case KindShift:
		if o.Shift != nil {
			b.WriteString(o.Shift.Describe())
		}
	}
	fmt.Fprintf(&b, " by %s", o.Who)
	if o.Reason != "" {
		fmt.Fprintf(&b, ": %s", o.Reason)
	}
	if o.Expires != nil {
		fmt.Fprintf(&b, " (until %s)", o.Expires.UTC().Format(time.RFC3339))
	}
	if o.Forced != "" {
		fmt.Fprintf(&b, " [forced past %s]", o.Forced)
	}
	return b.String()
}

// Active reports whether o applies at now.
func (o Override) Active(now time.Time) bool { return o.Expires == nil || now.Before(*o.Expires) }

// Request is a new override as the API receives it.
type Request struct {
	Kind      string `json:"kind"`
	Cluster   string `json:"cluster,omitempty"`
	Service   string `json:"service,omitempty"`
	Endpoint  string `json:"endpoint,omitempty"`
	Weight    *int   `json:"weight,omitempty"`
	Reason    string `json:"reason"`
	ExpiresIn string `json:"expires_in,omitempty"` // Go duration, e.g. 30m
	// Force accepts a drain or force-down that a guard rail (min_healthy)
	// refuses; the override records what was forced.
	Force bool `json:"force,omitempty"`

	// Kind shift (with Service): see internal/shift.Spec.
	To          string `json:"to,omitempty"`           // target cluster
	Steps       []int  `json:"steps,omitempty"`        // default 1,5,25,50,100
	Every       string `json:"every,omitempty"`        // Go duration, default 5m
	AbortIf     string `json:"abort_if,omitempty"`     // PromQL guard, optional
	MaxFailures *int   `json:"max_failures,omitempty"` // guard errors tolerated in a row, default 0
}

// FieldError is a rejected request field.
type FieldError struct{ Field, Msg string }

func (e FieldError) Error() string { return e.Field + ": " + e.Msg }

// Validate checks r against the desired state and returns the override it
// asks for (without id, who and time).
func (r Request) Validate(d *model.Desired, now time.Time) (Override, error) {
	o := Override{Kind: r.Kind, Cluster: r.Cluster, Service: r.Service, Endpoint: r.Endpoint, Weight: r.Weight, Reason: strings.TrimSpace(r.Reason)}
	if r.ExpiresIn != "" {
		dur, err := time.ParseDuration(r.ExpiresIn)
		if err != nil || dur <= 0 || dur > MaxExpiry {
			return o, FieldError{"expires_in", fmt.Sprintf("%q is not a duration (allowed: e.g. 30m, 12h; at most a year)", r.ExpiresIn)}
		}
		t := now.Add(dur)
		o.Expires = &t
	}
	if r.Kind == KindShift {
		sh, err := r.shift(now)
		if err != nil {
			return o, err
		}
		o.Shift = sh
	} else if r.To != "" || r.Steps != nil || r.Every != "" || r.AbortIf != "" || r.MaxFailures != nil {
		return o, FieldError{"to", "to, steps, every, abort_if and max_failures only go with kind shift"}
	}
	err := o.validate(d)
	return o, err
}

// MaxForced bounds Override.Forced.
const MaxForced = 2048

// MaxExpiry is the longest an override may be set for.
const MaxExpiry = 366 * 24 * time.Hour

// MaxReason is the longest reason an override (and an operator's pause of
// a shift) may give, in bytes.
const MaxReason = 512

// validate checks what o asks for — the same rules for an API request and
// for an entry that arrives from the ring or a state file — and resolves
// its service and endpoint to their canonical form against d (nil d: the
// shape only).
func (o *Override) validate(d *model.Desired) error {
	if err := o.validateText(); err != nil {
		return err
	}
	if o.Kind == KindShift || o.Shift != nil {
		return o.validateShift(d)
	}
	if err := o.validateTarget(d); err != nil {
		return err
	}
	return o.validateWeight()
}

// validateText checks the kind and the bounded text fields: the required
// reason and the forced note.
func (o *Override) validateText() error {
	if !slices.Contains(Kinds, o.Kind) {
		return FieldError{"kind", fmt.Sprintf("%q is not a kind (allowed: %s)", o.Kind, strings.Join(Kinds, ", "))}
	}
	if o.Reason == "" {
		return FieldError{"reason", "is required: say why (it is shown with the override)"}
	}
	if len(o.Reason) > MaxReason {
		return FieldError{"reason", fmt.Sprintf("is longer than %d characters", MaxReason)}
	}
	if len(o.Forced) > MaxForced {
		return FieldError{"forced", fmt.Sprintf("is longer than %d characters", MaxForced)}
	}
	return nil
}

// validateTarget checks what the override applies to — a cluster, or a
// service and one of its endpoints — and, against d, that it exists.
func (o *Override) validateTarget(d *model.Desired) error {
	switch {
	case o.Cluster != "" && (o.Service != "" || o.Endpoint != ""):
		return FieldError{"cluster", "cannot be combined with service/endpoint (allowed: a cluster, or a service and one of its endpoints)"}
	case o.Cluster != "":
		if o.Kind == KindWeight {
			return FieldError{"kind", "weight applies to an endpoint (give service and endpoint), not a cluster"}
		}
		if len(o.Cluster) > 253 {
			return FieldError{"cluster", "is longer than 253 characters"}
		}
		if d != nil && !slices.ContainsFunc(d.Clusters, func(c model.Cluster) bool { return c.Name == o.Cluster }) {
			return FieldError{"cluster", fmt.Sprintf("%q is not a cluster (allowed: %s)", o.Cluster, strings.Join(clusterNames(d), ", "))}
		}
	case o.Service == "" || o.Endpoint == "":
		return FieldError{"service", "give cluster, or service and endpoint"}
	case len(o.Service) > 255 || len(o.Endpoint) > 255:
		return FieldError{"service", "service and endpoint are at most 255 characters"}
	case d != nil:
		return o.resolveEndpoint(d)
	}
	return nil
}

// resolveEndpoint finds the override's service and endpoint in d and
// rewrites them to their canonical form.
func (o *Override) resolveEndpoint(d *model.Desired) error {
	svc := model.CanonicalName(o.Service)
	i := slices.IndexFunc(d.Services, func(s model.Service) bool { return s.Name == svc })
	if i < 0 {
		return FieldError{"service", fmt.Sprintf("%q is not a service", o.Service)}
	}
	var targets []string
	for _, e := range d.Services[i].Endpoints {
		targets = append(targets, e.Address+e.CNAME)
	}
	ep := o.Endpoint
	if !slices.Contains(targets, ep) {
		ep = model.CanonicalName(ep)
	}
	if !slices.Contains(targets, ep) {
		return FieldError{"endpoint", fmt.Sprintf("%q is not an endpoint of %s (allowed: %s)", o.Endpoint, svc, strings.Join(targets, ", "))}
	}
	o.Service, o.Endpoint = svc, ep
	return nil
}

// validateWeight checks that a weight comes with kind weight, and only
// with it, within 0..model.MaxWeight.
func (o *Override) validateWeight() error {
	if o.Kind == KindWeight {
		switch {
		case o.Weight == nil:
			return FieldError{"weight", fmt.Sprintf("is required with kind weight (allowed: 0..%d)", model.MaxWeight)}
		case *o.Weight < 0 || *o.Weight > model.MaxWeight:
			return FieldError{"weight", fmt.Sprintf("%d is out of range (allowed: 0..%d)", *o.Weight, model.MaxWeight)}
		}
	} else if o.Weight != nil {
		return FieldError{"weight", "only goes with kind weight"}
	}
	return nil
}

// clusterNames lists d's cluster names, in config order.
func clusterNames(d *model.Desired) []string {
	var out []string
	for _, c := range d.Clusters {
		out = append(out, c.Name)
	}
	return out
}

// NewID returns a fresh override id.
func NewID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Stamp orders versions of one entry: later time wins, then node name.
type Stamp struct {
	At   int64  `json:"t"` // unix nanoseconds
	Node string `json:"n"`
}

func (a Stamp) after(b Stamp) bool {
	return a.At > b.At || a.At == b.At && a.Node > b.Node
}

// Entry is one override's latest version; Deleted entries are tombstones
// (kept so that a removal wins over an older add from another node).
type Entry struct {
	Override Override `json:"o"`
	Deleted  bool     `json:"d,omitempty"`
	Stamp    Stamp    `json:"s"`
	// Sig is the Ed25519 signature of Stamp.Node's ring identity over
	// SigInput (nil: written before entries were signed, or by a node
	// without a ring; such entries stay local).
	Sig []byte `json:"g,omitempty"`
}

// State is the set of overrides, mergeable across nodes.
type State struct {
	Entries map[string]Entry `json:"entries"`
}

// Clone copies s.
func (s State) Clone() State { return State{Entries: maps.Clone(s.Entries)} }

// Merge takes every entry of other that is newer than ours and reports
// whether s changed (no caps: see Store.Merge).
func (s *State) Merge(other State) bool {
	if s.Entries == nil {
		s.Entries = map[string]Entry{}
	}
	changed := false
	for id, e := range other.Entries {
		if cur, ok := s.Entries[id]; !ok || e.Newer(cur) {
			s.Entries[id] = e
			changed = true
		}
	}
	return changed
}

// Newer reports whether e replaces cur: a later stamp, or the same
// version signed again (its writer's key was renewed).
func (e Entry) Newer(cur Entry) bool {
	return e.Stamp.after(cur.Stamp) || e.Stamp == cur.Stamp && len(e.Sig) > 0 && !bytes.Equal(e.Sig, cur.Sig)
}

// Active returns the overrides in force at now, oldest first.
func (s State) Active(now time.Time) []Override {
	var out []Override
	for _, e := range s.Entries {
		if !e.Deleted && e.Override.Active(now) {
			out = append(out, e.Override)
		}
	}
	slices.SortFunc(out, func(a, b Override) int { return cmp.Or(a.At.Compare(b.At), cmp.Compare(a.ID, b.ID)) })
	return out
}

// Prune drops tombstones and expired entries older than keep.
func (s *State) Prune(now time.Time, keep time.Duration) {
	for id, e := range s.Entries {
		old := now.Sub(time.Unix(0, e.Stamp.At)) > keep
		if old && (e.Deleted || !e.Override.Active(now)) {
			delete(s.Entries, id)
		}
	}
}

// Marshal encodes s for the file and the ring.
func (s State) Marshal() []byte {
	b, _ := json.Marshal(s)
	return b
}

// Unmarshal decodes a state.
func Unmarshal(b []byte) (State, error) {
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return State{}, err
	}
	if s.Entries == nil {
		s.Entries = map[string]Entry{}
	}
	return s, nil
}
