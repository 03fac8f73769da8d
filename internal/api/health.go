package api

import "github.com/meridian-gslb/meridian/internal/report"

// The bodies of GET /v1/health and of the timeline are internal/report's
// types: the pipeline's followers produce them without importing the API.
type (
	HealthReport    = report.HealthReport
	UntrustedMember = report.UntrustedMember
	EndpointHealth  = report.EndpointHealth
	ClusterHealth   = report.ClusterHealth
	VoteInfo        = report.VoteInfo
	ProberHealth    = report.ProberHealth
	ChangeEvent     = report.ChangeEvent
)
