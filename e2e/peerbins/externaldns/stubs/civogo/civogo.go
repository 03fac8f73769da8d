// Package civogo is a compile-only stand-in (see go.mod): the types that
// ExternalDNS's Civo provider names, and a client whose every call fails.
package civogo

import "errors"

var errStub = errors.New("civogo: not built in (compile-only stand-in, the module proxy does not serve github.com/civo/civogo)")

// DNSRecordType is a record type of the Civo DNS API.
type DNSRecordType string

// The record types the provider converts to.
const (
	DNSRecordTypeA     DNSRecordType = "A"
	DNSRecordTypeCName DNSRecordType = "CNAME"
	DNSRecordTypeMX    DNSRecordType = "MX"
	DNSRecordTypeSRV   DNSRecordType = "SRV"
	DNSRecordTypeTXT   DNSRecordType = "TXT"
)

// DNSDomain is a zone.
type DNSDomain struct {
	ID        string
	AccountID string
	Name      string
}

// DNSRecord is a record of a zone.
type DNSRecord struct {
	ID          string
	AccountID   string
	DNSDomainID string
	Name        string
	Value       string
	Type        DNSRecordType
	Priority    int
	TTL         int
}

// DNSRecordConfig is a record to create or update.
type DNSRecordConfig struct {
	Type     DNSRecordType
	Name     string
	Value    string
	Priority int
	TTL      int
}

// Component names the caller in the user agent.
type Component struct {
	Name    string
	Version string
	ID      string
}

// SimpleResponse is the API's answer to a delete.
type SimpleResponse struct {
	ID     string
	Result string
}

// Client fails every call.
type Client struct{}

// NewClient fails: the provider is not built in.
func NewClient(_, _ string) (*Client, error) { return nil, errStub }

// SetUserAgent does nothing.
func (c *Client) SetUserAgent(_ *Component) {}

// ListDNSDomains fails.
func (c *Client) ListDNSDomains() ([]DNSDomain, error) { return nil, errStub }

// ListDNSRecords fails.
func (c *Client) ListDNSRecords(_ string) ([]DNSRecord, error) { return nil, errStub }

// CreateDNSRecord fails.
func (c *Client) CreateDNSRecord(_ string, _ *DNSRecordConfig) (*DNSRecord, error) {
	return nil, errStub
}

// UpdateDNSRecord fails.
func (c *Client) UpdateDNSRecord(_ *DNSRecord, _ *DNSRecordConfig) (*DNSRecord, error) {
	return nil, errStub
}

// DeleteDNSRecord fails.
func (c *Client) DeleteDNSRecord(_ *DNSRecord) (*SimpleResponse, error) { return nil, errStub }
