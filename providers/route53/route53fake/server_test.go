package route53fake

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// client is the real SDK client pointed at s, without SDK retries.
func client(s *Server) *r53.Client {
	return r53.New(r53.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(s.URL()), Retryer: aws.NopRetryer{},
		Credentials: credentials.NewStaticCredentialsProvider("AKIDFAKE", "secret", ""),
	})
}

func set(name, typ string, ttl int64, values ...string) *types.ResourceRecordSet {
	s := &types.ResourceRecordSet{Name: aws.String(name), Type: types.RRType(typ), TTL: aws.Int64(ttl)}
	for _, v := range values {
		s.ResourceRecords = append(s.ResourceRecords, types.ResourceRecord{Value: aws.String(v)})
	}
	return s
}

func weighted(s *types.ResourceRecordSet, id string, w int64) *types.ResourceRecordSet {
	s.SetIdentifier, s.Weight = aws.String(id), aws.Int64(w)
	return s
}

func change(action types.ChangeAction, s *types.ResourceRecordSet) types.Change {
	return types.Change{Action: action, ResourceRecordSet: s}
}

const (
	create = types.ChangeActionCreate
	upsert = types.ChangeActionUpsert
	del    = types.ChangeActionDelete
)

// dsDigest is a SHA-256 digest (64 hex digits) for DS test records.
const dsDigest = "C988EC423E3880EB8DD8A46E3F01C2E4B18D6A6D4DC3C2D2A0D5C0D8AB1A3F6F"

func TestChangeBatchRules(t *testing.T) {
	seed := []RecordSet{
		{Name: "a.example.com.", Type: "A", TTL: 60, Values: []string{"192.0.2.1"}},
		{Name: "w.example.com.", Type: "A", TTL: 60, Values: []string{"192.0.2.2"}, SetID: "one", Weight: aws.Int64(10)},
		{Name: "c.example.com.", Type: "CNAME", TTL: 60, Values: []string{"target.example.net."}},
		{Name: "deleg.example.com.", Type: "NS", TTL: 3600, Values: []string{"ns1.deleg.example.com."}},
		{Name: "deleg.example.com.", Type: "DS", TTL: 3600, Values: []string{"2371 13 2 " + dsDigest}},
	}
	cases := []struct {
		name    string
		changes []types.Change
		code    string   // "" = accepted
		msgs    []string // substrings of the message
	}{
		{
			name:    "a CREATE of a set that exists is refused",
			changes: []types.Change{change(create, set("a.example.com.", "A", 60, "192.0.2.9"))},
			code:    "InvalidChangeBatch", msgs: []string{"Tried to create resource record set [name='a.example.com.', type='A'] but it already exists"},
		},
		{
			name:    "a DELETE must match the live set exactly, TTL included",
			changes: []types.Change{change(del, set("a.example.com.", "A", 300, "192.0.2.1"))},
			code:    "InvalidChangeBatch", msgs: []string{"but the values provided do not match the current values"},
		},
		{
			name:    "a DELETE of a set that does not exist is refused",
			changes: []types.Change{change(del, weighted(set("w.example.com.", "A", 60, "192.0.2.2"), "two", 10))},
			code:    "InvalidChangeBatch", msgs: []string{"[name='w.example.com.', type='A', set-identifier='two'] but it was not found"},
		},
		{
			name:    "a simple set cannot join weighted ones",
			changes: []types.Change{change(create, set("w.example.com.", "A", 60, "192.0.2.3"))},
			code:    "InvalidChangeBatch", msgs: []string{"RRSet with DNS name w.example.com., type A cannot be created as weighted sets exist with the same name and type"},
		},
		{
			name:    "a weighted set cannot join a simple one",
			changes: []types.Change{change(create, weighted(set("a.example.com.", "A", 60, "192.0.2.3"), "x", 1))},
			code:    "InvalidChangeBatch", msgs: []string{"SetIdentifier x cannot be created as a non-weighted set exists"},
		},
		{
			name:    "weighted sets of one name and type share their TTL",
			changes: []types.Change{change(create, weighted(set("w.example.com.", "A", 30, "192.0.2.3"), "two", 1))},
			code:    "InvalidChangeBatch", msgs: []string{"has TTL 30, which differs from TTL 60"},
		},
		{
			name: "changing every weighted member's TTL in one batch is fine",
			changes: []types.Change{
				change(upsert, weighted(set("w.example.com.", "A", 30, "192.0.2.2"), "one", 10)),
				change(create, weighted(set("w.example.com.", "A", 30, "192.0.2.3"), "two", 1)),
			},
		},
		{
			name:    "a CNAME cannot share its name",
			changes: []types.Change{change(create, set("a.example.com.", "CNAME", 60, "x.example.net."))},
			code:    "InvalidChangeBatch", msgs: []string{"RRSet of type CNAME with DNS name a.example.com. is not permitted as it conflicts with other records"},
		},
		{
			name:    "nothing can join a CNAME",
			changes: []types.Change{change(create, set("c.example.com.", "TXT", 60, `"x"`))},
			code:    "InvalidChangeBatch", msgs: []string{"RRSet of type TXT with DNS name c.example.com. is not permitted because a conflicting RRSet of type CNAME"},
		},
		{
			name: "a DELETE and a CREATE swap a simple set for weighted ones in one batch",
			changes: []types.Change{
				change(del, set("a.example.com.", "A", 60, "192.0.2.1")),
				change(create, weighted(set("a.example.com.", "A", 60, "192.0.2.1"), "x", 1)),
				change(create, weighted(set("a.example.com.", "A", 60, "192.0.2.5"), "y", 1)),
			},
		},
		{
			name:    "a routing policy needs a SetIdentifier",
			changes: []types.Change{change(create, &types.ResourceRecordSet{Name: aws.String("n.example.com."), Type: "A", TTL: aws.Int64(1), Weight: aws.Int64(1), ResourceRecords: []types.ResourceRecord{{Value: aws.String("192.0.2.1")}}})},
			code:    "InvalidInput", msgs: []string{"Missing field 'SetIdentifier'"},
		},
		{
			name:    "weights stop at 255",
			changes: []types.Change{change(create, weighted(set("n.example.com.", "A", 60, "192.0.2.1"), "x", 256))},
			code:    "InvalidInput", msgs: []string{"Value '256' at 'changeBatch.changes.1.member.resourceRecordSet.weight' failed to satisfy constraint: Member must have value less than or equal to 255"},
		},
		{
			name:    "TXT values must be quoted",
			changes: []types.Change{change(create, set("t.example.com.", "TXT", 60, "unquoted"))},
			code:    "InvalidChangeBatch", msgs: []string{"InvalidCharacterString (Value should be enclosed in quotation marks)"},
		},
		{
			name:    "addresses must be addresses of the type",
			changes: []types.Change{change(create, set("n.example.com.", "A", 60, "2001:db8::1"))},
			code:    "InvalidChangeBatch", msgs: []string{"ARRDATAIllegalIPv4Address"},
		},
		{
			name:    "a set outside the zone is refused",
			changes: []types.Change{change(create, set("a.example.org.", "A", 60, "192.0.2.1"))},
			code:    "InvalidChangeBatch", msgs: []string{"RRSet with DNS name a.example.org. is not permitted in zone example.com."},
		},
		{
			name: "a DS is accepted beside the NS of its delegation, created in one batch",
			changes: []types.Change{
				change(create, set("sub.example.com.", "NS", 3600, "ns1.sub.example.com.")),
				change(create, set("sub.example.com.", "DS", 3600, "2371 13 2 "+dsDigest)),
			},
		},
		{
			name:    "a DS without an NS of the same name is refused",
			changes: []types.Change{change(create, set("sub.example.com.", "DS", 3600, "2371 13 2 "+dsDigest))},
			code:    "InvalidChangeBatch", msgs: []string{"RRSet of type DS with DNS name sub.example.com. is not permitted because there is no NS RRSet with the same name in zone example.com."},
		},
		{
			name:    "the NS under a DS cannot be deleted alone",
			changes: []types.Change{change(del, set("deleg.example.com.", "NS", 3600, "ns1.deleg.example.com."))},
			code:    "InvalidChangeBatch", msgs: []string{"RRSet of type DS with DNS name deleg.example.com. is not permitted because there is no NS RRSet"},
		},
		{
			name: "a delegation with its DS can be deleted in one batch",
			changes: []types.Change{
				change(del, set("deleg.example.com.", "DS", 3600, "2371 13 2 "+dsDigest)),
				change(del, set("deleg.example.com.", "NS", 3600, "ns1.deleg.example.com.")),
			},
		},
		{
			name: "a zone's own DS belongs in its parent",
			changes: []types.Change{
				change(create, set("example.com.", "DS", 3600, "2371 13 2 "+dsDigest)),
			},
			code: "InvalidChangeBatch", msgs: []string{"RRSet of type DS with DNS name example.com. is not permitted in zone example.com."},
		},
		{
			name: "a DS digest must have its digest type's length",
			changes: []types.Change{
				change(create, set("sub.example.com.", "NS", 3600, "ns1.sub.example.com.")),
				change(create, set("sub.example.com.", "DS", 3600, "2371 13 2 C988EC42")),
			},
			code: "InvalidChangeBatch", msgs: []string{"DSRRDATAIllegalDigest"},
		},
		{
			name: "a DS digest type must be one Route 53 knows",
			changes: []types.Change{
				change(create, set("sub.example.com.", "NS", 3600, "ns1.sub.example.com.")),
				change(create, set("sub.example.com.", "DS", 3600, "2371 13 3 "+dsDigest)),
			},
			code: "InvalidChangeBatch", msgs: []string{"DSRRDATAIllegalDigestType"},
		},
		{
			name: "every failing change is listed and none is applied",
			changes: []types.Change{
				change(create, set("fine.example.com.", "A", 60, "192.0.2.1")),
				change(create, set("a.example.com.", "A", 60, "192.0.2.9")),
				change(create, set("c.example.com.", "A", 60, "192.0.2.9")),
			},
			code: "InvalidChangeBatch", msgs: []string{"[name='a.example.com.', type='A'] but it already exists", "RRSet of type A with DNS name c.example.com."},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{})
			defer s.Close()
			id := s.AddZone("example.com")
			s.Put(id, seed...)
			before := s.Records(id)
			_, err := client(s).ChangeResourceRecordSets(context.Background(), &r53.ChangeResourceRecordSetsInput{
				HostedZoneId: aws.String("/hostedzone/" + id), ChangeBatch: &types.ChangeBatch{Changes: tc.changes},
			})
			if tc.code == "" {
				require.NoError(t, err)
				return
			}
			var ae smithy.APIError
			require.ErrorAs(t, err, &ae)
			assert.Equal(t, tc.code, ae.ErrorCode())
			for _, m := range tc.msgs {
				assert.Contains(t, ae.ErrorMessage(), m)
			}
			assert.Equal(t, before, s.Records(id), "a refused batch changes nothing")
			b := s.Batches()
			require.Len(t, b, 1)
			assert.NotEmpty(t, b[0].Err)
		})
	}
}

func TestBatchLimits(t *testing.T) {
	cases := []struct {
		name     string
		changes  func() []types.Change
		accepted bool
	}{
		{"1,000 CREATEs fit", func() []types.Change { return many(create, 1000, 1) }, true},
		{"1,001 CREATEs do not", func() []types.Change { return many(create, 1001, 1) }, false},
		{"500 UPSERTs fit, counted twice", func() []types.Change { return many(upsert, 500, 1) }, true},
		{"501 UPSERTs do not", func() []types.Change { return many(upsert, 501, 1) }, false},
		{"32,000 characters of values fit", func() []types.Change { return txt(create, 320, 100) }, true},
		{"32,001 characters do not", func() []types.Change { return append(txt(create, 320, 100), txt(create, 1, 1)...) }, false},
		{"16,001 characters of UPSERTs do not, counted twice", func() []types.Change { return append(txt(upsert, 160, 100), txt(create, 1, 1)...) }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{})
			defer s.Close()
			id := s.AddZone("example.com")
			_, err := client(s).ChangeResourceRecordSets(context.Background(), &r53.ChangeResourceRecordSetsInput{
				HostedZoneId: aws.String(id), ChangeBatch: &types.ChangeBatch{Changes: tc.changes()},
			})
			if tc.accepted {
				require.NoError(t, err)
				return
			}
			var icb *types.InvalidChangeBatch
			require.ErrorAs(t, err, &icb)
			assert.Contains(t, icb.ErrorMessage(), "limit of")
		})
	}
}

// many is n changes of one-address sets.
func many(action types.ChangeAction, n, values int) []types.Change {
	var out []types.Change
	for i := range n {
		var vs []string
		for j := range values {
			vs = append(vs, fmt.Sprintf("10.%d.%d.%d", j, i/256, i%256))
		}
		out = append(out, change(action, set(fmt.Sprintf("h%04d.example.com.", i), "A", 60, vs...)))
	}
	return out
}

// txt is n TXT changes whose value is size characters, quotes included.
func txt(action types.ChangeAction, n, size int) []types.Change {
	var out []types.Change
	for i := range n {
		v := `"` + strings.Repeat("x", max(size-2, 0)) + `"`
		if size == 1 {
			v = `"` // refused later for its quoting, but counted first
		}
		out = append(out, change(action, set(fmt.Sprintf("t%04d.example.com.", i), "TXT", 60, v)))
	}
	return out
}

func TestListingPagesInRoute53Order(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	id := s.AddZone("example.com")
	for i := range 301 {
		s.Put(id, RecordSet{Name: fmt.Sprintf("h%03d.example.com.", i), Type: "A", TTL: 60, Values: []string{"192.0.2.1"}})
	}
	s.Put(id,
		RecordSet{Name: "*.example.com.", Type: "A", TTL: 60, Values: []string{"192.0.2.1"}},
		RecordSet{Name: "w.example.com.", Type: "A", TTL: 60, Values: []string{"192.0.2.1"}, SetID: "b", Weight: aws.Int64(1)},
		RecordSet{Name: "w.example.com.", Type: "A", TTL: 60, Values: []string{"192.0.2.2"}, SetID: "a", Weight: aws.Int64(1)},
	)
	c := client(s)
	in := &r53.ListResourceRecordSetsInput{HostedZoneId: aws.String(id), MaxItems: aws.Int32(1000)}
	var names []string
	pages := 0
	for {
		out, err := c.ListResourceRecordSets(context.Background(), in)
		require.NoError(t, err)
		pages++
		assert.LessOrEqual(t, len(out.ResourceRecordSets), 300, "never more than 300 a page")
		for _, rs := range out.ResourceRecordSets {
			names = append(names, aws.ToString(rs.Name)+" "+string(rs.Type)+" "+aws.ToString(rs.SetIdentifier))
		}
		if !out.IsTruncated {
			break
		}
		in = &r53.ListResourceRecordSetsInput{HostedZoneId: in.HostedZoneId, MaxItems: in.MaxItems,
			StartRecordName: out.NextRecordName, StartRecordType: out.NextRecordType, StartRecordIdentifier: out.NextRecordIdentifier}
	}
	assert.Equal(t, 2, pages)
	require.Len(t, names, 301+3+2)
	assert.Equal(t, []string{"example.com. NS ", "example.com. SOA ", `\052.example.com. A `}, names[:3], "the apex first, * escaped as Route 53 does")
	assert.Equal(t, []string{"w.example.com. A a", "w.example.com. A b"}, names[len(names)-2:], "sets of one name and type by identifier")
}

func TestFaultsAndChangeStatus(t *testing.T) {
	t.Run("throttling answers 400 Throttling", func(t *testing.T) {
		s := New(Options{Faults: Faults{Throttle: 1}})
		defer s.Close()
		_, err := client(s).ListHostedZonesByName(context.Background(), &r53.ListHostedZonesByNameInput{})
		var ae smithy.APIError
		require.ErrorAs(t, err, &ae)
		assert.Equal(t, "Throttling", ae.ErrorCode())
		var re interface{ HTTPStatusCode() int }
		require.ErrorAs(t, err, &re)
		assert.Equal(t, http.StatusBadRequest, re.HTTPStatusCode())
		assert.Equal(t, 1, s.Throttled())
	})
	t.Run("server errors answer 500", func(t *testing.T) {
		s := New(Options{Faults: Faults{ServerError: 1, Ops: []string{OpGetChange}}})
		defer s.Close()
		_, err := client(s).ListHostedZonesByName(context.Background(), &r53.ListHostedZonesByNameInput{})
		require.NoError(t, err, "faults only where asked")
		_, err = client(s).GetChange(context.Background(), &r53.GetChangeInput{Id: aws.String("C1")})
		var re interface{ HTTPStatusCode() int }
		require.ErrorAs(t, err, &re)
		assert.Equal(t, http.StatusInternalServerError, re.HTTPStatusCode())
	})
	t.Run("a change is PENDING for PendingFor, then INSYNC", func(t *testing.T) {
		s := New(Options{PendingFor: 50 * time.Millisecond})
		defer s.Close()
		id := s.AddZone("example.com")
		c := client(s)
		out, err := c.ChangeResourceRecordSets(context.Background(), &r53.ChangeResourceRecordSetsInput{
			HostedZoneId: aws.String(id), ChangeBatch: &types.ChangeBatch{Changes: many(create, 1, 1)},
		})
		require.NoError(t, err)
		assert.Equal(t, types.ChangeStatusPending, out.ChangeInfo.Status)
		assert.True(t, strings.HasPrefix(aws.ToString(out.ChangeInfo.Id), "/change/"))
		require.Eventually(t, func() bool {
			got, err := c.GetChange(context.Background(), &r53.GetChangeInput{Id: out.ChangeInfo.Id})
			return err == nil && got.ChangeInfo.Status == types.ChangeStatusInsync
		}, 5*time.Second, 10*time.Millisecond)
	})
	t.Run("an unknown change is NoSuchChange", func(t *testing.T) {
		s := New(Options{})
		defer s.Close()
		_, err := client(s).GetChange(context.Background(), &r53.GetChangeInput{Id: aws.String("/change/CNOPE")})
		var nsc *types.NoSuchChange
		assert.True(t, errors.As(err, &nsc), "%v", err)
	})
	t.Run("an unsigned request is refused", func(t *testing.T) {
		s := New(Options{})
		defer s.Close()
		resp, err := http.Get(s.URL() + "/2013-04-01/hostedzonesbyname")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode)
	})
}
