package route53

import (
	"context"

	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
)

// API is the part of the Route 53 API the adapter uses: these four calls and
// nothing else. *route53.Client satisfies it; tests point a real client at
// route53fake.
type API interface {
	ListHostedZonesByName(ctx context.Context, in *r53.ListHostedZonesByNameInput, optFns ...func(*r53.Options)) (*r53.ListHostedZonesByNameOutput, error)
	ListResourceRecordSets(ctx context.Context, in *r53.ListResourceRecordSetsInput, optFns ...func(*r53.Options)) (*r53.ListResourceRecordSetsOutput, error)
	ChangeResourceRecordSets(ctx context.Context, in *r53.ChangeResourceRecordSetsInput, optFns ...func(*r53.Options)) (*r53.ChangeResourceRecordSetsOutput, error)
	GetChange(ctx context.Context, in *r53.GetChangeInput, optFns ...func(*r53.Options)) (*r53.GetChangeOutput, error)
}

var _ API = (*r53.Client)(nil)

// Operation names, as in the api_calls metric.
const (
	opListZones = "ListHostedZonesByName"
	opList      = "ListResourceRecordSets"
	opChange    = "ChangeResourceRecordSets"
	opGetChange = "GetChange"
)
