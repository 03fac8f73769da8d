package claims

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
)

var t0 = time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)

const (
	apex = "gslb.example.com."
	app  = "app.gslb.example.com."
	ns1  = "ns1.gslb.example.com."
)

// at is a claim on name by namespace ns whose object was created min minutes after t0.
func at(name, ns string, min int) Claim {
	return Claim{Name: name, Namespace: ns, Created: t0.Add(time.Duration(min) * time.Minute)}
}

const web = "web.shop.gslb.example.com."

// export is a ServiceExport's claim on name by namespace ns.
func export(name, ns string, min int) Claim {
	c := at(name, ns, min)
	c.Export = true
	return c
}

func policy(unclaimed string, cs ...model.Claim) Policy {
	d := &model.Desired{
		Zones:      []model.Zone{{Apex: "gslb.example.com", Nameservers: []model.Nameserver{{Name: "ns1.gslb.example.com"}}}},
		Kubernetes: model.Kubernetes{Claims: cs, UnclaimedNames: unclaimed},
	}
	return PolicyFrom(d)
}

func claim(nss []string, names []string, suffixes ...string) model.Claim {
	return model.Claim{Namespaces: nss, Names: names, Suffixes: suffixes}
}

func TestDecide(t *testing.T) {
	tests := []struct {
		name    string
		policy  Policy
		claims  []Claim
		of      string   // the name whose decision is checked
		owners  []string // want
		rule    string
		refused string
	}{
		{
			name:   "the namespace whose object claimed a name first owns it",
			policy: policy(""),
			claims: []Claim{at(app, "team-b", 5), at(app, "team-a", 1), at(app, "team-c", 3)},
			of:     app, owners: []string{"team-a"}, rule: RuleFirst, refused: KindTaken,
		},
		{
			name:   "a tie in creation time goes to the namespace name that sorts first",
			policy: policy(""),
			claims: []Claim{at(app, "team-b", 1), at(app, "team-a", 1)},
			of:     app, owners: []string{"team-a"}, rule: RuleFirst, refused: KindTaken,
		},
		{
			name:   "objects of one namespace in several clusters are one owner",
			policy: policy(model.UnclaimedOldest),
			claims: []Claim{at(app, "team-a", 1), at(app, "team-a", 9), at(app, "team-b", 4)},
			of:     app, owners: []string{"team-a"}, rule: RuleFirst, refused: KindTaken,
		},
		{
			name:   "without a recorded owner, of two new claimants the oldest object's namespace takes the name",
			policy: policy(""),
			claims: []Claim{at(app, "team-a", 100), at(app, "team-b", -10000)},
			of:     app, owners: []string{"team-b"}, rule: RuleFirst, refused: KindTaken,
		},
		{
			name:   "the zone apex is refused without a claim that lists it",
			policy: policy(""),
			claims: []Claim{at(apex, "team-b", 1)},
			of:     apex, owners: nil, rule: KindReserved, refused: KindReserved,
		},
		{
			name:   "a nameserver name is refused without a claim that lists it",
			policy: policy(""),
			claims: []Claim{at(ns1, "team-a", 1)},
			of:     ns1, owners: nil, rule: KindReserved, refused: KindReserved,
		},
		{
			name:   "a suffix claim on the zone does not cover its apex or nameservers",
			policy: policy("", claim([]string{"platform"}, nil, "example.com.")),
			claims: []Claim{at(apex, "platform", 1)},
			of:     apex, owners: nil, rule: KindReserved, refused: KindReserved,
		},
		{
			name:   "a claim that lists the apex in names allows it",
			policy: policy("", claim([]string{"platform"}, []string{apex})),
			claims: []Claim{at(apex, "platform", 5), at(apex, "team-b", 1)},
			of:     apex, owners: []string{"platform"}, rule: RuleClaim, refused: KindNotAllowed,
		},
		{
			name:   "a claim gives a name to its namespace even when another claimed it first",
			policy: policy("", claim([]string{"team-b"}, []string{app})),
			claims: []Claim{at(app, "team-a", 1), at(app, "team-b", 50)},
			of:     app, owners: []string{"team-b"}, rule: RuleClaim, refused: KindNotAllowed,
		},
		{
			name:   "a claim with two namespaces lets both serve the name",
			policy: policy("", claim([]string{"team-b", "team-a"}, []string{app})),
			claims: []Claim{at(app, "team-a", 1), at(app, "team-b", 2), at(app, "team-c", 0)},
			of:     app, owners: []string{"team-a", "team-b"}, rule: RuleClaim, refused: KindNotAllowed,
		},
		{
			name:   "two claims that list the same name share it",
			policy: policy("", claim([]string{"team-a"}, []string{app}), claim([]string{"team-b"}, []string{app})),
			claims: []Claim{at(app, "team-b", 1)},
			of:     app, owners: []string{"team-a", "team-b"}, rule: RuleClaim, refused: KindNotAllowed,
		},
		{
			name: "an exact name beats a suffix",
			policy: policy("", claim([]string{"platform"}, nil, apex),
				claim([]string{"team-a"}, []string{app})),
			claims: []Claim{at(app, "platform", 1), at(app, "team-a", 2)},
			of:     app, owners: []string{"team-a"}, rule: RuleClaim, refused: KindNotAllowed,
		},
		{
			name: "the longest covering suffix wins",
			policy: policy("", claim([]string{"platform"}, nil, apex),
				claim([]string{"team-a"}, nil, "team-a.gslb.example.com.")),
			claims: []Claim{at("web.team-a.gslb.example.com.", "platform", 1)},
			of:     "web.team-a.gslb.example.com.", owners: []string{"team-a"}, rule: RuleClaim, refused: KindNotAllowed,
		},
		{
			name:   "a suffix covers the names strictly below it, not itself",
			policy: policy(model.UnclaimedRefuse, claim([]string{"team-a"}, nil, "team-a.gslb.example.com.")),
			claims: []Claim{at("team-a.gslb.example.com.", "team-a", 1)},
			of:     "team-a.gslb.example.com.", owners: nil, rule: KindUnclaimed, refused: KindUnclaimed,
		},
		{
			name:   "a suffix does not cover a name that only ends with the same letters",
			policy: policy("", claim([]string{"team-a"}, nil, "a.gslb.example.com.")),
			claims: []Claim{at("data.gslb.example.com.", "team-b", 1)},
			of:     "data.gslb.example.com.", owners: []string{"team-b"}, rule: RuleFirst, refused: KindTaken,
		},
		{
			name:   "a name no claim covers goes to the oldest claimer by default",
			policy: policy("", claim([]string{"team-a"}, []string{app})),
			claims: []Claim{at("b.gslb.example.com.", "team-c", 3), at("b.gslb.example.com.", "team-b", 2)},
			of:     "b.gslb.example.com.", owners: []string{"team-b"}, rule: RuleFirst, refused: KindTaken,
		},
		{
			name:   "with unclaimed_names refuse a name no claim covers is served by nobody",
			policy: policy(model.UnclaimedRefuse, claim([]string{"team-a"}, []string{app})),
			claims: []Claim{at("b.gslb.example.com.", "team-b", 2)},
			of:     "b.gslb.example.com.", owners: nil, rule: KindUnclaimed, refused: KindUnclaimed,
		},
		{
			name:   "a ServiceExport's name belongs to its namespace even when another namespace claimed it first",
			policy: policy(""),
			claims: []Claim{at(web, "squat", 1), export(web, "shop", 50), at(web, "shop", 60)},
			of:     web, owners: []string{"shop"}, rule: RuleMCS, refused: KindNotAllowed,
		},
		{
			name:   "a ServiceExport's name goes to the first claimant again once no export claims it",
			policy: policy(""),
			claims: []Claim{at(web, "squat", 1), at(web, "shop", 60)},
			of:     web, owners: []string{"squat"}, rule: RuleFirst, refused: KindTaken,
		},
		{
			name:   "a claim in the config file decides a ServiceExport's name too",
			policy: policy("", claim([]string{"platform"}, []string{web})),
			claims: []Claim{export(web, "shop", 1), at(web, "platform", 2)},
			of:     web, owners: []string{"platform"}, rule: RuleClaim, refused: KindNotAllowed,
		},
		{
			name:   "with unclaimed_names refuse a ServiceExport's name needs a claim like any other",
			policy: policy(model.UnclaimedRefuse),
			claims: []Claim{export(web, "shop", 1)},
			of:     web, owners: nil, rule: KindUnclaimed, refused: KindUnclaimed,
		},
		{
			name:   "a claim whose namespaces have no object still decides: the name is served by nobody",
			policy: policy("", claim([]string{"team-a"}, []string{app})),
			claims: []Claim{at(app, "team-b", 1)},
			of:     app, owners: []string{"team-a"}, rule: RuleClaim, refused: KindNotAllowed,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, _ := Decide(tt.policy, tt.claims, nil, t0)
			d, ok := got[tt.of]
			require.True(t, ok, "a decision for every claimed name")
			assert.Equal(t, tt.owners, d.Owners, "owners")
			assert.Equal(t, tt.rule, d.Rule, "rule")
			assert.Equal(t, tt.refused, d.Refused, "refusal kind")
			for _, c := range tt.claims {
				if c.Name == tt.of {
					assert.Equal(t, contains(tt.owners, c.Namespace), d.Allows(c.Namespace), "Allows(%s)", c.Namespace)
				}
			}
		})
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if x == y {
			return true
		}
	}
	return false
}

func TestTheOrderOfTheClaimsDoesNotChangeAnyDecision(t *testing.T) {
	p := policy("", claim([]string{"team-a"}, []string{app}))
	cs := []Claim{at(app, "team-b", 1), at(app, "team-a", 2), at("b.gslb.example.com.", "team-c", 3),
		at("b.gslb.example.com.", "team-d", 3), at(apex, "team-e", 0), at("c.gslb.example.com.", "team-f", 7)}
	ledger := Ledger{"c.gslb.example.com.": {Namespace: "team-g", Since: t0}}
	want, wantLedger := Decide(p, cs, ledger, t0)
	r := rand.New(rand.NewPCG(1, 2))
	for range 50 {
		r.Shuffle(len(cs), func(i, j int) { cs[i], cs[j] = cs[j], cs[i] })
		got, gotLedger := Decide(p, cs, ledger, t0)
		assert.Equal(t, want, got)
		assert.Equal(t, wantLedger, gotLedger)
	}
}

func TestEveryRefusalNamesTheNameAndTheOwnersButNoObject(t *testing.T) {
	tests := []struct {
		name   string
		d      Decision
		ns     string
		substr []string
	}{
		{"a taken name names the owner namespace", Decision{Name: app, Owners: []string{"team-a"}, Refused: KindTaken}, "team-b",
			[]string{ConflictPrefix, app + " belongs to namespace team-a", "namespace team-b are not served"}},
		{"a name a claim gives away names the claim's namespaces", Decision{Name: app, Owners: []string{"team-a", "team-c"}, Refused: KindNotAllowed}, "team-b",
			[]string{ConflictPrefix, "kubernetes.claims gives " + app + " to namespace team-a, team-c", "namespace team-b"}},
		{"a reserved name says what it is and how to allow it", decideOne(policy(""), apex, []Claim{at(apex, "team-b", 1)}, nil, t0), "team-b",
			[]string{ConflictPrefix, apex + " is the apex of zone " + apex, "lists it in names"}},
		{"a ServiceExport's name names the exporting namespace", Decision{Name: web, Owners: []string{"shop"}, Rule: RuleMCS, Refused: KindNotAllowed}, "squat",
			[]string{ConflictPrefix, web + " belongs to namespace shop, whose ServiceExport names it", "namespace squat are not served"}},
		{"an unclaimed name under refuse says so", Decision{Name: app, Refused: KindUnclaimed}, "team-b",
			[]string{ConflictPrefix, "unclaimed_names is refuse"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msg := tt.d.Refusal(tt.ns)
			for _, s := range tt.substr {
				assert.Contains(t, msg, s)
			}
		})
	}
}

func TestTheApexIsReservedEvenWhenItIsAlsoANameserverName(t *testing.T) {
	p := PolicyFrom(&model.Desired{Zones: []model.Zone{
		{Apex: "gslb.example.com", Nameservers: []model.Nameserver{{Name: "gslb.example.com"}, {Name: "NS2.gslb.example.com"}}},
	}})
	assert.Equal(t, map[string]string{apex: "the apex of zone " + apex, "ns2.gslb.example.com.": "a nameserver name of zone " + apex}, p.Reserved)
}

func TestTheRingsNamesAreReservedInItsZones(t *testing.T) {
	p := PolicyFrom(&model.Desired{Zones: []model.Zone{
		{Apex: "gslb.example.com", Ring: &model.ZoneRing{Names: true, Nameservers: true}},
		{Apex: "other.example.com"},
	}})
	claim := func(name string) Claim { return Claim{Name: name, Namespace: "tenant", Created: time.Unix(1, 0)} }
	for _, tc := range []struct {
		name     string
		reserved bool
	}{
		{"ring.gslb.example.com.", true},
		{"east.ring.gslb.example.com.", true},
		{"x.east.ring.gslb.example.com.", true},
		{"ns-east.gslb.example.com.", true},
		{"ns-east.shop.gslb.example.com.", false},
		{"app.gslb.example.com.", false},
		{"ring.other.example.com.", false},
		{"ns-east.other.example.com.", false},
	} {
		ds, _ := Decide(p, []Claim{claim(tc.name)}, nil, t0)
		d := ds[tc.name]
		if tc.reserved {
			assert.Equal(t, KindReserved, d.Refused, "%s is the ring's: no tenant may serve it", tc.name)
			assert.Empty(t, d.Owners, tc.name)
		} else {
			assert.Equal(t, []string{"tenant"}, d.Owners, tc.name)
		}
	}
}

func TestRefusesDecidesByTheRulesThatNeedNoObjects(t *testing.T) {
	given := policy("", claim([]string{"team-a"}, nil, "team-a.gslb.example.com"), claim([]string{"team-a"}, []string{apex}))
	refuse := policy(model.UnclaimedRefuse)
	for _, tc := range []struct {
		name    string
		p       Policy
		ns, dns string
		substr  string // "" = not refused
	}{
		{"a name a claim gives to the namespace is not refused", given, "team-a", "x.team-a.gslb.example.com.", ""},
		{"a name a claim gives to another namespace is refused", given, "team-b", "x.team-a.gslb.example.com.", "gives x.team-a.gslb.example.com. to namespace team-a; objects in namespace team-b"},
		{"no namespace is refused a name a claim covers", given, "", "x.team-a.gslb.example.com.", "objects of no namespace are not served"},
		{"the apex is refused when no claim lists it", policy(""), "team-a", apex, "is the apex of zone"},
		{"the apex is not refused to the namespace a claim lists it for", given, "team-a", apex, ""},
		{"a nameserver name is refused", given, "team-a", ns1, "a nameserver name of zone"},
		{"no namespace is refused the apex", policy(""), "", apex, "is the apex of zone"},
		{"an unclaimed name under oldest is left to rule 4", policy(""), "team-b", app, ""},
		{"an unclaimed name under oldest is left to rule 4 for no namespace too", policy(""), "", app, ""},
		{"an unclaimed name under refuse is refused", refuse, "team-b", app, "unclaimed_names is refuse"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg, refused := tc.p.Refuses(tc.ns, tc.dns)
			if tc.substr == "" {
				assert.False(t, refused, msg)
				return
			}
			require.True(t, refused)
			assert.Contains(t, msg, ConflictPrefix)
			assert.Contains(t, msg, tc.substr)
		})
	}
}

func TestIsReservedNamesTheRingsNames(t *testing.T) {
	p := PolicyFrom(&model.Desired{Zones: []model.Zone{{Apex: "gslb.example.com", Ring: &model.ZoneRing{Names: true}}}})
	what, ok := p.IsReserved("ns-east.gslb.example.com.")
	require.True(t, ok)
	assert.Contains(t, what, "the ring's nameservers")
	_, ok = p.IsReserved(app)
	assert.False(t, ok)
}
