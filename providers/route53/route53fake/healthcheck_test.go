package route53fake

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"
	"github.com/aws/smithy-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var ctx = context.Background()

// httpCheck is a CreateHealthCheck input of an HTTP check.
func httpCheck(ref, ip string, port int32) *r53.CreateHealthCheckInput {
	return &r53.CreateHealthCheckInput{CallerReference: aws.String(ref), HealthCheckConfig: &types.HealthCheckConfig{
		Type: types.HealthCheckTypeHttp, IPAddress: aws.String(ip), Port: aws.Int32(port), ResourcePath: aws.String("/healthz"),
		FailureThreshold: aws.Int32(2), RequestInterval: aws.Int32(10),
	}}
}

// apiCode returns the error code of a Route 53 error ("" for nil).
func apiCode(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	var ae smithy.APIError
	require.ErrorAs(t, err, &ae)
	return ae.ErrorCode()
}

func TestCreateHealthCheckValidation(t *testing.T) {
	base := func() *types.HealthCheckConfig { return httpCheck("x", "198.51.99.10", 80).HealthCheckConfig }
	cases := []struct {
		name    string
		private bool
		edit    func(c *types.HealthCheckConfig)
		msg     string // "" = accepted
	}{
		{name: "a public address on a valid HTTP check is accepted", edit: func(*types.HealthCheckConfig) {}},
		{name: "a private address is refused as Route 53 refuses it", edit: func(c *types.HealthCheckConfig) { c.IPAddress = aws.String("10.1.2.3") }, msg: "local, private, non-routable"},
		{name: "loopback is refused by default", edit: func(c *types.HealthCheckConfig) { c.IPAddress = aws.String("127.0.0.1") }, msg: "local, private, non-routable"},
		{name: "a documentation address is refused too", edit: func(c *types.HealthCheckConfig) { c.IPAddress = aws.String("2001:db8::1") }, msg: "local, private, non-routable"},
		{name: "loopback is accepted with AllowPrivateIPs", private: true, edit: func(c *types.HealthCheckConfig) { c.IPAddress = aws.String("127.0.0.1") }},
		{name: "an address that does not parse is refused", edit: func(c *types.HealthCheckConfig) { c.IPAddress = aws.String("300.1.1.1") }, msg: "not a valid IPv4 or IPv6 address"},
		{name: "a port above 65535 is refused", edit: func(c *types.HealthCheckConfig) { c.Port = aws.Int32(65536) }, msg: "Member must have value between 1 and 65535"},
		{name: "a TCP check needs a port", edit: func(c *types.HealthCheckConfig) { c.Type, c.Port, c.ResourcePath = types.HealthCheckTypeTcp, nil, nil }, msg: "needs a Port"},
		{name: "an HTTP check without a port uses 80", edit: func(c *types.HealthCheckConfig) { c.Port = nil }},
		{name: "a resource path must start with a slash", edit: func(c *types.HealthCheckConfig) { c.ResourcePath = aws.String("healthz") }, msg: "must start with '/'"},
		{name: "a resource path stops at 255 characters", edit: func(c *types.HealthCheckConfig) { c.ResourcePath = aws.String("/" + strings.Repeat("a", 255)) }, msg: "have length less than or equal to 255"},
		{name: "the request interval is 10 or 30", edit: func(c *types.HealthCheckConfig) { c.RequestInterval = aws.Int32(20) }, msg: "must be 10 or 30"},
		{name: "the failure threshold stops at 10", edit: func(c *types.HealthCheckConfig) { c.FailureThreshold = aws.Int32(11) }, msg: "Member must have value between 1 and 10"},
		{name: "a string match check needs a search string", edit: func(c *types.HealthCheckConfig) { c.Type = types.HealthCheckTypeHttpStrMatch }, msg: "needs a SearchString"},
		{name: "a search string on a plain HTTP check is refused", edit: func(c *types.HealthCheckConfig) { c.SearchString = aws.String("ok") }, msg: "SearchString is only valid"},
		{name: "a check needs an address or a domain name", edit: func(c *types.HealthCheckConfig) { c.IPAddress = nil }, msg: "needs an IPAddress or a FullyQualifiedDomainName"},
		{name: "a domain name alone is enough", edit: func(c *types.HealthCheckConfig) {
			c.IPAddress, c.FullyQualifiedDomainName = nil, aws.String("www.example.com")
		}},
		{name: "two model violations are reported together", edit: func(c *types.HealthCheckConfig) { c.FailureThreshold, c.Port = aws.Int32(0), aws.Int32(70000) }, msg: "2 validation errors detected"},
		{name: "types the fake does not create are refused plainly", edit: func(c *types.HealthCheckConfig) { c.Type = types.HealthCheckTypeCloudwatchMetric }, msg: "the fake does not create health checks of type CLOUDWATCH_METRIC"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := New(Options{AllowPrivateIPs: tc.private})
			defer s.Close()
			cfg := base()
			tc.edit(cfg)
			out, err := client(s).CreateHealthCheck(ctx, &r53.CreateHealthCheckInput{CallerReference: aws.String("ref"), HealthCheckConfig: cfg})
			if tc.msg == "" {
				require.NoError(t, err)
				assert.Len(t, s.HealthChecks(), 1)
				assert.Equal(t, int64(1), aws.ToInt64(out.HealthCheck.HealthCheckVersion))
				assert.Equal(t, s.URL()+"/2013-04-01/healthcheck/"+aws.ToString(out.HealthCheck.Id), aws.ToString(out.Location))
				return
			}
			assert.Equal(t, "InvalidInput", apiCode(t, err))
			assert.ErrorContains(t, err, tc.msg)
			assert.Empty(t, s.HealthChecks(), "a refused check is not created")
		})
	}
}

func TestHealthCheckLifecycleRules(t *testing.T) {
	t.Run("a replay with the same caller reference and settings returns the existing check", func(t *testing.T) {
		s := New(Options{})
		defer s.Close()
		c := client(s)
		first, err := c.CreateHealthCheck(ctx, httpCheck("ref-1", "198.51.99.10", 80))
		require.NoError(t, err)
		again, err := c.CreateHealthCheck(ctx, httpCheck("ref-1", "198.51.99.10", 80))
		require.NoError(t, err)
		assert.Equal(t, aws.ToString(first.HealthCheck.Id), aws.ToString(again.HealthCheck.Id))
		assert.Len(t, s.HealthChecks(), 1)
		other, err := c.CreateHealthCheck(ctx, httpCheck("ref-2", "198.51.99.10", 80))
		require.NoError(t, err, "a new reference with identical settings creates another check")
		assert.NotEqual(t, aws.ToString(first.HealthCheck.Id), aws.ToString(other.HealthCheck.Id))
	})
	t.Run("the same caller reference with other settings is HealthCheckAlreadyExists", func(t *testing.T) {
		s := New(Options{})
		defer s.Close()
		c := client(s)
		_, err := c.CreateHealthCheck(ctx, httpCheck("ref-1", "198.51.99.10", 80))
		require.NoError(t, err)
		_, err = c.CreateHealthCheck(ctx, httpCheck("ref-1", "198.51.99.10", 8080))
		var exists *types.HealthCheckAlreadyExists
		require.ErrorAs(t, err, &exists)
		var re interface{ HTTPStatusCode() int }
		require.ErrorAs(t, err, &re)
		assert.Equal(t, http.StatusConflict, re.HTTPStatusCode())
	})
	t.Run("the caller reference of a deleted check cannot be used again", func(t *testing.T) {
		s := New(Options{})
		defer s.Close()
		c := client(s)
		out, err := c.CreateHealthCheck(ctx, httpCheck("ref-1", "198.51.99.10", 80))
		require.NoError(t, err)
		_, err = c.DeleteHealthCheck(ctx, &r53.DeleteHealthCheckInput{HealthCheckId: out.HealthCheck.Id})
		require.NoError(t, err)
		_, err = c.CreateHealthCheck(ctx, httpCheck("ref-1", "198.51.99.10", 80))
		assert.Equal(t, "HealthCheckAlreadyExists", apiCode(t, err))
	})
	t.Run("a check that a record set references is HealthCheckInUse until the record goes", func(t *testing.T) {
		s := New(Options{})
		defer s.Close()
		c := client(s)
		zone := s.AddZone("example.com")
		out, err := c.CreateHealthCheck(ctx, httpCheck("ref-1", "198.51.99.10", 80))
		require.NoError(t, err)
		rs := weighted(set("w.example.com.", "A", 60, "198.51.99.10"), "one", 1)
		rs.HealthCheckId = out.HealthCheck.Id
		_, err = c.ChangeResourceRecordSets(ctx, &r53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(zone), ChangeBatch: &types.ChangeBatch{Changes: []types.Change{change(create, rs)}}})
		require.NoError(t, err)
		_, err = c.DeleteHealthCheck(ctx, &r53.DeleteHealthCheckInput{HealthCheckId: out.HealthCheck.Id})
		var inUse *types.HealthCheckInUse
		require.ErrorAs(t, err, &inUse)
		assert.Contains(t, inUse.ErrorMessage(), "set-identifier='one'")
		_, err = c.ChangeResourceRecordSets(ctx, &r53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(zone), ChangeBatch: &types.ChangeBatch{Changes: []types.Change{change(del, rs)}}})
		require.NoError(t, err)
		_, err = c.DeleteHealthCheck(ctx, &r53.DeleteHealthCheckInput{HealthCheckId: out.HealthCheck.Id})
		require.NoError(t, err)
		assert.Empty(t, s.HealthChecks())
	})
	t.Run("AllowDeleteInUse deletes a referenced check as real Route 53 does", func(t *testing.T) {
		s := New(Options{AllowDeleteInUse: true})
		defer s.Close()
		zone := s.AddZone("example.com")
		id := s.PutHealthCheck(HealthCheck{Config: HealthCheckConfig{Type: "TCP", IPAddress: "198.51.99.10", Port: 443, RequestInterval: 30, FailureThreshold: 3}})
		s.Put(zone, RecordSet{Name: "w.example.com.", Type: "A", TTL: 60, Values: []string{"198.51.99.10"}, SetID: "one", Weight: aws.Int64(1), HealthCheckID: id})
		_, err := client(s).DeleteHealthCheck(ctx, &r53.DeleteHealthCheckInput{HealthCheckId: aws.String(id)})
		require.NoError(t, err)
	})
	t.Run("an update with an old HealthCheckVersion is HealthCheckVersionMismatch", func(t *testing.T) {
		s := New(Options{})
		defer s.Close()
		c := client(s)
		out, err := c.CreateHealthCheck(ctx, httpCheck("ref-1", "198.51.99.10", 80))
		require.NoError(t, err)
		up, err := c.UpdateHealthCheck(ctx, &r53.UpdateHealthCheckInput{HealthCheckId: out.HealthCheck.Id, HealthCheckVersion: aws.Int64(1), Port: aws.Int32(8080), Inverted: aws.Bool(true)})
		require.NoError(t, err)
		assert.Equal(t, int64(2), aws.ToInt64(up.HealthCheck.HealthCheckVersion))
		assert.Equal(t, int32(8080), aws.ToInt32(up.HealthCheck.HealthCheckConfig.Port))
		assert.True(t, aws.ToBool(up.HealthCheck.HealthCheckConfig.Inverted))
		assert.Equal(t, "/healthz", aws.ToString(up.HealthCheck.HealthCheckConfig.ResourcePath), "what the update leaves out stays")
		_, err = c.UpdateHealthCheck(ctx, &r53.UpdateHealthCheckInput{HealthCheckId: out.HealthCheck.Id, HealthCheckVersion: aws.Int64(1), Port: aws.Int32(9090)})
		var mismatch *types.HealthCheckVersionMismatch
		require.ErrorAs(t, err, &mismatch)
		got, err := c.GetHealthCheck(ctx, &r53.GetHealthCheckInput{HealthCheckId: out.HealthCheck.Id})
		require.NoError(t, err)
		assert.Equal(t, int32(8080), aws.ToInt32(got.HealthCheck.HealthCheckConfig.Port), "a refused update changes nothing")
	})
	t.Run("an update is validated like a creation and can reset elements", func(t *testing.T) {
		s := New(Options{})
		defer s.Close()
		c := client(s)
		out, err := c.CreateHealthCheck(ctx, httpCheck("ref-1", "198.51.99.10", 80))
		require.NoError(t, err)
		_, err = c.UpdateHealthCheck(ctx, &r53.UpdateHealthCheckInput{HealthCheckId: out.HealthCheck.Id, IPAddress: aws.String("192.168.1.1")})
		assert.Equal(t, "InvalidInput", apiCode(t, err), "a private address is refused on update too")
		_, err = c.UpdateHealthCheck(ctx, &r53.UpdateHealthCheckInput{HealthCheckId: out.HealthCheck.Id, IPAddress: aws.String("")})
		assert.ErrorContains(t, err, "remove its IPAddress")
		up, err := c.UpdateHealthCheck(ctx, &r53.UpdateHealthCheckInput{HealthCheckId: out.HealthCheck.Id, ResetElements: []types.ResettableElementName{types.ResettableElementNameResourcePath}})
		require.NoError(t, err)
		assert.Nil(t, up.HealthCheck.HealthCheckConfig.ResourcePath)
	})
	t.Run("the account's quota is TooManyHealthChecks, seeded checks counted", func(t *testing.T) {
		s := New(Options{MaxHealthChecks: 2})
		defer s.Close()
		c := client(s)
		s.PutHealthCheck(HealthCheck{Config: HealthCheckConfig{Type: "TCP", IPAddress: "198.51.99.1", Port: 22}})
		_, err := c.CreateHealthCheck(ctx, httpCheck("ref-1", "198.51.99.10", 80))
		require.NoError(t, err)
		_, err = c.CreateHealthCheck(ctx, httpCheck("ref-2", "198.51.99.11", 80))
		var tooMany *types.TooManyHealthChecks
		require.ErrorAs(t, err, &tooMany)
		_, err = c.CreateHealthCheck(ctx, httpCheck("ref-1", "198.51.99.10", 80))
		require.NoError(t, err, "a replay creates nothing and is answered at the quota too")
	})
	t.Run("an unknown check is NoSuchHealthCheck", func(t *testing.T) {
		s := New(Options{})
		defer s.Close()
		_, err := client(s).GetHealthCheck(ctx, &r53.GetHealthCheckInput{HealthCheckId: aws.String("nope")})
		var nsh *types.NoSuchHealthCheck
		require.ErrorAs(t, err, &nsh)
	})
}

func TestListHealthChecksPages(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	c := client(s)
	want := map[string]bool{}
	for i := range 5 {
		out, err := c.CreateHealthCheck(ctx, httpCheck(fmt.Sprintf("ref-%d", i), "198.51.99.10", int32(8000+i)))
		require.NoError(t, err)
		want[aws.ToString(out.HealthCheck.Id)] = true
	}
	got := map[string]bool{}
	pages := 0
	p := r53.NewListHealthChecksPaginator(c, &r53.ListHealthChecksInput{MaxItems: aws.Int32(2)})
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		require.NoError(t, err)
		pages++
		assert.LessOrEqual(t, len(out.HealthChecks), 2)
		for _, h := range out.HealthChecks {
			assert.False(t, got[aws.ToString(h.Id)], "listed twice")
			got[aws.ToString(h.Id)] = true
			assert.Equal(t, types.HealthCheckTypeHttp, h.HealthCheckConfig.Type)
		}
	}
	assert.Equal(t, 3, pages)
	assert.Equal(t, want, got)
	out, err := c.ListHealthChecks(ctx, &r53.ListHealthChecksInput{MaxItems: aws.Int32(5000)})
	require.NoError(t, err)
	assert.Equal(t, int32(1000), aws.ToInt32(out.MaxItems), "Route 53 returns at most 1,000 a page")
}

func TestHealthCheckStatusReportsTheLastResult(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	c := client(s)
	out, err := c.CreateHealthCheck(ctx, httpCheck("ref", "198.51.99.10", 80))
	require.NoError(t, err)
	st, err := c.GetHealthCheckStatus(ctx, &r53.GetHealthCheckStatusInput{HealthCheckId: out.HealthCheck.Id})
	require.NoError(t, err)
	require.Len(t, st.HealthCheckObservations, 8, "one per checker region")
	assert.True(t, strings.HasPrefix(aws.ToString(st.HealthCheckObservations[0].StatusReport.Status), "Unknown"))
	s.SetHealth(aws.ToString(out.HealthCheck.Id), false)
	st, err = c.GetHealthCheckStatus(ctx, &r53.GetHealthCheckStatusInput{HealthCheckId: out.HealthCheck.Id})
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(aws.ToString(st.HealthCheckObservations[0].StatusReport.Status), "Failure"))
	assert.NotNil(t, st.HealthCheckObservations[0].StatusReport.CheckedTime)
	assert.Equal(t, types.HealthCheckRegionUsEast1, st.HealthCheckObservations[0].Region)
}

func TestTags(t *testing.T) {
	tags := func(n int, prefix string) []types.Tag {
		var out []types.Tag
		for i := range n {
			out = append(out, types.Tag{Key: aws.String(fmt.Sprintf("%s%d", prefix, i)), Value: aws.String("v")})
		}
		return out
	}
	t.Run("tags are added, listed and removed", func(t *testing.T) {
		s := New(Options{})
		defer s.Close()
		c := client(s)
		out, err := c.CreateHealthCheck(ctx, httpCheck("ref", "198.51.99.10", 80))
		require.NoError(t, err)
		id := out.HealthCheck.Id
		_, err = c.ChangeTagsForResource(ctx, &r53.ChangeTagsForResourceInput{ResourceType: types.TagResourceTypeHealthcheck, ResourceId: id,
			AddTags: []types.Tag{{Key: aws.String("meridian-owner"), Value: aws.String("o1")}, {Key: aws.String("Name"), Value: aws.String("web")}}})
		require.NoError(t, err)
		_, err = c.ChangeTagsForResource(ctx, &r53.ChangeTagsForResourceInput{ResourceType: types.TagResourceTypeHealthcheck, ResourceId: id, RemoveTagKeys: []string{"Name"}})
		require.NoError(t, err)
		got, err := c.ListTagsForResource(ctx, &r53.ListTagsForResourceInput{ResourceType: types.TagResourceTypeHealthcheck, ResourceId: id})
		require.NoError(t, err)
		require.Len(t, got.ResourceTagSet.Tags, 1)
		assert.Equal(t, "meridian-owner", aws.ToString(got.ResourceTagSet.Tags[0].Key))
		assert.Equal(t, map[string]string{"meridian-owner": "o1"}, s.HealthChecks()[0].Tags)
	})
	t.Run("a health check has at most 10 tags", func(t *testing.T) {
		s := New(Options{})
		defer s.Close()
		c := client(s)
		out, err := c.CreateHealthCheck(ctx, httpCheck("ref", "198.51.99.10", 80))
		require.NoError(t, err)
		_, err = c.ChangeTagsForResource(ctx, &r53.ChangeTagsForResourceInput{ResourceType: types.TagResourceTypeHealthcheck, ResourceId: out.HealthCheck.Id, AddTags: tags(10, "a")})
		require.NoError(t, err)
		_, err = c.ChangeTagsForResource(ctx, &r53.ChangeTagsForResourceInput{ResourceType: types.TagResourceTypeHealthcheck, ResourceId: out.HealthCheck.Id, AddTags: tags(1, "b")})
		assert.Equal(t, "InvalidInput", apiCode(t, err))
		assert.ErrorContains(t, err, "at most 10")
		assert.Len(t, s.HealthChecks()[0].Tags, 10, "a refused change changes nothing")
		_, err = c.ChangeTagsForResource(ctx, &r53.ChangeTagsForResourceInput{ResourceType: types.TagResourceTypeHealthcheck, ResourceId: out.HealthCheck.Id, AddTags: tags(1, "b"), RemoveTagKeys: []string{"a0"}})
		require.NoError(t, err, "a removal in the same request makes room")
	})
	t.Run("tags of several checks come in one call, foreign ones included", func(t *testing.T) {
		s := New(Options{})
		defer s.Close()
		c := client(s)
		foreign := s.PutHealthCheck(HealthCheck{Config: HealthCheckConfig{Type: "TCP", IPAddress: "198.51.99.1", Port: 22}, Tags: map[string]string{"owner": "someone-else"}})
		out, err := c.CreateHealthCheck(ctx, httpCheck("ref", "198.51.99.10", 80))
		require.NoError(t, err)
		got, err := c.ListTagsForResources(ctx, &r53.ListTagsForResourcesInput{ResourceType: types.TagResourceTypeHealthcheck, ResourceIds: []string{foreign, aws.ToString(out.HealthCheck.Id)}})
		require.NoError(t, err)
		require.Len(t, got.ResourceTagSets, 2)
		assert.Equal(t, foreign, aws.ToString(got.ResourceTagSets[0].ResourceId))
		assert.Equal(t, "someone-else", aws.ToString(got.ResourceTagSets[0].Tags[0].Value))
		assert.Empty(t, got.ResourceTagSets[1].Tags)
		_, err = c.ListTagsForResources(ctx, &r53.ListTagsForResourcesInput{ResourceType: types.TagResourceTypeHealthcheck, ResourceIds: []string{foreign, "nope"}})
		assert.Equal(t, "NoSuchHealthCheck", apiCode(t, err))
	})
	t.Run("hosted zones carry tags too", func(t *testing.T) {
		s := New(Options{})
		defer s.Close()
		c := client(s)
		zone := s.AddZone("example.com")
		_, err := c.ChangeTagsForResource(ctx, &r53.ChangeTagsForResourceInput{ResourceType: types.TagResourceTypeHostedzone, ResourceId: aws.String(zone), AddTags: tags(1, "z")})
		require.NoError(t, err)
		got, err := c.ListTagsForResource(ctx, &r53.ListTagsForResourceInput{ResourceType: types.TagResourceTypeHostedzone, ResourceId: aws.String(zone)})
		require.NoError(t, err)
		assert.Len(t, got.ResourceTagSet.Tags, 1)
	})
}

func TestRecordSetsReferenceExistingHealthChecks(t *testing.T) {
	s := New(Options{})
	defer s.Close()
	c := client(s)
	zone := s.AddZone("example.com")
	rs := weighted(set("w.example.com.", "A", 60, "198.51.99.10"), "one", 1)
	rs.HealthCheckId = aws.String("00000000-0000-4000-8000-000000000000")
	_, err := c.ChangeResourceRecordSets(ctx, &r53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(zone), ChangeBatch: &types.ChangeBatch{Changes: []types.Change{change(create, rs)}}})
	var icb *types.InvalidChangeBatch
	require.ErrorAs(t, err, &icb)
	assert.Contains(t, icb.ErrorMessage(), "health check '00000000-0000-4000-8000-000000000000' of RRSet [name='w.example.com.', type='A', set-identifier='one'] does not exist")

	out, err := c.CreateHealthCheck(ctx, httpCheck("ref", "198.51.99.10", 80))
	require.NoError(t, err)
	rs.HealthCheckId = out.HealthCheck.Id
	_, err = c.ChangeResourceRecordSets(ctx, &r53.ChangeResourceRecordSetsInput{HostedZoneId: aws.String(zone), ChangeBatch: &types.ChangeBatch{Changes: []types.Change{change(create, rs)}}})
	require.NoError(t, err)
	listed, err := c.ListResourceRecordSets(ctx, &r53.ListResourceRecordSetsInput{HostedZoneId: aws.String(zone), StartRecordName: aws.String("w.example.com."), StartRecordType: types.RRTypeA})
	require.NoError(t, err)
	assert.Equal(t, aws.ToString(out.HealthCheck.Id), aws.ToString(listed.ResourceRecordSets[0].HealthCheckId))
}
