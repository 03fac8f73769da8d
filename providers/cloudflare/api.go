package cloudflare

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/cloudflare/cloudflare-go/v6/dns"
	"github.com/cloudflare/cloudflare-go/v6/load_balancers"
	"github.com/cloudflare/cloudflare-go/v6/option"
	"github.com/cloudflare/cloudflare-go/v6/zones"
)

// API is the part of the Cloudflare v4 API the adapter uses: the zone
// lookup, the DNS record calls and the Load Balancing calls (LBAPI). Each
// method is one HTTP request, so the
// Provider can count, budget and retry every request itself. Implementations
// must be safe for concurrent use.
type API interface {
	// ZoneID looks a zone up by name (no trailing dot); it fails when the
	// account has no such zone.
	ZoneID(ctx context.Context, name string) (string, error)
	// ListDNSRecords returns one page (from 1) of the zone's records and the
	// number of pages (0 when the API did not say).
	ListDNSRecords(ctx context.Context, zoneID string, page, perPage int) ([]DNSRecord, int, error)
	// CreateDNSRecord creates r (its ID is ignored) and returns it as stored.
	CreateDNSRecord(ctx context.Context, zoneID string, r DNSRecord) (DNSRecord, error)
	// EditDNSRecord changes the record r.ID in place (PATCH): content, TTL
	// and proxied, without a moment where the name has no record.
	EditDNSRecord(ctx context.Context, zoneID string, r DNSRecord) (DNSRecord, error)
	// DeleteDNSRecord deletes one record.
	DeleteDNSRecord(ctx context.Context, zoneID, id string) error
	LBAPI
}

// DNSRecord is one Cloudflare DNS record: one value of a record set.
type DNSRecord struct {
	ID      string
	Name    string // FQDN without the trailing dot, as Cloudflare writes it
	Type    string
	Content string // as Cloudflare holds it: TXT quoted, CNAME target without the trailing dot
	TTL     int    // seconds; 1 = automatic
	Proxied bool
}

// APIError is an HTTP error answer of the Cloudflare API.
type APIError struct {
	Status     int           // HTTP status code
	Errors     []ErrorDetail // Cloudflare's error codes and messages (may be empty)
	RetryAfter time.Duration // the Retry-After header; 0 when absent
}

// ErrorDetail is one entry of the errors array of a Cloudflare answer.
type ErrorDetail struct {
	Code    int
	Message string
}

func (e *APIError) Error() string {
	if len(e.Errors) == 0 {
		return fmt.Sprintf("cloudflare: HTTP %d %s", e.Status, http.StatusText(e.Status))
	}
	parts := make([]string, len(e.Errors))
	for i, d := range e.Errors {
		parts[i] = fmt.Sprintf("%d %s", d.Code, d.Message)
	}
	return fmt.Sprintf("cloudflare: HTTP %d: %s", e.Status, strings.Join(parts, "; "))
}

// HasCode reports whether Cloudflare answered with error code c.
func (e *APIError) HasCode(c int) bool {
	for _, d := range e.Errors {
		if d.Code == c {
			return true
		}
	}
	return false
}

// Cloudflare error codes the adapter acts on.
const (
	CodeAuthentication = 10000 // the token is invalid or lacks permission
	CodeRecordNotFound = 81044 // the record does not exist
	CodeHostConflict   = 81053 // an A, AAAA or CNAME record with that host already exists
	CodeIdentical      = 81057 // an identical record already exists
	CodeLBNotEntitled  = 1002  // with HTTP 403: Load Balancing is not enabled for the zone or account (with 400: a validation error)
)

// APIOptions configures NewAPI.
type APIOptions struct {
	BaseURL        string        // API base URL (default https://api.cloudflare.com/client/v4/; a URL without a path gets /client/v4/)
	HTTPClient     *http.Client  // (default http.DefaultClient)
	RequestTimeout time.Duration // per HTTP request (default 30s)
}

// NewAPI returns the API backed by cloudflare-go v6, authenticated with an
// API token. The SDK's own retries are off: the Provider retries, so that
// every request is counted against the budget.
func NewAPI(token string, o APIOptions) API {
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	opts := []option.RequestOption{
		option.WithEnvironmentProduction(),
		option.WithAPIToken(token),
		option.WithMaxRetries(0),
		option.WithRequestTimeout(o.RequestTimeout),
	}
	if o.BaseURL != "" {
		opts = append(opts, option.WithBaseURL(baseURL(o.BaseURL)))
	}
	if o.HTTPClient != nil {
		opts = append(opts, option.WithHTTPClient(o.HTTPClient))
	}
	// The services are built directly rather than through cloudflare.NewClient:
	// the SDK root links every Cloudflare product into the binary.
	return &sdkAPI{zones: zones.NewZoneService(opts...), records: dns.NewRecordService(opts...), lb: load_balancers.NewLoadBalancerService(opts...)}
}

// baseURL adds the v4 path to a bare host URL (http://127.0.0.1:8080).
func baseURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Path != "" && u.Path != "/") {
		return s
	}
	u.Path = "/client/v4/"
	return u.String()
}

// sdkAPI implements API with the cloudflare-go v6 services.
type sdkAPI struct {
	zones   *zones.ZoneService
	records *dns.RecordService
	lb      *load_balancers.LoadBalancerService
}

var _ API = (*sdkAPI)(nil)

// The SDK's request fields (param.Field) live in an internal package, so
// they are filled field by field instead of with cloudflare.F.

func (a *sdkAPI) ZoneID(ctx context.Context, name string) (string, error) {
	var p zones.ZoneListParams
	p.Name.Value, p.Name.Present = name, true
	var raw *http.Response
	page, err := a.zones.List(ctx, p, option.WithResponseInto(&raw))
	if err != nil {
		return "", apiError(err, raw)
	}
	if page == nil {
		return "", noResult("list zones named " + name)
	}
	for _, z := range page.Result {
		if strings.EqualFold(z.Name, name) {
			return z.ID, nil
		}
	}
	return "", fmt.Errorf("zone %s: not found (is it in the token's account, with Zone:Read permission?)", name)
}

func (a *sdkAPI) ListDNSRecords(ctx context.Context, zoneID string, page, perPage int) ([]DNSRecord, int, error) {
	var p dns.RecordListParams
	p.ZoneID.Value, p.ZoneID.Present = zoneID, true
	p.Page.Value, p.Page.Present = float64(page), true
	p.PerPage.Value, p.PerPage.Present = float64(perPage), true
	var raw *http.Response
	res, err := a.records.List(ctx, p, option.WithResponseInto(&raw))
	if err != nil {
		return nil, 0, apiError(err, raw)
	}
	if res == nil || res.JSON.Result.IsNull() {
		return nil, 0, noResult("list records of zone " + zoneID)
	}
	out := make([]DNSRecord, 0, len(res.Result))
	for _, r := range res.Result {
		out = append(out, fromSDK(&r))
	}
	// result_info.total_pages is not a typed field of the SDK's page.
	pages, _ := strconv.Atoi(res.ResultInfo.JSON.ExtraFields["total_pages"].Raw())
	return out, pages, nil
}

// dsData is the data object Cloudflare takes for a DS record (its content
// is read-only there): content "key-tag algorithm digest-type digest".
func dsData(content string) (map[string]any, error) {
	f := strings.Fields(content)
	if len(f) != 4 {
		return nil, fmt.Errorf("DS %q: want key tag, algorithm, digest type and digest", content)
	}
	var n [3]int
	for i := range n {
		v, err := strconv.Atoi(f[i])
		if err != nil {
			return nil, fmt.Errorf("DS %q: %w", content, err)
		}
		n[i] = v
	}
	return map[string]any{"key_tag": n[0], "algorithm": n[1], "digest_type": n[2], "digest": f[3]}, nil
}

// recordBody is the request body of a record's create, and (through
// sameFields) of its edit: both send the whole record.
func recordBody(r DNSRecord) (dns.RecordNewParamsBody, error) {
	var b dns.RecordNewParamsBody
	b.Name.Value, b.Name.Present = r.Name, true
	b.Type.Value, b.Type.Present = dns.RecordNewParamsBodyType(r.Type), true
	if r.Type == "DS" {
		data, err := dsData(r.Content)
		if err != nil {
			return b, err
		}
		b.Data.Value, b.Data.Present = data, true
	} else {
		b.Content.Value, b.Content.Present = r.Content, true
	}
	b.TTL.Value, b.TTL.Present = dns.TTL(r.TTL), true
	b.Proxied.Value, b.Proxied.Present = r.Proxied, true
	return b, nil
}

func (a *sdkAPI) CreateDNSRecord(ctx context.Context, zoneID string, r DNSRecord) (DNSRecord, error) {
	b, err := recordBody(r)
	if err != nil {
		return DNSRecord{}, err
	}
	var p dns.RecordNewParams
	p.ZoneID.Value, p.ZoneID.Present = zoneID, true
	p.Body = b
	var raw *http.Response
	res, err := a.records.New(ctx, p, option.WithResponseInto(&raw))
	if err != nil {
		return DNSRecord{}, apiError(err, raw)
	}
	return fromSDK(res), nil
}

func (a *sdkAPI) EditDNSRecord(ctx context.Context, zoneID string, r DNSRecord) (DNSRecord, error) {
	b, err := recordBody(r)
	if err != nil {
		return DNSRecord{}, err
	}
	var p dns.RecordEditParams
	p.ZoneID.Value, p.ZoneID.Present = zoneID, true
	p.Body = sameFields[dns.RecordEditParamsBody](b)
	var raw *http.Response
	res, err := a.records.Edit(ctx, r.ID, p, option.WithResponseInto(&raw))
	if err != nil {
		return DNSRecord{}, apiError(err, raw)
	}
	return fromSDK(res), nil
}

func (a *sdkAPI) DeleteDNSRecord(ctx context.Context, zoneID, id string) error {
	var p dns.RecordDeleteParams
	p.ZoneID.Value, p.ZoneID.Present = zoneID, true
	var raw *http.Response
	if _, err := a.records.Delete(ctx, id, p, option.WithResponseInto(&raw)); err != nil {
		return apiError(err, raw)
	}
	return nil
}

func fromSDK(r *dns.RecordResponse) DNSRecord {
	return DNSRecord{ID: r.ID, Name: r.Name, Type: string(r.Type), Content: r.Content, TTL: int(r.TTL), Proxied: r.Proxied}
}

// apiError turns an SDK error into an *APIError when the API answered
// (also when the body was not Cloudflare's JSON, e.g. a proxy's 502 page);
// transport errors and timeouts are returned as they are.
func apiError(err error, raw *http.Response) error {
	var sdkErr *dns.Error
	if raw == nil || raw.StatusCode < 400 {
		if errors.As(err, &sdkErr) && sdkErr.Response != nil {
			raw = sdkErr.Response
		} else {
			return err
		}
	}
	e := &APIError{Status: raw.StatusCode, RetryAfter: retryAfter(raw.Header.Get("Retry-After"), time.Now())}
	if errors.As(err, &sdkErr) {
		for _, d := range sdkErr.Errors {
			e.Errors = append(e.Errors, ErrorDetail{Code: int(d.Code), Message: d.Message})
		}
	}
	return e
}

// retryAfter parses a Retry-After header: seconds or an HTTP date.
func retryAfter(v string, now time.Time) time.Duration {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s > 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil && t.After(now) {
		return t.Sub(now)
	}
	return 0
}
