package route53fake

import "encoding/xml"

// XML shapes of the health check, tag and CIDR collection operations, with
// the element names of the SDK's serializers and deserializers
// (aws-sdk-go-v2/service/route53, restxml). Lists the SDK writes with the
// default member name use <member>; the others name their member.

const ns = "https://route53.amazonaws.com/doc/2013-04-01/"

type xmlHealthCheckConfig struct {
	IPAddress                    string       `xml:"IPAddress,omitempty"`
	Port                         *int32       `xml:"Port,omitempty"`
	Type                         string       `xml:"Type"`
	ResourcePath                 *string      `xml:"ResourcePath,omitempty"`
	FullyQualifiedDomainName     *string      `xml:"FullyQualifiedDomainName,omitempty"`
	SearchString                 *string      `xml:"SearchString,omitempty"`
	RequestInterval              *int32       `xml:"RequestInterval,omitempty"`
	FailureThreshold             *int32       `xml:"FailureThreshold,omitempty"`
	MeasureLatency               *bool        `xml:"MeasureLatency,omitempty"`
	Inverted                     *bool        `xml:"Inverted,omitempty"`
	Disabled                     *bool        `xml:"Disabled,omitempty"`
	HealthThreshold              *int32       `xml:"HealthThreshold,omitempty"`
	ChildHealthChecks            *xmlChildren `xml:"ChildHealthChecks,omitempty"`
	EnableSNI                    *bool        `xml:"EnableSNI,omitempty"`
	Regions                      *xmlRegions  `xml:"Regions,omitempty"`
	AlarmIdentifier              *xmlNotEmpty `xml:"AlarmIdentifier,omitempty"`
	InsufficientDataHealthStatus string       `xml:"InsufficientDataHealthStatus,omitempty"`
	RoutingControlArn            string       `xml:"RoutingControlArn,omitempty"`
}

type xmlChildren struct {
	IDs []string `xml:"ChildHealthCheck"`
}

type xmlRegions struct {
	Regions []string `xml:"Region"`
}

type xmlHealthCheck struct {
	ID                 string               `xml:"Id"`
	CallerReference    string               `xml:"CallerReference"`
	HealthCheckConfig  xmlHealthCheckConfig `xml:"HealthCheckConfig"`
	HealthCheckVersion int64                `xml:"HealthCheckVersion"`
}

type xmlCreateHealthCheckRequest struct {
	XMLName           xml.Name              `xml:"CreateHealthCheckRequest"`
	CallerReference   *string               `xml:"CallerReference"`
	HealthCheckConfig *xmlHealthCheckConfig `xml:"HealthCheckConfig"`
}

type xmlUpdateHealthCheckRequest struct {
	XMLName                      xml.Name     `xml:"UpdateHealthCheckRequest"`
	HealthCheckVersion           *int64       `xml:"HealthCheckVersion"`
	IPAddress                    *string      `xml:"IPAddress"`
	Port                         *int32       `xml:"Port"`
	ResourcePath                 *string      `xml:"ResourcePath"`
	FullyQualifiedDomainName     *string      `xml:"FullyQualifiedDomainName"`
	SearchString                 *string      `xml:"SearchString"`
	FailureThreshold             *int32       `xml:"FailureThreshold"`
	Inverted                     *bool        `xml:"Inverted"`
	Disabled                     *bool        `xml:"Disabled"`
	HealthThreshold              *int32       `xml:"HealthThreshold"`
	ChildHealthChecks            *xmlChildren `xml:"ChildHealthChecks"`
	EnableSNI                    *bool        `xml:"EnableSNI"`
	Regions                      *xmlRegions  `xml:"Regions"`
	AlarmIdentifier              *xmlNotEmpty `xml:"AlarmIdentifier"`
	InsufficientDataHealthStatus string       `xml:"InsufficientDataHealthStatus"`
	ResetElements                *struct {
		Names []string `xml:"ResettableElementName"`
	} `xml:"ResetElements"`
}

type xmlHealthCheckResponse struct {
	XMLName     xml.Name
	HealthCheck xmlHealthCheck `xml:"HealthCheck"`
}

type xmlListHealthChecksResponse struct {
	XMLName      xml.Name         `xml:"https://route53.amazonaws.com/doc/2013-04-01/ ListHealthChecksResponse"`
	HealthChecks []xmlHealthCheck `xml:"HealthChecks>HealthCheck"`
	Marker       string           `xml:"Marker"`
	IsTruncated  bool             `xml:"IsTruncated"`
	NextMarker   string           `xml:"NextMarker,omitempty"`
	MaxItems     int              `xml:"MaxItems"`
}

type xmlEmptyResponse struct {
	XMLName xml.Name
}

type xmlObservation struct {
	Region       string `xml:"Region"`
	IPAddress    string `xml:"IPAddress"`
	StatusReport struct {
		Status      string `xml:"Status"`
		CheckedTime string `xml:"CheckedTime,omitempty"`
	} `xml:"StatusReport"`
}

type xmlHealthCheckStatusResponse struct {
	XMLName      xml.Name         `xml:"https://route53.amazonaws.com/doc/2013-04-01/ GetHealthCheckStatusResponse"`
	Observations []xmlObservation `xml:"HealthCheckObservations>HealthCheckObservation"`
}

type xmlTag struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

type xmlChangeTagsRequest struct {
	XMLName xml.Name `xml:"ChangeTagsForResourceRequest"`
	AddTags *struct {
		Tags []xmlTag `xml:"Tag"`
	} `xml:"AddTags"`
	RemoveTagKeys *struct {
		Keys []string `xml:"Key"`
	} `xml:"RemoveTagKeys"`
}

type xmlResourceTagSet struct {
	ResourceType string   `xml:"ResourceType"`
	ResourceID   string   `xml:"ResourceId"`
	Tags         []xmlTag `xml:"Tags>Tag"`
}

type xmlListTagsResponse struct {
	XMLName xml.Name          `xml:"https://route53.amazonaws.com/doc/2013-04-01/ ListTagsForResourceResponse"`
	Set     xmlResourceTagSet `xml:"ResourceTagSet"`
}

type xmlListTagsForResourcesRequest struct {
	XMLName     xml.Name `xml:"ListTagsForResourcesRequest"`
	ResourceIDs *struct {
		IDs []string `xml:"ResourceId"`
	} `xml:"ResourceIds"`
}

type xmlListTagsForResourcesResponse struct {
	XMLName xml.Name            `xml:"https://route53.amazonaws.com/doc/2013-04-01/ ListTagsForResourcesResponse"`
	Sets    []xmlResourceTagSet `xml:"ResourceTagSets>ResourceTagSet"`
}

type xmlCidrRouting struct {
	CollectionID string `xml:"CollectionId"`
	LocationName string `xml:"LocationName"`
}

type xmlCollection struct {
	Arn     string `xml:"Arn"`
	ID      string `xml:"Id"`
	Name    string `xml:"Name"`
	Version int64  `xml:"Version"`
}

type xmlCreateCollectionRequest struct {
	XMLName         xml.Name `xml:"CreateCidrCollectionRequest"`
	Name            *string  `xml:"Name"`
	CallerReference *string  `xml:"CallerReference"`
}

type xmlCreateCollectionResponse struct {
	XMLName    xml.Name      `xml:"https://route53.amazonaws.com/doc/2013-04-01/ CreateCidrCollectionResponse"`
	Collection xmlCollection `xml:"Collection"`
}

type xmlListCollectionsResponse struct {
	XMLName     xml.Name        `xml:"https://route53.amazonaws.com/doc/2013-04-01/ ListCidrCollectionsResponse"`
	Collections []xmlCollection `xml:"CidrCollections>member"`
	NextToken   string          `xml:"NextToken,omitempty"`
}

type xmlCidrChange struct {
	LocationName *string `xml:"LocationName"`
	Action       string  `xml:"Action"`
	CidrList     *struct {
		Cidrs []string `xml:"Cidr"`
	} `xml:"CidrList"`
}

type xmlChangeCollectionRequest struct {
	XMLName           xml.Name `xml:"ChangeCidrCollectionRequest"`
	CollectionVersion *int64   `xml:"CollectionVersion"`
	Changes           *struct {
		Changes []xmlCidrChange `xml:"member"`
	} `xml:"Changes"`
}

type xmlChangeCollectionResponse struct {
	XMLName xml.Name `xml:"https://route53.amazonaws.com/doc/2013-04-01/ ChangeCidrCollectionResponse"`
	ID      string   `xml:"Id"`
}

type xmlCidrBlock struct {
	CidrBlock    string `xml:"CidrBlock"`
	LocationName string `xml:"LocationName"`
}

type xmlListBlocksResponse struct {
	XMLName   xml.Name       `xml:"https://route53.amazonaws.com/doc/2013-04-01/ ListCidrBlocksResponse"`
	Blocks    []xmlCidrBlock `xml:"CidrBlocks>member"`
	NextToken string         `xml:"NextToken,omitempty"`
}

type xmlLocation struct {
	LocationName string `xml:"LocationName"`
}

type xmlListLocationsResponse struct {
	XMLName   xml.Name      `xml:"https://route53.amazonaws.com/doc/2013-04-01/ ListCidrLocationsResponse"`
	Locations []xmlLocation `xml:"CidrLocations>member"`
	NextToken string        `xml:"NextToken,omitempty"`
}

// created is a handler's answer to a Create call: 201 Created with a
// Location header, as Route 53 answers CreateHealthCheck and
// CreateCidrCollection.
type created struct {
	body     any
	location string
}

// response names a generic response root element in Route 53's namespace.
func response(op string) xml.Name { return xml.Name{Space: ns, Local: op + "Response"} }
