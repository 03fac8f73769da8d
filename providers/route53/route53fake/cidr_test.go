package route53fake

import (
	"fmt"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func put(loc string, cidrs ...string) types.CidrCollectionChange {
	return types.CidrCollectionChange{Action: types.CidrCollectionChangeActionPut, LocationName: aws.String(loc), CidrList: cidrs}
}

func drop(loc string, cidrs ...string) types.CidrCollectionChange {
	return types.CidrCollectionChange{Action: types.CidrCollectionChangeActionDeleteIfExists, LocationName: aws.String(loc), CidrList: cidrs}
}

// collection creates a collection through the API and returns its id.
func collection(t *testing.T, c *r53.Client, name string, changes ...types.CidrCollectionChange) string {
	t.Helper()
	out, err := c.CreateCidrCollection(ctx, &r53.CreateCidrCollectionInput{Name: aws.String(name), CallerReference: aws.String("ref-" + name)})
	require.NoError(t, err)
	if len(changes) > 0 {
		_, err = c.ChangeCidrCollection(ctx, &r53.ChangeCidrCollectionInput{Id: out.Collection.Id, Changes: changes})
		require.NoError(t, err)
	}
	return aws.ToString(out.Collection.Id)
}

// ipSet is an IP-based record set.
func ipSet(name, id, coll, loc, value string) *types.ResourceRecordSet {
	rs := set(name, "A", 60, value)
	rs.SetIdentifier = aws.String(id)
	rs.CidrRoutingConfig = &types.CidrRoutingConfig{CollectionId: aws.String(coll), LocationName: aws.String(loc)}
	return rs
}

func changeSets(c *r53.Client, zone string, changes ...types.Change) error {
	_, err := c.ChangeResourceRecordSets(ctx, &r53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(zone), ChangeBatch: &types.ChangeBatch{Changes: changes}})
	return err
}

func TestCidrCollectionCreation(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	c := client(s)
	out, err := c.CreateCidrCollection(ctx, &r53.CreateCidrCollectionInput{Name: aws.String("meridian-networks"), CallerReference: aws.String("r1")})
	require.NoError(t, err)
	assert.Equal(t, int64(1), aws.ToInt64(out.Collection.Version))
	assert.Equal(t, "arn:aws:route53:::cidrcollection/"+aws.ToString(out.Collection.Id), aws.ToString(out.Collection.Arn))
	assert.Regexp(t, `^[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$`, aws.ToString(out.Collection.Id), "a UUID as Route 53's")

	again, err := c.CreateCidrCollection(ctx, &r53.CreateCidrCollectionInput{Name: aws.String("meridian-networks"), CallerReference: aws.String("r1")})
	require.NoError(t, err, "a replay returns the collection")
	assert.Equal(t, aws.ToString(out.Collection.Id), aws.ToString(again.Collection.Id))
	_, err = c.CreateCidrCollection(ctx, &r53.CreateCidrCollectionInput{Name: aws.String("meridian-networks"), CallerReference: aws.String("r2")})
	var exists *types.CidrCollectionAlreadyExistsException
	require.ErrorAs(t, err, &exists)
	_, err = c.CreateCidrCollection(ctx, &r53.CreateCidrCollectionInput{Name: aws.String("bad name"), CallerReference: aws.String("r3")})
	assert.Equal(t, "InvalidInput", apiCode(t, err))

	list, err := c.ListCidrCollections(ctx, &r53.ListCidrCollectionsInput{})
	require.NoError(t, err)
	require.Len(t, list.CidrCollections, 1)
	assert.Equal(t, "meridian-networks", aws.ToString(list.CidrCollections[0].Name))
}

func TestChangeCidrCollectionRules(t *testing.T) {
	cases := []struct {
		name    string
		version *int64
		changes []types.CidrCollectionChange
		code    string // "" = accepted
		msg     string
	}{
		{name: "blocks go to a new location", changes: []types.CidrCollectionChange{put("office", "198.51.99.0/24", "2001:db9::/48")}},
		{name: "the current version is accepted", version: aws.Int64(2), changes: []types.CidrCollectionChange{put("office", "198.51.98.0/24")}},
		{name: "an old version is CidrCollectionVersionMismatchException", version: aws.Int64(1), changes: []types.CidrCollectionChange{put("office", "198.51.98.0/24")},
			code: "CidrCollectionVersionMismatchException", msg: "(1) doesn't match the collection's current version (2)"},
		{name: "an IPv4 block longer than /24 is refused", changes: []types.CidrCollectionChange{put("office", "198.51.98.0/25")}, code: "InvalidInput", msg: "between /1 and /24"},
		{name: "an IPv6 block longer than /48 is refused", changes: []types.CidrCollectionChange{put("office", "2001:db9::/49")}, code: "InvalidInput", msg: "between /1 and /48"},
		{name: "a /0 block is refused: it is the default location", changes: []types.CidrCollectionChange{put("office", "0.0.0.0/0")}, code: "InvalidInput", msg: `use the default location "*"`},
		{name: "a block with host bits is refused", changes: []types.CidrCollectionChange{put("office", "198.51.98.7/24")}, code: "InvalidInput", msg: "has host bits set"},
		{name: "a location name is at most 16 letters, digits, - and _", changes: []types.CidrCollectionChange{put("an-office-far-away", "198.51.98.0/24")}, code: "InvalidInput", msg: "have length between 1 and 16"},
		{name: "a location cannot be called *", changes: []types.CidrCollectionChange{put("*", "198.51.98.0/24")}, code: "InvalidInput", msg: "locationName"},
		{name: "a block belongs to one location", changes: []types.CidrCollectionChange{put("branch", "192.0.2.0/24")}, code: "CidrBlockInUseException", msg: "already in use by the location edge"},
		{name: "a block moves between locations in one request", changes: []types.CidrCollectionChange{drop("edge", "192.0.2.0/24"), put("branch", "192.0.2.0/24")}},
		{name: "deleting what is not there is fine", changes: []types.CidrCollectionChange{drop("nowhere", "203.0.113.0/24")}},
		{name: "more than 1,000 blocks in one request are refused", changes: []types.CidrCollectionChange{put("a", blocks(0, 600)...), put("b", blocks(600, 401)...)}, code: "InvalidInput", msg: "at most 1000"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{})
			defer s.Close()
			c := client(s)
			id := collection(t, c, "nets", put("edge", "192.0.2.0/24"))
			before := s.CidrCollections()
			out, err := c.ChangeCidrCollection(ctx, &r53.ChangeCidrCollectionInput{Id: aws.String(id), CollectionVersion: tc.version, Changes: tc.changes})
			if tc.code == "" {
				require.NoError(t, err)
				assert.Equal(t, before[0].Version+1, s.CidrCollections()[0].Version)
				got, err := c.GetChange(ctx, &r53.GetChangeInput{Id: out.Id})
				require.NoError(t, err, "the change id works with GetChange")
				assert.Equal(t, types.ChangeStatusInsync, got.ChangeInfo.Status)
				return
			}
			assert.Equal(t, tc.code, apiCode(t, err))
			assert.ErrorContains(t, err, tc.msg)
			assert.Equal(t, before, s.CidrCollections(), "a refused change changes nothing")
		})
	}
}

// blocks is n distinct /24 blocks from 10.x.y.0/24, starting at from.
func blocks(from, n int) []string {
	var out []string
	for i := from; i < from+n; i++ {
		out = append(out, fmt.Sprintf("10.%d.%d.0/24", i/256, i%256))
	}
	return out
}

func TestCidrLocationsInUse(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	c := client(s)
	zone := s.AddZone("example.com")
	coll := collection(t, c, "nets", put("edge", "192.0.2.0/24", "198.51.99.0/24"), put("idle", "203.0.113.0/24"))
	other := collection(t, c, "other", put("edge", "198.18.0.0/15"))

	err := changeSets(c, zone, change(create, ipSet("ip.example.com.", "edge", coll, "edge", "198.51.99.1")), change(create, ipSet("ip.example.com.", "default", coll, "*", "198.51.99.2")))
	require.NoError(t, err, "a record set routes by an existing location or the default *")

	err = changeSets(c, zone, change(create, ipSet("ip.example.com.", "x", coll, "nowhere", "198.51.99.3")))
	assert.Equal(t, "InvalidChangeBatch", apiCode(t, err))
	assert.ErrorContains(t, err, "CIDR location 'nowhere'")
	err = changeSets(c, zone, change(create, ipSet("ip.example.com.", "y", "00000000-0000-4000-8000-000000000000", "edge", "198.51.99.3")))
	assert.ErrorContains(t, err, "CIDR collection '00000000-0000-4000-8000-000000000000'")
	err = changeSets(c, zone, change(create, ipSet("ip.example.com.", "z", other, "edge", "198.51.99.3")))
	assert.ErrorContains(t, err, "as the other IP-based sets with the same name and type use collection")
	err = changeSets(c, zone, change(create, ipSet("ip.example.com.", "w", coll, "edge", "198.51.99.3")))
	assert.ErrorContains(t, err, "same name, type and CIDR location edge")

	_, err = c.ChangeCidrCollection(ctx, &r53.ChangeCidrCollectionInput{Id: aws.String(coll), Changes: []types.CidrCollectionChange{drop("edge", "192.0.2.0/24", "198.51.99.0/24")}})
	var inUse *types.CidrBlockInUseException
	require.ErrorAs(t, err, &inUse, "the last blocks of a location a record routes by stay")
	_, err = c.ChangeCidrCollection(ctx, &r53.ChangeCidrCollectionInput{Id: aws.String(coll), Changes: []types.CidrCollectionChange{drop("edge", "192.0.2.0/24"), drop("idle", "203.0.113.0/24")}})
	require.NoError(t, err, "a used location may shrink and an unused one go")

	_, err = c.DeleteCidrCollection(ctx, &r53.DeleteCidrCollectionInput{Id: aws.String(coll)})
	var collInUse *types.CidrCollectionInUseException
	require.ErrorAs(t, err, &collInUse, "a collection records route by stays")
	_, err = c.DeleteCidrCollection(ctx, &r53.DeleteCidrCollectionInput{Id: aws.String(other)})
	require.ErrorAs(t, err, &collInUse, "a collection that is not empty stays")
	_, err = c.ChangeCidrCollection(ctx, &r53.ChangeCidrCollectionInput{Id: aws.String(other), Changes: []types.CidrCollectionChange{drop("edge", "198.18.0.0/15")}})
	require.NoError(t, err)
	_, err = c.DeleteCidrCollection(ctx, &r53.DeleteCidrCollectionInput{Id: aws.String(other)})
	require.NoError(t, err, "an empty unused collection goes")
	assert.Len(t, s.CidrCollections(), 1)
}

func TestCidrListings(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	c := client(s)
	coll := collection(t, c, "nets", put("b-site", "198.51.99.0/24", "2001:db9::/48"), put("a-site", "192.0.2.0/24"))

	locs, err := c.ListCidrLocations(ctx, &r53.ListCidrLocationsInput{CollectionId: aws.String(coll)})
	require.NoError(t, err)
	require.Len(t, locs.CidrLocations, 2)
	assert.Equal(t, "a-site", aws.ToString(locs.CidrLocations[0].LocationName))

	var all []string
	p := r53.NewListCidrBlocksPaginator(c, &r53.ListCidrBlocksInput{CollectionId: aws.String(coll), MaxResults: aws.Int32(2)})
	pages := 0
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		require.NoError(t, err)
		pages++
		for _, b := range out.CidrBlocks {
			all = append(all, aws.ToString(b.LocationName)+" "+aws.ToString(b.CidrBlock))
		}
	}
	assert.Equal(t, 2, pages)
	assert.Equal(t, []string{"a-site 192.0.2.0/24", "b-site 198.51.99.0/24", "b-site 2001:db9::/48"}, all)

	one, err := c.ListCidrBlocks(ctx, &r53.ListCidrBlocksInput{CollectionId: aws.String(coll), LocationName: aws.String("a-site")})
	require.NoError(t, err)
	assert.Len(t, one.CidrBlocks, 1)
	_, err = c.ListCidrBlocks(ctx, &r53.ListCidrBlocksInput{CollectionId: aws.String(coll), LocationName: aws.String("nowhere")})
	var nsl *types.NoSuchCidrLocationException
	require.ErrorAs(t, err, &nsl)
	_, err = c.ListCidrLocations(ctx, &r53.ListCidrLocationsInput{CollectionId: aws.String("00000000-0000-4000-8000-000000000000")})
	var nsc *types.NoSuchCidrCollectionException
	require.ErrorAs(t, err, &nsc)

	foreign := s.PutCidrCollection(CidrCollection{Name: "theirs", Locations: map[string][]string{"x": {"203.0.113.0/24"}}})
	assert.Len(t, s.CidrCollections(), 2)
	for _, got := range s.CidrCollections() {
		if got.ID == foreign {
			assert.Equal(t, map[string][]string{"x": {"203.0.113.0/24"}}, got.Locations)
		}
	}
}
