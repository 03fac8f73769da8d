package claims

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

const hour = time.Hour

// held is a ledger record of ns, owner since min minutes after t0.
func held(ns string, min int) Record {
	return Record{Namespace: ns, Since: t0.Add(time.Duration(min) * time.Minute)}
}

// released is held, released at rel minutes after t0.
func released(ns string, min, rel int) Record {
	r := held(ns, min)
	at := t0.Add(time.Duration(rel) * time.Minute)
	r.Released = &at
	return r
}

func TestFirstClaimantsAreSticky(t *testing.T) {
	const b = "b.gslb.example.com."
	tests := []struct {
		name    string
		policy  Policy
		ledger  Ledger
		claims  []Claim
		now     int      // minutes after t0
		owners  []string // of app
		next    Ledger   // want
		refusal string   // a substring of team-b's refusal ("" = not checked)
	}{
		{
			name:   "an old object annotated today does not take a name its first claimant holds",
			policy: policy(""),
			ledger: Ledger{app: held("team-a", 100)},
			claims: []Claim{at(app, "team-a", 100), at(app, "team-b", -100000)},
			now:    200, owners: []string{"team-a"},
			next:    Ledger{app: held("team-a", 100)},
			refusal: "belongs to namespace team-a",
		},
		{
			name:   "a name nobody held goes to the oldest claimant's namespace, recorded now",
			policy: policy(""),
			claims: []Claim{at(app, "team-a", 100), at(app, "team-b", 50)},
			now:    200, owners: []string{"team-b"},
			next: Ledger{app: held("team-b", 200)},
		},
		{
			name:   "a first claimant whose objects are gone keeps the name, served by nobody, until the release time passes",
			policy: withRelease(policy(""), hour),
			ledger: Ledger{app: held("team-a", 0)},
			claims: []Claim{at(app, "team-b", -100000)},
			now:    30, owners: []string{"team-a"},
			next:    Ledger{app: released("team-a", 0, 30)},
			refusal: "it stays theirs until 2026-11-01T01:30:00Z (kubernetes.claim_release_after 1h0m0s)",
		},
		{
			name:   "a released name stays held within the release time",
			policy: withRelease(policy(""), hour),
			ledger: Ledger{app: released("team-a", 0, 30)},
			claims: []Claim{at(app, "team-b", -100000)},
			now:    89, owners: []string{"team-a"},
			next: Ledger{app: released("team-a", 0, 30)},
		},
		{
			name:   "once the release time has passed the name goes to a claimant left",
			policy: withRelease(policy(""), hour),
			ledger: Ledger{app: released("team-a", 0, 30)},
			claims: []Claim{at(app, "team-b", -100000)},
			now:    90, owners: []string{"team-b"},
			next: Ledger{app: held("team-b", 90)},
		},
		{
			name:   "an owner that claims its name again within the release time holds it again",
			policy: withRelease(policy(""), hour),
			ledger: Ledger{app: released("team-a", 0, 30)},
			claims: []Claim{at(app, "team-a", 60), at(app, "team-b", -100000)},
			now:    80, owners: []string{"team-a"},
			next: Ledger{app: held("team-a", 0)},
		},
		{
			name:   "a name nobody claims is released and then forgotten",
			policy: withRelease(policy(""), hour),
			ledger: Ledger{b: held("team-c", 0), "c.gslb.example.com.": released("team-d", 0, 10)},
			claims: []Claim{at(app, "team-a", 1)},
			now:    70, owners: []string{"team-a"},
			next: Ledger{app: held("team-a", 70), b: released("team-c", 0, 70)},
		},
		{
			name:   "a claims entry decides over the ledger, whose record is released",
			policy: withRelease(policy("", claim([]string{"team-b"}, []string{app})), hour),
			ledger: Ledger{app: held("team-a", 0)},
			claims: []Claim{at(app, "team-a", 0), at(app, "team-b", 5)},
			now:    10, owners: []string{"team-b"},
			next: Ledger{app: released("team-a", 0, 10)},
		},
		{
			name:   "with unclaimed_names refuse the ledger gives nothing",
			policy: withRelease(policy(model.UnclaimedRefuse), hour),
			ledger: Ledger{app: held("team-a", 0)},
			claims: []Claim{at(app, "team-a", 0)},
			now:    10, owners: nil,
			next: Ledger{app: released("team-a", 0, 10)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := cloneLedger(tt.ledger)
			ds, next := Decide(tt.policy, tt.claims, tt.ledger, t0.Add(time.Duration(tt.now)*time.Minute))
			d, ok := ds[app]
			require.True(t, ok)
			assert.Equal(t, tt.owners, d.Owners, "owners")
			assert.Equal(t, tt.next, next, "next ledger")
			assert.Equal(t, before, tt.ledger, "the ledger given is not modified")
			if tt.refusal != "" {
				assert.Contains(t, d.Refusal("team-b"), tt.refusal)
			}
		})
	}
}

func TestTheFirstClaimantHoldsTheNameAcrossSuccessiveDecisions(t *testing.T) {
	p := withRelease(policy(""), hour)
	var l Ledger
	step := func(min int, cs ...Claim) Decision {
		ds, next := Decide(p, cs, l, t0.Add(time.Duration(min)*time.Minute))
		l = next
		return ds[app]
	}
	assert.Equal(t, []string{"team-a"}, step(0, at(app, "team-a", 0)).Owners, "team-a claims first")
	assert.Equal(t, []string{"team-a"}, step(5, at(app, "team-a", 0), at(app, "team-b", -5000)).Owners, "an older object annotated later is refused")
	assert.Equal(t, []string{"team-a"}, step(10, at(app, "team-b", -5000)).Owners, "team-a's object deleted: held")
	assert.Equal(t, []string{"team-a"}, step(69, at(app, "team-b", -5000)).Owners, "still within the release time")
	assert.Equal(t, []string{"team-b"}, step(70, at(app, "team-b", -5000)).Owners, "released: the claimant left takes it")
	assert.Equal(t, []string{"team-b"}, step(71, at(app, "team-a", 0), at(app, "team-b", -5000)).Owners, "and holds it")
}

func TestNextFreeIsTheEarliestReleaseEnd(t *testing.T) {
	l := Ledger{app: released("team-a", 0, 30), "b.gslb.example.com.": released("team-b", 0, 10), "c.gslb.example.com.": held("team-c", 0)}
	at, ok := l.NextFree(hour)
	require.True(t, ok)
	assert.Equal(t, t0.Add(70*time.Minute), at)
	_, ok = Ledger{app: held("team-a", 0)}.NextFree(hour)
	assert.False(t, ok, "nothing released, nothing to schedule")
}

func withRelease(p Policy, d time.Duration) Policy {
	p.ReleaseAfter = d
	return p
}

func cloneLedger(l Ledger) Ledger {
	if l == nil {
		return nil
	}
	out := Ledger{}
	for k, v := range l {
		out[k] = v
	}
	return out
}
