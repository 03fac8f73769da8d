package route53

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/plan"
	"github.com/meridian-gslb/meridian/providers/route53/route53fake"
)

// oddAPI is the fake behind a real client, with answers of some calls
// changed into what Route 53 never sends (missing bodies, ids, configs).
type oddAPI struct {
	API
	zones       func(*r53.ListHostedZonesByNameOutput) *r53.ListHostedZonesByNameOutput
	list        func(*r53.ListResourceRecordSetsOutput) *r53.ListResourceRecordSetsOutput
	change      func(*r53.ChangeResourceRecordSetsOutput) *r53.ChangeResourceRecordSetsOutput
	listChecks  func(*r53.ListHealthChecksOutput) *r53.ListHealthChecksOutput
	createCheck func(*r53.CreateHealthCheckOutput) *r53.CreateHealthCheckOutput
	updateCheck func(*r53.UpdateHealthCheckOutput) *r53.UpdateHealthCheckOutput
	listTags    func(*r53.ListTagsForResourcesOutput) *r53.ListTagsForResourcesOutput
	colls       func(*r53.ListCidrCollectionsOutput) *r53.ListCidrCollectionsOutput
	createColl  func(*r53.CreateCidrCollectionOutput) *r53.CreateCidrCollectionOutput
	blocks      func(*r53.ListCidrBlocksOutput) *r53.ListCidrBlocksOutput
}

func odd[T any](f func(*T) *T, out *T, err error) (*T, error) {
	if err != nil || f == nil {
		return out, err
	}
	return f(out), nil
}

func (o *oddAPI) ListHostedZonesByName(ctx context.Context, in *r53.ListHostedZonesByNameInput, fns ...func(*r53.Options)) (*r53.ListHostedZonesByNameOutput, error) {
	out, err := o.API.ListHostedZonesByName(ctx, in, fns...)
	return odd(o.zones, out, err)
}

func (o *oddAPI) ListResourceRecordSets(ctx context.Context, in *r53.ListResourceRecordSetsInput, fns ...func(*r53.Options)) (*r53.ListResourceRecordSetsOutput, error) {
	out, err := o.API.ListResourceRecordSets(ctx, in, fns...)
	return odd(o.list, out, err)
}

func (o *oddAPI) ChangeResourceRecordSets(ctx context.Context, in *r53.ChangeResourceRecordSetsInput, fns ...func(*r53.Options)) (*r53.ChangeResourceRecordSetsOutput, error) {
	out, err := o.API.ChangeResourceRecordSets(ctx, in, fns...)
	return odd(o.change, out, err)
}

func (o *oddAPI) ListHealthChecks(ctx context.Context, in *r53.ListHealthChecksInput, fns ...func(*r53.Options)) (*r53.ListHealthChecksOutput, error) {
	out, err := o.API.ListHealthChecks(ctx, in, fns...)
	return odd(o.listChecks, out, err)
}

func (o *oddAPI) CreateHealthCheck(ctx context.Context, in *r53.CreateHealthCheckInput, fns ...func(*r53.Options)) (*r53.CreateHealthCheckOutput, error) {
	out, err := o.API.CreateHealthCheck(ctx, in, fns...)
	return odd(o.createCheck, out, err)
}

func (o *oddAPI) UpdateHealthCheck(ctx context.Context, in *r53.UpdateHealthCheckInput, fns ...func(*r53.Options)) (*r53.UpdateHealthCheckOutput, error) {
	out, err := o.API.UpdateHealthCheck(ctx, in, fns...)
	return odd(o.updateCheck, out, err)
}

func (o *oddAPI) ListTagsForResources(ctx context.Context, in *r53.ListTagsForResourcesInput, fns ...func(*r53.Options)) (*r53.ListTagsForResourcesOutput, error) {
	out, err := o.API.ListTagsForResources(ctx, in, fns...)
	return odd(o.listTags, out, err)
}

func (o *oddAPI) ListCidrCollections(ctx context.Context, in *r53.ListCidrCollectionsInput, fns ...func(*r53.Options)) (*r53.ListCidrCollectionsOutput, error) {
	out, err := o.API.ListCidrCollections(ctx, in, fns...)
	return odd(o.colls, out, err)
}

func (o *oddAPI) CreateCidrCollection(ctx context.Context, in *r53.CreateCidrCollectionInput, fns ...func(*r53.Options)) (*r53.CreateCidrCollectionOutput, error) {
	out, err := o.API.CreateCidrCollection(ctx, in, fns...)
	return odd(o.createColl, out, err)
}

func (o *oddAPI) ListCidrBlocks(ctx context.Context, in *r53.ListCidrBlocksInput, fns ...func(*r53.Options)) (*r53.ListCidrBlocksOutput, error) {
	out, err := o.API.ListCidrBlocks(ctx, in, fns...)
	return odd(o.blocks, out, err)
}

func none[T any](*T) *T { return nil }

func TestOddAnswersAreErrorsNamingTheCallNeverPanics(t *testing.T) {
	geo := providers.ServiceView{Name: "geo.example.com.", Strategy: model.StrategyGeo, TTL: 30, HealthCheck: httpCheck(80),
		Networks:  []model.GeoNetwork{{CIDR: "10.1.0.0/16", Region: "office"}},
		Endpoints: []providers.EndpointView{ep("198.51.99.11", "A", "us", 100, true), ep("198.51.99.12", "A", "eu", 100, true)}}
	views := []providers.ServiceView{weighted7030(httpCheck(80), "198.51.99.1", "198.51.99.2"), geo}
	cases := []struct {
		name  string
		odd   oddAPI
		first bool   // a clean pass first, so that checks and the collection exist
		want  string // in the error
	}{
		{name: "a hosted zone listing without a body", odd: oddAPI{zones: none[r53.ListHostedZonesByNameOutput]}, want: "ListHostedZonesByName: the answer has no body"},
		{name: "a hosted zone of our name without an id", odd: oddAPI{zones: func(o *r53.ListHostedZonesByNameOutput) *r53.ListHostedZonesByNameOutput {
			for i := range o.HostedZones {
				o.HostedZones[i].Id = nil
			}
			return o
		}}, want: "ListHostedZonesByName: the answer has no hosted zone id"},
		{name: "a record listing without a body", odd: oddAPI{list: none[r53.ListResourceRecordSetsOutput]}, want: "ListResourceRecordSets: the answer has no body"},
		{name: "a record change without a body", odd: oddAPI{change: none[r53.ChangeResourceRecordSetsOutput]}, want: "ChangeResourceRecordSets: the answer has no body"},
		{name: "a health check listing without a body", odd: oddAPI{listChecks: none[r53.ListHealthChecksOutput]}, want: "ListHealthChecks: the answer has no body"},
		{name: "a listed check of ours without an id", first: true, odd: oddAPI{listChecks: func(o *r53.ListHealthChecksOutput) *r53.ListHealthChecksOutput {
			o.HealthChecks[0].Id = nil
			return o
		}}, want: "ListHealthChecks: the answer has no id"},
		{name: "a created check without a body", odd: oddAPI{createCheck: none[r53.CreateHealthCheckOutput]}, want: "CreateHealthCheck: the answer has no body"},
		{name: "a created check without its health check", odd: oddAPI{createCheck: func(o *r53.CreateHealthCheckOutput) *r53.CreateHealthCheckOutput {
			o.HealthCheck = nil
			return o
		}}, want: "CreateHealthCheck: the answer has no health check id"},
		{name: "a created check without an id", odd: oddAPI{createCheck: func(o *r53.CreateHealthCheckOutput) *r53.CreateHealthCheckOutput {
			o.HealthCheck.Id = nil
			return o
		}}, want: "CreateHealthCheck: the answer has no health check id"},
		{name: "an updated check without its health check", first: true, odd: oddAPI{
			listChecks: func(o *r53.ListHealthChecksOutput) *r53.ListHealthChecksOutput {
				for i := range o.HealthChecks {
					if c := o.HealthChecks[i].HealthCheckConfig; c != nil && c.Type != types.HealthCheckTypeCalculated {
						c.FailureThreshold = aws.Int32(9) // drifted: UpdateHealthCheck follows
					}
				}
				return o
			},
			updateCheck: func(o *r53.UpdateHealthCheckOutput) *r53.UpdateHealthCheckOutput { o.HealthCheck = nil; return o },
		}, want: "UpdateHealthCheck: the answer has no health check"},
		{name: "a tag listing without a body", odd: oddAPI{listTags: none[r53.ListTagsForResourcesOutput]}, first: true, want: "ListTagsForResources: the answer has no body"},
		{name: "a collection listing without a body", odd: oddAPI{colls: none[r53.ListCidrCollectionsOutput]}, want: "ListCidrCollections: the answer has no body"},
		{name: "our collection listed without an id", first: true, odd: oddAPI{colls: func(o *r53.ListCidrCollectionsOutput) *r53.ListCidrCollectionsOutput {
			for i := range o.CidrCollections {
				o.CidrCollections[i].Id = nil
			}
			return o
		}}, want: "ListCidrCollections: the answer has no collection id"},
		{name: "a created collection without its collection", odd: oddAPI{createColl: func(o *r53.CreateCidrCollectionOutput) *r53.CreateCidrCollectionOutput {
			o.Collection = nil
			return o
		}}, want: "CreateCidrCollection: the answer has no collection id"},
		{name: "a block listing without a body", first: true, odd: oddAPI{blocks: none[r53.ListCidrBlocksOutput]}, want: "ListCidrBlocks: the answer has no body"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, route53fake.Options{}, backstop)
			if tc.first {
				e.pass(t, views)
				e.p = e.provider(t, backstop) // a new process: nothing cached
			}
			o := tc.odd
			o.API = e.p.api
			e.p.api = &o
			var err error
			require.NotPanics(t, func() { _, _, err = e.tryPass(context.Background(), e.p, views) })
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestACheckListedWithoutItsSettingsIsReplacedNotUpdated(t *testing.T) {
	e := newEnv(t, route53fake.Options{}, backstop)
	views := []providers.ServiceView{weighted7030(httpCheck(80), "198.51.99.1", "198.51.99.2")}
	e.pass(t, views)
	before := map[string]bool{}
	for _, hc := range e.ours() {
		before[hc.ID] = true
	}
	require.Len(t, before, 2)
	e.p = e.provider(t, backstop)
	e.p.api = &oddAPI{API: e.p.api, listChecks: func(o *r53.ListHealthChecksOutput) *r53.ListHealthChecksOutput {
		for i := range o.HealthChecks {
			o.HealthChecks[i].HealthCheckConfig = nil
		}
		return o
	}}
	require.NotPanics(t, func() { e.pass(t, views) })
	after := e.ours()
	require.Len(t, after, 2, "one check per endpoint, the unreadable ones deleted once the sets moved")
	for _, hc := range after {
		assert.False(t, before[hc.ID], "%s is a new check", hc.ID)
		assert.Equal(t, int32(80), hc.Config.Port)
	}
	for _, s := range e.fake.Records(e.zoneID) {
		if s.Type == "A" {
			assert.NotContains(t, before, s.HealthCheckID, "%s [%s] uses a new check", s.Name, s.SetID)
		}
	}
}

// refusingAPI refuses every record change, as Route 53 does a batch it
// finds invalid.
type refusingAPI struct{ API }

func (refusingAPI) ChangeResourceRecordSets(context.Context, *r53.ChangeResourceRecordSetsInput, ...func(*r53.Options)) (*r53.ChangeResourceRecordSetsOutput, error) {
	return nil, &types.InvalidChangeBatch{Message: aws.String("[injected refusal]")}
}

func TestACheckARecordSetStillUsesIsNeverDeleted(t *testing.T) {
	// The fake deletes checks in use, as real Route 53 does.
	e := newEnv(t, route53fake.Options{AllowDeleteInUse: true}, backstop)
	views := []providers.ServiceView{
		weighted7030(httpCheck(80), "198.51.99.1", "198.51.99.2"),
		failover3(httpCheck(80), "198.51.99.21", "198.51.99.22", "198.51.99.23"),
	}
	e.pass(t, views)
	old := map[string]bool{}
	for _, hc := range e.ours() {
		old[hc.ID] = true
	}
	require.Len(t, old, 4, "2 weighted endpoints, PRIMARY's and SECONDARY's")

	// Every check changes (other port), and Route 53 refuses the record
	// changes that would move the sets to the new ones.
	views = []providers.ServiceView{
		weighted7030(httpCheck(81), "198.51.99.1", "198.51.99.2"),
		failover3(httpCheck(81), "198.51.99.21", "198.51.99.22", "198.51.99.23"),
	}
	orig := e.p.api
	e.p.api = refusingAPI{orig}
	ctx := context.Background()
	_, err := e.p.PrepareObjects(ctx, testZone, views, false)
	require.NoError(t, err)
	cur, err := e.p.Records(ctx, testZone)
	require.NoError(t, err)
	pl := plan.Compute(plan.Input{Owner: testOwner, Desired: e.p.Desired(views, testZone), Current: cur})
	res, err := e.p.Apply(ctx, testZone, pl.Changes)
	require.NoError(t, err)
	require.NotEmpty(t, res.Failed, "the record changes were refused")
	collected, err := e.p.CollectObjects(ctx, testZone, false) // as the reconciler does after refusals
	require.NoError(t, err)

	left := map[string]bool{}
	for _, hc := range e.fake.HealthChecks() {
		left[hc.ID] = true
	}
	for _, s := range e.fake.Records(e.zoneID) {
		if s.HealthCheckID != "" {
			assert.True(t, left[s.HealthCheckID], "%s %s [%s] still has its check %s", s.Name, s.Type, s.SetID, s.HealthCheckID)
		}
	}
	for id := range old {
		assert.True(t, left[id], "old check %s survives while its sets use it", id)
	}
	assert.Equal(t, collected.Failed(), len(old), "each kept check is reported, to be tried again")

	// Route 53 takes the changes again: the sets move, then the old checks go.
	e.p.api = orig
	e.pass(t, views)
	for _, hc := range e.ours() {
		assert.False(t, old[hc.ID], "old check %s deleted once no set uses it", hc.ID)
	}
}
