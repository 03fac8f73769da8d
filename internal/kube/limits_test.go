package kube

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/kube/claims"
	"github.com/meridian-gslb/meridian/internal/model"
)

// names lists n host names n0000.gslb.example.com … in sorted order.
func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%05d.gslb.example.com", prefix, i)
	}
	return out
}

func served(r Result) map[string]bool {
	out := map[string]bool{}
	for _, s := range r.Services {
		out[s.Name] = true
	}
	return out
}

func TestAnAnnotationWithTenThousandNamesIsCappedAndTheRestKeepsServing(t *testing.T) {
	all := names("n", 10000)
	big := in("team-b", obj("east", "big", 1, map[string]string{AnnoHostname: strings.Join(all, ",")}, "203.0.113.9"))
	// team-c claims a name past team-b's cap: the capped names claim nothing.
	other := in("team-c", obj("west", "web", 5, map[string]string{AnnoHostname: all[5000]}, "198.51.100.7"))
	owner := in("team-a", obj("east", "web", 2, map[string]string{AnnoHostname: "app.gslb.example.com"}, "198.51.100.1"))
	require.Len(t, big.Settings.Hostnames, 10000, "the annotation parses")

	r := Build([]Object{big, other, owner}, base())

	got := served(r)
	assert.Equal(t, model.DefaultMaxHostnamesPerObject+2, len(got), "the first 100 of the big object, team-c's name and team-a's name")
	for _, n := range all[:model.DefaultMaxHostnamesPerObject] {
		assert.True(t, got[model.CanonicalName(n)], "%s is within the cap", n)
	}
	assert.False(t, got[model.CanonicalName(all[model.DefaultMaxHostnamesPerObject])], "the 101st name is not served")
	assert.True(t, got["app.gslb.example.com."], "another namespace's names are untouched")
	assert.True(t, got[model.CanonicalName(all[5000])], "a name past the cap is not claimed by the capped object")
	assert.Equal(t, []string{"198.51.100.7"}, addressesOf(r, model.CanonicalName(all[5000])))

	require.Len(t, r.Problems[big.Ref], 1)
	msg := r.Problems[big.Ref][0]
	assert.Contains(t, msg, "lists 10000 names; an object serves at most 100 (kubernetes.max_hostnames_per_object)")
	assert.Contains(t, msg, "the other 9900 are not (n00100.gslb.example.com., n00101.gslb.example.com., n00102.gslb.example.com. and 9897 more)")
	assert.Equal(t, ReasonHostnameLimit, eventReason(msg), "the problem is recorded as a HostnameLimit Event")
	assert.Less(t, len(msg), maxEventMessage, "the whole reason fits in one Event")
	assert.Equal(t, map[string]int{LimitObject: 9900}, r.OverLimit)
	assert.Empty(t, r.Problems[other.Ref])

	st := Statuses([]Object{big}, r, func(string) (ServiceView, bool) { return ServiceView{}, false })[big.Ref]
	assert.Len(t, st.Hostnames, model.DefaultMaxHostnamesPerObject, "meridian.io/status lists the names it may serve, not 10 000")
}

func TestANamespaceServesAtMostItsCapTheNamesOfItsOldestObjectsFirst(t *testing.T) {
	d := base()
	d.Kubernetes.MaxHostnamesPerNamespace = 3
	oldest := in("team-b", obj("east", "old", 1, map[string]string{AnnoHostname: "a.gslb.example.com,b.gslb.example.com"}, "203.0.113.1"))
	newer := in("team-b", obj("west", "new", 2, map[string]string{AnnoHostname: "a.gslb.example.com,c.gslb.example.com,d.gslb.example.com,e.gslb.example.com"}, "203.0.113.2"))
	otherNS := in("team-c", obj("west", "x", 3, map[string]string{AnnoHostname: "f.gslb.example.com,g.gslb.example.com,h.gslb.example.com,i.gslb.example.com"}, "203.0.113.3"))

	r := Build([]Object{newer, otherNS, oldest}, d)

	got := served(r)
	for _, n := range []string{"a", "b", "c", "f", "g", "h"} {
		assert.True(t, got[n+".gslb.example.com."], "%s is served", n)
	}
	for _, n := range []string{"d", "e", "i"} {
		assert.False(t, got[n+".gslb.example.com."], "%s is over its namespace's cap", n)
	}
	assert.Equal(t, []string{"east/203.0.113.1", "west/203.0.113.2"}, endpointsOf(r, "a.gslb.example.com."), "a name the namespace serves already counts once")
	require.Len(t, r.Problems[newer.Ref], 1)
	assert.Contains(t, r.Problems[newer.Ref][0], "namespace team-b serves at most 3 names in all (kubernetes.max_hostnames_per_namespace), those of its oldest objects first: 2 of this object's names are not served (d.gslb.example.com., e.gslb.example.com.)")
	assert.Empty(t, r.Problems[oldest.Ref])
	assert.Equal(t, map[string]int{LimitNamespace: 3}, r.OverLimit)
	assert.Equal(t, []string{"a.gslb.example.com.", "c.gslb.example.com."}, r.Limited[newer.Ref])
}

func TestAnOldServiceAnnotatedTodayDoesNotTakeTheFirstClaimantsName(t *testing.T) {
	d := base()
	owner := in("team-a", obj("east", "web", 100, map[string]string{AnnoHostname: "app.gslb.example.com"}, "198.51.100.1"))
	// Created long before team-a's Service, annotated only now.
	old := in("team-b", obj("west", "legacy", -100000, map[string]string{AnnoHostname: "app.gslb.example.com", AnnoWeight: "1000"}, "203.0.113.66"))
	now := t0.Add(200 * time.Minute)

	r1, v, err := BuildSafe([]Object{owner}, d, NewFileNames(d.Services), nil, nil, now)
	require.NoError(t, err)
	require.Equal(t, claims.Ledger{"app.gslb.example.com.": {Namespace: "team-a", Since: now}}, r1.First)

	r2, _, err := BuildSafe([]Object{owner, old}, d, NewFileNames(d.Services), v, r1.First, now.Add(time.Minute))
	require.NoError(t, err)
	assert.Equal(t, []string{"east/198.51.100.1"}, endpointsOf(r2, "app.gslb.example.com."), "team-a keeps serving the name alone")
	assert.Equal(t, []string{"team-a"}, r2.Owners["app.gslb.example.com."])
	require.Len(t, r2.Refused[old.Ref], 1)
	assert.Equal(t, claims.KindTaken, r2.Refused[old.Ref][0].Kind)
	assert.Equal(t, r1.First, r2.First, "the ledger keeps the first claimant")

	// Without the ledger (what a node with no record decides), the oldest
	// object would win: the record is what protects team-a.
	r3 := Build([]Object{owner, old}, d)
	assert.Equal(t, []string{"team-b"}, r3.Owners["app.gslb.example.com."])
}

func addressesOf(r Result, name string) []string {
	var out []string
	for _, e := range endpointsOf(r, name) {
		_, a, _ := strings.Cut(e, "/")
		out = append(out, a)
	}
	return out
}
