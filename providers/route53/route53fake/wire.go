package route53fake

import (
	"encoding/xml"
	"fmt"
	"net/http"
	"strings"
)

// The XML shapes below follow the Route 53 API reference (2013-04-01) and
// the element names the SDK's serializers and deserializers use.

type xmlRRSet struct {
	Name             string          `xml:"Name"`
	Type             string          `xml:"Type"`
	SetIdentifier    string          `xml:"SetIdentifier,omitempty"`
	Weight           *int64          `xml:"Weight,omitempty"`
	Region           string          `xml:"Region,omitempty"`
	GeoLocation      *xmlGeo         `xml:"GeoLocation,omitempty"`
	Failover         string          `xml:"Failover,omitempty"`
	MultiValueAnswer *bool           `xml:"MultiValueAnswer,omitempty"`
	TTL              *int64          `xml:"TTL,omitempty"`
	ResourceRecords  *xmlRRs         `xml:"ResourceRecords,omitempty"`
	AliasTarget      *xmlAlias       `xml:"AliasTarget,omitempty"`
	HealthCheckID    string          `xml:"HealthCheckId,omitempty"`
	TrafficPolicy    string          `xml:"TrafficPolicyInstanceId,omitempty"`
	CidrRouting      *xmlCidrRouting `xml:"CidrRoutingConfig,omitempty"`
	GeoProximity     *xmlNotEmpty    `xml:"GeoProximityLocation,omitempty"`
}

// xmlNotEmpty stands for elements the fake does not support; their presence
// is refused with InvalidInput.
type xmlNotEmpty struct {
	Inner string `xml:",innerxml"`
}

type xmlRRs struct {
	RR []xmlRR `xml:"ResourceRecord"`
}

type xmlRR struct {
	Value string `xml:"Value"`
}

type xmlGeo struct {
	ContinentCode   string `xml:"ContinentCode,omitempty"`
	CountryCode     string `xml:"CountryCode,omitempty"`
	SubdivisionCode string `xml:"SubdivisionCode,omitempty"`
}

type xmlAlias struct {
	HostedZoneID         string `xml:"HostedZoneId"`
	DNSName              string `xml:"DNSName"`
	EvaluateTargetHealth bool   `xml:"EvaluateTargetHealth"`
}

type xmlChangeRequest struct {
	XMLName     xml.Name `xml:"ChangeResourceRecordSetsRequest"`
	ChangeBatch struct {
		Comment string      `xml:"Comment"`
		Changes []xmlChange `xml:"Changes>Change"`
	} `xml:"ChangeBatch"`
}

type xmlChange struct {
	Action string   `xml:"Action"`
	Set    xmlRRSet `xml:"ResourceRecordSet"`
}

type xmlChangeInfo struct {
	ID          string `xml:"Id"`
	Status      string `xml:"Status"`
	SubmittedAt string `xml:"SubmittedAt"`
	Comment     string `xml:"Comment,omitempty"`
}

type xmlChangeResponse struct {
	XMLName    xml.Name      `xml:"https://route53.amazonaws.com/doc/2013-04-01/ ChangeResourceRecordSetsResponse"`
	ChangeInfo xmlChangeInfo `xml:"ChangeInfo"`
}

type xmlGetChangeResponse struct {
	XMLName    xml.Name      `xml:"https://route53.amazonaws.com/doc/2013-04-01/ GetChangeResponse"`
	ChangeInfo xmlChangeInfo `xml:"ChangeInfo"`
}

type xmlListResponse struct {
	XMLName              xml.Name   `xml:"https://route53.amazonaws.com/doc/2013-04-01/ ListResourceRecordSetsResponse"`
	Sets                 []xmlRRSet `xml:"ResourceRecordSets>ResourceRecordSet"`
	IsTruncated          bool       `xml:"IsTruncated"`
	NextRecordName       string     `xml:"NextRecordName,omitempty"`
	NextRecordType       string     `xml:"NextRecordType,omitempty"`
	NextRecordIdentifier string     `xml:"NextRecordIdentifier,omitempty"`
	MaxItems             int        `xml:"MaxItems"`
}

type xmlHostedZone struct {
	ID              string `xml:"Id"`
	Name            string `xml:"Name"`
	CallerReference string `xml:"CallerReference"`
	Config          struct {
		PrivateZone bool `xml:"PrivateZone"`
	} `xml:"Config"`
	ResourceRecordSetCount int `xml:"ResourceRecordSetCount"`
}

type xmlZonesByNameResponse struct {
	XMLName          xml.Name        `xml:"https://route53.amazonaws.com/doc/2013-04-01/ ListHostedZonesByNameResponse"`
	HostedZones      []xmlHostedZone `xml:"HostedZones>HostedZone"`
	DNSName          string          `xml:"DNSName,omitempty"`
	IsTruncated      bool            `xml:"IsTruncated"`
	NextDNSName      string          `xml:"NextDNSName,omitempty"`
	NextHostedZoneID string          `xml:"NextHostedZoneId,omitempty"`
	MaxItems         int             `xml:"MaxItems"`
}

type xmlErrorResponse struct {
	XMLName xml.Name `xml:"https://route53.amazonaws.com/doc/2013-04-01/ ErrorResponse"`
	Error   struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	} `xml:"Error"`
	RequestID string `xml:"RequestId"`
}

// apiError is an error Route 53 answers with.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func invalidChangeBatch(msgs []string) *apiError {
	// Route 53 lists every failing change in one message, in brackets.
	return &apiError{http.StatusBadRequest, "InvalidChangeBatch", "[" + strings.Join(msgs, ", ") + "]"}
}

func invalidInput(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "InvalidInput", fmt.Sprintf(format, args...)}
}

func writeXML(w http.ResponseWriter, reqID string, status int, v any) {
	b, err := xml.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.Header().Set("X-Amzn-Requestid", reqID)
	w.WriteHeader(status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, reqID string, e *apiError) {
	var r xmlErrorResponse
	r.Error.Type = "Sender"
	if e.status >= 500 {
		r.Error.Type = "Receiver"
	}
	r.Error.Code, r.Error.Message, r.RequestID = e.code, e.message, reqID
	writeXML(w, reqID, e.status, r)
}

func (s RecordSet) toXML() xmlRRSet {
	x := xmlRRSet{
		Name: escapeName(s.Name), Type: s.Type, SetIdentifier: s.SetID, Weight: s.Weight,
		Region: s.Region, Failover: s.Failover, MultiValueAnswer: s.MultiValue, HealthCheckID: s.HealthCheckID,
	}
	if s.Alias == nil {
		ttl := s.TTL
		x.TTL = &ttl
		x.ResourceRecords = &xmlRRs{}
		for _, v := range s.Values {
			x.ResourceRecords.RR = append(x.ResourceRecords.RR, xmlRR{Value: v})
		}
	} else {
		x.AliasTarget = &xmlAlias{HostedZoneID: s.Alias.HostedZoneID, DNSName: s.Alias.DNSName, EvaluateTargetHealth: s.Alias.EvaluateTargetHealth}
	}
	if s.Geo != nil {
		x.GeoLocation = &xmlGeo{ContinentCode: s.Geo.Continent, CountryCode: s.Geo.Country, SubdivisionCode: s.Geo.Subdivision}
	}
	if s.Cidr != nil {
		x.CidrRouting = &xmlCidrRouting{CollectionID: s.Cidr.CollectionID, LocationName: s.Cidr.LocationName}
	}
	return x
}

func (x xmlRRSet) toSet() RecordSet {
	s := RecordSet{
		Name: canonicalName(x.Name), Type: x.Type, SetID: x.SetIdentifier, Weight: x.Weight, Region: x.Region,
		Failover: x.Failover, MultiValue: x.MultiValueAnswer, HealthCheckID: x.HealthCheckID,
	}
	if x.TTL != nil {
		s.TTL = *x.TTL
	}
	if x.ResourceRecords != nil {
		for _, rr := range x.ResourceRecords.RR {
			s.Values = append(s.Values, rr.Value)
		}
	}
	if x.GeoLocation != nil {
		s.Geo = &GeoLocation{Continent: x.GeoLocation.ContinentCode, Country: x.GeoLocation.CountryCode, Subdivision: x.GeoLocation.SubdivisionCode}
	}
	if x.AliasTarget != nil {
		s.Alias = &AliasTarget{HostedZoneID: x.AliasTarget.HostedZoneID, DNSName: canonicalName(x.AliasTarget.DNSName), EvaluateTargetHealth: x.AliasTarget.EvaluateTargetHealth}
	}
	if x.CidrRouting != nil {
		s.Cidr = &CidrRoutingConfig{CollectionID: x.CidrRouting.CollectionID, LocationName: x.CidrRouting.LocationName}
	}
	return s
}
