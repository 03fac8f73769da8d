package route53

import (
	"context"

	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
)

// API is the part of the Route 53 API the adapter uses: these calls and
// nothing else (record sets; health checks and their tags, with
// health_checks: backstop; CIDR collections, with geo.networks).
// *route53.Client satisfies it; tests point a real client at route53fake.
type API interface {
	ListHostedZonesByName(ctx context.Context, in *r53.ListHostedZonesByNameInput, optFns ...func(*r53.Options)) (*r53.ListHostedZonesByNameOutput, error)
	ListResourceRecordSets(ctx context.Context, in *r53.ListResourceRecordSetsInput, optFns ...func(*r53.Options)) (*r53.ListResourceRecordSetsOutput, error)
	ChangeResourceRecordSets(ctx context.Context, in *r53.ChangeResourceRecordSetsInput, optFns ...func(*r53.Options)) (*r53.ChangeResourceRecordSetsOutput, error)
	GetChange(ctx context.Context, in *r53.GetChangeInput, optFns ...func(*r53.Options)) (*r53.GetChangeOutput, error)

	ListHealthChecks(ctx context.Context, in *r53.ListHealthChecksInput, optFns ...func(*r53.Options)) (*r53.ListHealthChecksOutput, error)
	CreateHealthCheck(ctx context.Context, in *r53.CreateHealthCheckInput, optFns ...func(*r53.Options)) (*r53.CreateHealthCheckOutput, error)
	UpdateHealthCheck(ctx context.Context, in *r53.UpdateHealthCheckInput, optFns ...func(*r53.Options)) (*r53.UpdateHealthCheckOutput, error)
	DeleteHealthCheck(ctx context.Context, in *r53.DeleteHealthCheckInput, optFns ...func(*r53.Options)) (*r53.DeleteHealthCheckOutput, error)
	ListTagsForResources(ctx context.Context, in *r53.ListTagsForResourcesInput, optFns ...func(*r53.Options)) (*r53.ListTagsForResourcesOutput, error)
	ChangeTagsForResource(ctx context.Context, in *r53.ChangeTagsForResourceInput, optFns ...func(*r53.Options)) (*r53.ChangeTagsForResourceOutput, error)

	ListCidrCollections(ctx context.Context, in *r53.ListCidrCollectionsInput, optFns ...func(*r53.Options)) (*r53.ListCidrCollectionsOutput, error)
	CreateCidrCollection(ctx context.Context, in *r53.CreateCidrCollectionInput, optFns ...func(*r53.Options)) (*r53.CreateCidrCollectionOutput, error)
	ListCidrBlocks(ctx context.Context, in *r53.ListCidrBlocksInput, optFns ...func(*r53.Options)) (*r53.ListCidrBlocksOutput, error)
	ChangeCidrCollection(ctx context.Context, in *r53.ChangeCidrCollectionInput, optFns ...func(*r53.Options)) (*r53.ChangeCidrCollectionOutput, error)
	DeleteCidrCollection(ctx context.Context, in *r53.DeleteCidrCollectionInput, optFns ...func(*r53.Options)) (*r53.DeleteCidrCollectionOutput, error)
}

var _ API = (*r53.Client)(nil)

// Operation names, as in the api_calls metric.
const (
	opListZones = "ListHostedZonesByName"
	opList      = "ListResourceRecordSets"
	opChange    = "ChangeResourceRecordSets"
	opGetChange = "GetChange"

	opListChecks  = "ListHealthChecks"
	opCreateCheck = "CreateHealthCheck"
	opUpdateCheck = "UpdateHealthCheck"
	opDeleteCheck = "DeleteHealthCheck"
	opListTags    = "ListTagsForResources"
	opChangeTags  = "ChangeTagsForResource"
	opListColls   = "ListCidrCollections"
	opCreateColl  = "CreateCidrCollection"
	opListBlocks  = "ListCidrBlocks"
	opChangeColl  = "ChangeCidrCollection"
	opDeleteColl  = "DeleteCidrCollection"
)
