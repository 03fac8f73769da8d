package api

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"mime"
	"net/http"
	"net/http/httptest"
	"os"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/demo"
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/kube"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/propagation"
	"github.com/meridian-gslb/meridian/internal/shift"
	"github.com/meridian-gslb/meridian/internal/whatif"
)

// oaSpec is openapi.yaml decoded into plain maps, with the helpers the
// tests need to walk it.
type oaSpec struct{ root map[string]any }

func loadSpec(t *testing.T) oaSpec {
	t.Helper()
	var root map[string]any
	require.NoError(t, yaml.Unmarshal(openAPISpec, &root), "openapi.yaml parses")
	require.True(t, strings.HasPrefix(fmt.Sprint(root["openapi"]), "3.0."), "an OpenAPI 3.0 document")
	return oaSpec{root}
}

func asMap(v any) map[string]any { m, _ := v.(map[string]any); return m }

// lookup follows a local JSON pointer such as #/components/schemas/Override.
func (s oaSpec) lookup(ref string) (map[string]any, bool) {
	p, ok := strings.CutPrefix(ref, "#/")
	if !ok {
		return nil, false
	}
	var cur any = s.root
	for _, part := range strings.Split(p, "/") {
		m := asMap(cur)
		if m == nil {
			return nil, false
		}
		if cur, ok = m[part]; !ok {
			return nil, false
		}
	}
	return asMap(cur), asMap(cur) != nil
}

// deref resolves $ref chains.
func (s oaSpec) deref(m map[string]any) map[string]any {
	for i := 0; i < 10 && m != nil; i++ {
		ref, ok := m["$ref"].(string)
		if !ok {
			return m
		}
		m, _ = s.lookup(ref)
	}
	return m
}

func (s oaSpec) schema(name string) map[string]any {
	return asMap(asMap(asMap(s.root["components"])["schemas"])[name])
}

var methods = []string{"get", "put", "post", "delete", "patch", "head", "options", "trace"}

// operations returns every documented "METHOD /path" and its operation.
func (s oaSpec) operations() map[string]map[string]any {
	out := map[string]map[string]any{}
	for path, item := range asMap(s.root["paths"]) {
		for m, op := range asMap(item) {
			if slices.Contains(methods, m) {
				out[strings.ToUpper(m)+" "+path] = asMap(op)
			}
		}
	}
	return out
}

// routeKey turns a ServeMux pattern into the spec's "METHOD /path": "{$}"
// (exact match) goes, a subtree "/x/" is documented as "/x/{path}".
func routeKey(pattern string) string {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		return "ANY " + pattern // a pattern without a method: never documented, so the test fails
	}
	path = strings.TrimSuffix(path, "{$}")
	if path != "/" && strings.HasSuffix(path, "/") {
		path += "{path}"
	}
	return method + " " + path
}

// ---- fakes: every option of the HTTP surface ----

type fakeDemo struct{ running map[string]bool }

func (f *fakeDemo) Start(addr string) error { return f.set(addr, true) }
func (f *fakeDemo) Stop(addr string) error  { return f.set(addr, false) }
func (f *fakeDemo) set(addr string, on bool) error {
	if _, ok := f.running[addr]; !ok {
		return fmt.Errorf("no demo backend listens on %s", addr)
	}
	f.running[addr] = on
	return nil
}
func (f *fakeDemo) List() any {
	out := []demo.BackendStatus{}
	for a, on := range f.running {
		out = append(out, demo.BackendStatus{Addr: a, Path: "/healthz", Running: on})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

const oaToken = "0123456789abcdef0123"

func fullHealth() HealthReport {
	at := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	held := at.Add(time.Minute)
	age := 1.5
	votes := []VoteInfo{{Prober: "p1", Region: "us-east", Status: "down", AgeSeconds: 0.5, Fresh: true}}
	return HealthReport{
		Node: "p1", Region: "us-east", Probing: true, DecidedAt: at,
		Endpoints: []EndpointHealth{
			{Service: "app.gslb.test.", Target: "192.0.2.1", Cluster: "east", State: "down", Admin: "drained", Since: at, Reason: "threshold",
				Voters: []string{"p1"}, HeldUntil: &held, Failures: 3, Braked: true, Votes: votes},
			{Service: "app.gslb.test.", Target: "192.0.2.2", Cluster: "eu", State: "up", Since: at, Reason: "new"},
		},
		Clusters: []ClusterHealth{
			{Name: "east", State: "failed-over", Monitored: true, Since: at, Reason: "heartbeat-lost", Voters: []string{"p1"}, HeldUntil: &held, Votes: votes},
			{Name: "gone", State: "ready", Since: at, Reason: "no-heartbeat"},
		},
		Probers: []ProberHealth{{Name: "p1", Region: "us-east", Role: "prober", Addr: "192.0.2.10:7946", LastVoteAgeSecond: &age, Outlier: true}},
		Changes: []ChangeEvent{
			{At: at, Subject: "app.gslb.test. 192.0.2.1", From: "up", To: "down", Reason: "threshold", Voters: []string{"p1"}},
			{At: at, Subject: "cluster east", From: "ready", To: "failed-over", Reason: "heartbeat-lost"},
		},
	}
}

// oaServer is Handler with every option set.
func oaServer(t *testing.T, opts func(*Options)) (*http.ServeMux, *fakeAdmin) {
	t.Helper()
	src := explainSource(t)
	w := 100
	weight := 250
	exp := time.Now().Add(time.Hour).UTC()
	fa := &fakeAdmin{
		d: &model.Desired{
			Clusters: []model.Cluster{{Name: "east", Region: "us-east"}},
			Services: []model.Service{{Name: "app.gslb.test.", Endpoints: []model.Endpoint{{Address: "192.0.2.1", Cluster: "east", Weight: &w}}}},
		},
		ovs: []admin.Override{{ID: "w1", Kind: admin.KindWeight, Service: "app.gslb.test.", Endpoint: "192.0.2.1", Weight: &weight,
			Who: "alice", Reason: "shift", At: time.Now().UTC(), Expires: &exp}},
	}
	o := Options{
		Health: fullHealth,
		Demo:   &fakeDemo{running: map[string]bool{"127.0.0.1:18081": true}},
		Keys:   &fakeKeys{primary: "k1", all: []string{"k1"}},
		Kube:   func() any { return map[string]any{"members": []kube.MemberStatus{}, "services": map[string][]string{}} },
		Place: func() any {
			return []propagation.Status{{Template: "web", Mode: "divided", Clusters: map[string]propagation.ClusterStatus{
				"east": {Desired: 2, Ready: 2, Generation: 3, Observed: 3, SpecHash: "abc", Waiting: "x", Error: "y"}},
				Excluded: []string{"eu"}, Scores: map[string]float64{"east": 1}, Errors: []string{"bad"}}}
		},
		Admin:           fa,
		Tokens:          NewTokens(map[string]string{"alice": oaToken}),
		Overview:        func() Overview { return BuildOverview(src.s, fullHealth()) },
		MaxEventStreams: 2,
		Metrics:         NewMetrics(prometheus.NewRegistry()),
		Simulate:        fakeSimulator{},
	}
	if opts != nil {
		opts(&o)
	}
	status := func() Status {
		return Status{ConfigPath: "explain.yaml", LastReload: time.Now(), LastReloadErr: "explain.yaml:3:1: bad"}
	}
	h := Handler(src, prometheus.NewRegistry(), func() error { return nil }, status, slog.New(slog.DiscardHandler), o)
	mux, ok := h.(*http.ServeMux)
	require.True(t, ok, "Handler returns its ServeMux")
	return mux, fa
}

func everyOption(t *testing.T) Options {
	var o Options
	oaServer(t, func(opts *Options) { o = *opts })
	return o
}

// ---- the routes ----

func TestOpenAPIDocumentsEveryRoute(t *testing.T) {
	s := loadSpec(t)
	opts := everyOption(t)
	// Every field of Options is set, so every conditional route is there.
	v := reflect.ValueOf(opts)
	for i := range v.NumField() {
		require.False(t, v.Field(i).IsZero(), "the test sets Options.%s (a new option needs a fake here)", v.Type().Field(i).Name)
	}
	served := map[string]string{}
	for _, p := range Routes(opts) {
		served[routeKey(p)] = p
	}
	documented := s.operations()
	for k, p := range served {
		if documented[k] == nil {
			t.Errorf("route %q is served but not documented in internal/api/openapi.yaml (as %s)", p, k)
		}
	}
	for k := range documented {
		if _, ok := served[k]; !ok {
			t.Errorf("%s is documented in internal/api/openapi.yaml but not served", k)
		}
	}

	// Routes is what Handler registers: each documented operation reaches
	// its own pattern on the real mux.
	mux, _ := oaServer(t, nil)
	for k := range documented {
		method, path, _ := strings.Cut(k, " ")
		req := httptest.NewRequest(method, regexp.MustCompile(`\{[^}]+\}`).ReplaceAllString(path, "x"), nil)
		_, pattern := mux.Handler(req)
		assert.Equal(t, k, routeKey(pattern), "%s reaches pattern %q", k, pattern)
	}

	// Without options only the unconditional routes remain, all documented.
	for _, p := range Routes(Options{}) {
		assert.NotNil(t, documented[routeKey(p)], "route %q without options is documented", p)
	}
}

func TestOpenAPIOperationsAreComplete(t *testing.T) {
	s := loadSpec(t)
	ids := map[string]string{}
	param := regexp.MustCompile(`\{([^}]+)\}`)
	for k, op := range s.operations() {
		id, _ := op["operationId"].(string)
		require.NotEmpty(t, id, "%s has an operationId", k)
		assert.NotContains(t, ids, id, "operationId %s is unique (%s)", id, k)
		ids[id] = k
		assert.NotEmpty(t, op["summary"], "%s has a summary", k)

		_, path, _ := strings.Cut(k, " ")
		declared := map[string]bool{}
		for _, p := range asSlice(op["parameters"]) {
			pm := s.deref(asMap(p))
			if pm["in"] == "path" {
				declared[pm["name"].(string)] = true
				assert.Equal(t, true, pm["required"], "%s: path parameter %s is required", k, pm["name"])
			}
		}
		var inPath []string
		for _, m := range param.FindAllStringSubmatch(path, -1) {
			inPath = append(inPath, m[1])
			assert.True(t, declared[m[1]], "%s declares path parameter %s", k, m[1])
		}
		assert.Len(t, declared, len(inPath), "%s declares only the parameters of its path", k)

		responses := asMap(op["responses"])
		ok2xx := false
		for code, r := range responses {
			n, err := strconv.Atoi(code)
			require.NoError(t, err, "%s: response code %q", k, code)
			ok2xx = ok2xx || n/100 == 2
			resp := s.deref(asMap(r))
			require.NotNil(t, resp, "%s %s resolves", k, code)
			assert.NotEmpty(t, resp["description"], "%s %s has a description", k, code)
			for ct, c := range asMap(resp["content"]) {
				assert.NotNil(t, s.deref(asMap(asMap(c)["schema"])), "%s %s %s has a schema", k, code, ct)
			}
		}
		assert.True(t, ok2xx, "%s has a success response", k)
	}

	// Every $ref anywhere in the document resolves.
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if ref, ok := v["$ref"].(string); ok {
				_, found := s.lookup(ref)
				assert.True(t, found, "$ref %s resolves", ref)
			}
			for _, x := range v {
				walk(x)
			}
		case []any:
			for _, x := range v {
				walk(x)
			}
		}
	}
	walk(s.root)
}

// ---- schemas against the Go types ----

// goSchemas names the Go type behind each component schema.
var goSchemas = map[string]reflect.Type{
	"ErrorBody":            reflect.TypeFor[ErrorBody](),
	"OverrideRequest":      reflect.TypeFor[admin.Request](),
	"Override":             reflect.TypeFor[admin.Override](),
	"Shift":                reflect.TypeFor[admin.Shift](),
	"ShiftRequest":         reflect.TypeFor[ShiftRequest](),
	"ShiftSpec":            reflect.TypeFor[shift.Spec](),
	"ShiftProgress":        reflect.TypeFor[shift.Progress](),
	"Explanation":          reflect.TypeFor[engine.Explanation](),
	"ExplainClient":        reflect.TypeFor[engine.ExplainClient](),
	"ExplainCandidate":     reflect.TypeFor[engine.ExplainCandidate](),
	"ExplainSticky":        reflect.TypeFor[engine.ExplainSticky](),
	"ExplainEDE":           reflect.TypeFor[engine.ExplainEDE](),
	"CapacityState":        reflect.TypeFor[engine.CapacityState](),
	"ExplainLatency":       reflect.TypeFor[engine.ExplainLatency](),
	"ExplainRTT":           reflect.TypeFor[engine.ExplainRTT](),
	"HealthReport":         reflect.TypeFor[HealthReport](),
	"UntrustedMember":      reflect.TypeFor[UntrustedMember](),
	"EndpointHealth":       reflect.TypeFor[EndpointHealth](),
	"ClusterHealth":        reflect.TypeFor[ClusterHealth](),
	"VoteInfo":             reflect.TypeFor[VoteInfo](),
	"ProberHealth":         reflect.TypeFor[ProberHealth](),
	"ChangeEvent":          reflect.TypeFor[ChangeEvent](),
	"Overview":             reflect.TypeFor[Overview](),
	"ServiceOverview":      reflect.TypeFor[ServiceOverview](),
	"EndpointOverview":     reflect.TypeFor[EndpointOverview](),
	"ClientSharesOverview": reflect.TypeFor[ClientSharesOverview](),
	"ClusterOverview":      reflect.TypeFor[ClusterOverview](),
	"ProberOverview":       reflect.TypeFor[ProberOverview](),
	"ChangeOverview":       reflect.TypeFor[ChangeOverview](),
	"ProviderOverview":     reflect.TypeFor[ProviderOverview](),
	"MemberStatus":         reflect.TypeFor[kube.MemberStatus](),
	"KubeWriter":           reflect.TypeFor[kube.ElectionStatus](),
	"PlacementStatus":      reflect.TypeFor[propagation.Status](),
	"ClusterPlacement":     reflect.TypeFor[propagation.ClusterStatus](),
	"KeyRequest":           reflect.TypeFor[KeyRequest](),
	"DemoBackend":          reflect.TypeFor[demo.BackendStatus](),
	"SimulationReport":     reflect.TypeFor[whatif.Report](),
	"SimulatedService":     reflect.TypeFor[whatif.ServiceReport](),
	"SimulatedPlace":       reflect.TypeFor[whatif.PlaceReport](),
	"SimulatedShare":       reflect.TypeFor[whatif.Share](),
	"SimulatedLoad":        reflect.TypeFor[whatif.ClusterLoad](),
}

// Schemas without a Go type this package can see: app.KubeReport (package
// app imports this one) and the ring keys' map literal in control.go.
var untypedSchemas = []string{"KubeReport", "RingKeys"}

type jsonField struct {
	name      string
	omitempty bool
	typ       reflect.Type
}

func jsonFields(t reflect.Type) []jsonField {
	var out []jsonField
	for f := range t.Fields() {
		if !f.IsExported() {
			continue
		}
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, opts, _ := strings.Cut(tag, ",")
		if name == "" {
			name = f.Name
		}
		out = append(out, jsonField{name, slices.Contains(strings.Split(opts, ","), "omitempty"), f.Type})
	}
	return out
}

func TestOpenAPISchemasMatchGoTypes(t *testing.T) {
	s := loadSpec(t)
	for name := range asMap(asMap(s.root["components"])["schemas"]) {
		_, typed := goSchemas[name]
		assert.True(t, typed || slices.Contains(untypedSchemas, name), "schema %s has its Go type in goSchemas", name)
	}
	refName := func(m map[string]any) string {
		ref, _ := m["$ref"].(string)
		return strings.TrimPrefix(ref, "#/components/schemas/")
	}
	var checkType func(where string, rt reflect.Type, ps map[string]any)
	checkType = func(where string, rt reflect.Type, ps map[string]any) {
		if rt.Kind() == reflect.Pointer {
			rt = rt.Elem()
		}
		if rt == reflect.TypeFor[time.Time]() {
			assert.Equal(t, "string", ps["type"], where)
			assert.Equal(t, "date-time", ps["format"], where)
			return
		}
		switch rt.Kind() {
		case reflect.Struct:
			assert.Equal(t, rt, goSchemas[refName(ps)], "%s: $ref names the schema of %v", where, rt)
		case reflect.String:
			assert.Equal(t, "string", ps["type"], where)
		case reflect.Bool:
			assert.Equal(t, "boolean", ps["type"], where)
		case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
			assert.Equal(t, "integer", ps["type"], where)
		case reflect.Float32, reflect.Float64:
			assert.Equal(t, "number", ps["type"], where)
		case reflect.Slice:
			assert.Equal(t, "array", ps["type"], where)
			checkType(where+"[]", rt.Elem(), asMap(ps["items"]))
		case reflect.Map:
			assert.Equal(t, "object", ps["type"], where)
			checkType(where+"{}", rt.Elem(), asMap(ps["additionalProperties"]))
		default:
			t.Errorf("%s: no rule for Go kind %s", where, rt.Kind())
		}
	}
	for name, rt := range goSchemas {
		sch := s.schema(name)
		require.NotNil(t, sch, "schema %s is in openapi.yaml", name)
		assert.Equal(t, "object", sch["type"], name)
		props := asMap(sch["properties"])
		var want, wantRequired, got, gotRequired []string
		for _, f := range jsonFields(rt) {
			want = append(want, f.name)
			if !f.omitempty {
				wantRequired = append(wantRequired, f.name)
			}
			ps := props[f.name]
			if ps == nil {
				continue
			}
			where := name + "." + f.name
			checkType(where, f.typ, asMap(ps))
			// encoding/json writes null for a nil slice, map or pointer it does not omit.
			k := f.typ.Kind()
			if !f.omitempty && (k == reflect.Slice || k == reflect.Map || k == reflect.Pointer) {
				assert.Equal(t, true, asMap(ps)["nullable"], "%s may be null (%v without omitempty)", where, f.typ)
			}
		}
		for p := range props {
			got = append(got, p)
		}
		for _, r := range asSlice(sch["required"]) {
			gotRequired = append(gotRequired, r.(string))
		}
		assert.ElementsMatch(t, want, got, "properties of %s are the json fields of %v", name, rt)
		assert.ElementsMatch(t, wantRequired, gotRequired, "required of %s are the fields of %v without omitempty", name, rt)
	}
}

func asSlice(v any) []any { s, _ := v.([]any); return s }

// The admin POST body is admin.Request, strictly: the server refuses
// unknown fields, so the schema allows no other property.
func TestOpenAPIAdminRequestIsExactlyAdminRequest(t *testing.T) {
	s := loadSpec(t)
	op := s.operations()["POST /v1/admin/overrides"]
	require.NotNil(t, op)
	body := asMap(asMap(asMap(op["requestBody"])["content"])["application/json"])
	sch := s.deref(asMap(body["schema"]))
	require.NotNil(t, sch)
	assert.Equal(t, false, sch["additionalProperties"], "unknown fields are refused")
	var tags, props []string
	for _, f := range jsonFields(reflect.TypeFor[admin.Request]()) {
		tags = append(tags, f.name)
	}
	for p := range asMap(sch["properties"]) {
		props = append(props, p)
	}
	assert.ElementsMatch(t, tags, props)
	assert.Equal(t, "bearer", asMap(asMap(asMap(s.root["components"])["securitySchemes"])["adminToken"])["scheme"])
	assert.NotEmpty(t, op["security"], "changes need the bearer token")
	keyReq := s.schema("KeyRequest")
	assert.Equal(t, false, keyReq["additionalProperties"], "POST /v1/ring/keys refuses unknown fields too")
}

// ---- real responses against the documented schemas ----

// checkValue reports where v does not fit the schema sch.
func (s oaSpec) checkValue(where string, v any, sch map[string]any) []string {
	sch = s.deref(sch)
	if sch == nil {
		return []string{where + ": no schema"}
	}
	if v == nil {
		if sch["nullable"] == true {
			return nil
		}
		return []string{where + ": null, and the schema is not nullable"}
	}
	var errs []string
	if enum := asSlice(sch["enum"]); enum != nil && !slices.Contains(enum, v) {
		errs = append(errs, fmt.Sprintf("%s: %v is not in the enum %v", where, v, enum))
	}
	switch sch["type"] {
	case "object":
		m, ok := v.(map[string]any)
		if !ok {
			return append(errs, fmt.Sprintf("%s: %T, want an object", where, v))
		}
		props := asMap(sch["properties"])
		extra := asMap(sch["additionalProperties"])
		for k, x := range m {
			switch {
			case props[k] != nil:
				errs = append(errs, s.checkValue(where+"."+k, x, asMap(props[k]))...)
			case extra != nil:
				errs = append(errs, s.checkValue(where+"["+k+"]", x, extra)...)
			default:
				errs = append(errs, fmt.Sprintf("%s: key %q is not declared in the schema", where, k))
			}
		}
		for _, r := range asSlice(sch["required"]) {
			if _, ok := m[r.(string)]; !ok {
				errs = append(errs, fmt.Sprintf("%s: required key %q is missing", where, r))
			}
		}
	case "array":
		a, ok := v.([]any)
		if !ok {
			return append(errs, fmt.Sprintf("%s: %T, want an array", where, v))
		}
		for i, x := range a {
			errs = append(errs, s.checkValue(fmt.Sprintf("%s[%d]", where, i), x, asMap(sch["items"]))...)
		}
	case "string":
		str, ok := v.(string)
		if !ok {
			return append(errs, fmt.Sprintf("%s: %T, want a string", where, v))
		}
		if sch["format"] == "date-time" {
			if _, err := time.Parse(time.RFC3339Nano, str); err != nil {
				errs = append(errs, fmt.Sprintf("%s: %q is not a date-time", where, str))
			}
		}
	case "integer":
		if f, ok := v.(float64); !ok || f != math.Trunc(f) {
			errs = append(errs, fmt.Sprintf("%s: %v, want an integer", where, v))
		}
	case "number":
		if _, ok := v.(float64); !ok {
			errs = append(errs, fmt.Sprintf("%s: %T, want a number", where, v))
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			errs = append(errs, fmt.Sprintf("%s: %T, want a boolean", where, v))
		}
	default:
		errs = append(errs, fmt.Sprintf("%s: schema without a known type (%v)", where, sch["type"]))
	}
	return errs
}

// checkResponse finds the operation the request reached and checks the
// status code, the content type and (for JSON) the body against it.
func (s oaSpec) checkResponse(t *testing.T, mux *http.ServeMux, req *http.Request, rec *httptest.ResponseRecorder) {
	t.Helper()
	_, pattern := mux.Handler(req)
	key := routeKey(pattern)
	op := s.operations()[key]
	require.NotNil(t, op, "%s %s reaches documented operation %s", req.Method, req.URL, key)
	resp := s.deref(asMap(asMap(op["responses"])[strconv.Itoa(rec.Code)]))
	require.NotNil(t, resp, "%s: status %d is documented (body %s)", key, rec.Code, rec.Body)
	ct, _, err := mime.ParseMediaType(rec.Header().Get("Content-Type"))
	require.NoError(t, err, "%s: content type", key)
	media := asMap(asMap(resp["content"])[ct])
	require.NotNil(t, media, "%s %d: content type %s is documented", key, rec.Code, ct)
	if ct != "application/json" {
		return
	}
	var body any
	require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &body), "%s: JSON body", key)
	errs := s.checkValue(key+" "+strconv.Itoa(rec.Code), body, asMap(media["schema"]))
	assert.Empty(t, errs, "%s %d: body %s", key, rec.Code, rec.Body)
}

func TestOpenAPIResponsesMatchSchemas(t *testing.T) {
	s := loadSpec(t)
	mux, fa := oaServer(t, nil)
	disabled, _ := oaServer(t, func(o *Options) { o.Tokens = nil })
	big := `{"kind":"drain","cluster":"east","reason":"` + strings.Repeat("x", 20000) + `"}`
	tests := []struct {
		name                string
		mux                 *http.ServeMux
		method, target      string
		remote, token, body string
		contentType         string
		json                bool // send Content-Type: application/json without a body
		code                int
	}{
		{name: "overrides are listed", method: "GET", target: "/v1/admin/overrides", code: 200},
		{name: "an override is added", method: "POST", target: "/v1/admin/overrides", token: oaToken, body: `{"kind":"force-down","service":"app.gslb.test","endpoint":"192.0.2.1","reason":"bad","expires_in":"1h"}`, code: 201},
		{name: "a weight override is added", method: "POST", target: "/v1/admin/overrides", token: oaToken, body: `{"kind":"weight","service":"app.gslb.test","endpoint":"192.0.2.1","weight":5,"reason":"shift"}`, code: 201},
		{name: "a bad override is refused", method: "POST", target: "/v1/admin/overrides", token: oaToken, body: `{"kind":"pause","cluster":"east","reason":"x"}`, code: 400},
		{name: "an override without a token is refused", method: "POST", target: "/v1/admin/overrides", body: `{}`, code: 401},
		{name: "admin changes can be disabled", mux: disabled, method: "POST", target: "/v1/admin/overrides", token: oaToken, body: `{}`, code: 403},
		{name: "a large body is refused", method: "POST", target: "/v1/admin/overrides", token: oaToken, body: big, code: 413},
		{name: "a form is refused", method: "POST", target: "/v1/admin/overrides", token: oaToken, body: "kind=drain", contentType: "application/x-www-form-urlencoded", code: 415},
		{name: "an unknown override is not removed", method: "DELETE", target: "/v1/admin/overrides/nope", token: oaToken, json: true, code: 404},
		{name: "an override is removed", method: "DELETE", target: "/v1/admin/overrides/w1", token: oaToken, json: true, code: 200},
		{name: "a removal without a content type is refused", method: "DELETE", target: "/v1/admin/overrides/w1", token: oaToken, code: 415},
		{name: "explain a geo answer for a located client", method: "GET", target: "/v1/explain?name=www.gslb.test&client=10.3.0.1", code: 200},
		{name: "explain a weighted answer for a subnet", method: "GET", target: "/v1/explain?name=app.gslb.test&type=AAAA&subnet=10.3.0.0/24", code: 200},
		{name: "explain a name outside the zones", method: "GET", target: "/v1/explain?name=example.org", code: 200},
		{name: "explain needs a name", method: "GET", target: "/v1/explain", code: 400},
		{name: "a simulation", method: "GET", target: "/v1/simulate?fail=cluster%3Deast&weight=app.gslb.test/192.0.2.1%3D5", code: 200},
		{name: "a simulation of nothing is refused", method: "GET", target: "/v1/simulate", code: 400},
		{name: "a simulation with an unknown parameter is refused", method: "GET", target: "/v1/simulate?explode=east", code: 400},
		{name: "a simulation while another runs is refused with 429", method: "GET", target: "/v1/simulate?fail=cluster%3Dbusy", code: 429},
		{name: "health", method: "GET", target: "/v1/health", code: 200},
		{name: "overview", method: "GET", target: "/v1/overview", code: 200},
		{name: "placement", method: "GET", target: "/v1/placement", code: 200},
		{name: "kube", method: "GET", target: "/v1/kube", code: 200},
		{name: "ring key fingerprints", method: "GET", target: "/v1/ring/keys", code: 200},
		{name: "a key is installed", method: "POST", target: "/v1/ring/keys", token: oaToken, body: `{"op":"install","key":"k2"}`, code: 200},
		{name: "a bad key op is refused", method: "POST", target: "/v1/ring/keys", token: oaToken, body: `{"op":"drop","key":"k2"}`, code: 400},
		{name: "a key op from loopback without a token is refused", method: "POST", target: "/v1/ring/keys", remote: "127.0.0.6:4000", body: `{"op":"install","key":"k2"}`, code: 401},
		{name: "a key op as text/plain is refused", method: "POST", target: "/v1/ring/keys", token: oaToken, body: `{"op":"install","key":"k2"}`, contentType: "text/plain", code: 415},
		{name: "demo backends", method: "GET", target: "/v1/demo/backends", code: 200},
		{name: "a demo backend is stopped", method: "POST", target: "/v1/demo/backends/127.0.0.1:18081/stop", token: oaToken, json: true, code: 200},
		{name: "an unknown demo backend", method: "POST", target: "/v1/demo/backends/127.0.0.1:1/start", token: oaToken, json: true, code: 404},
		{name: "an unknown demo action", method: "POST", target: "/v1/demo/backends/127.0.0.1:18081/pause", token: oaToken, json: true, code: 400},
		{name: "a demo backend is not stopped without a token", method: "POST", target: "/v1/demo/backends/127.0.0.1:18081/stop", remote: "127.0.0.1:4000", json: true, code: 401},
		{name: "healthz", method: "GET", target: "/healthz", code: 200},
		{name: "readyz", method: "GET", target: "/readyz", code: 200},
		{name: "metrics", method: "GET", target: "/metrics", code: 200},
		{name: "status page", method: "GET", target: "/", code: 200},
		{name: "status page script", method: "GET", target: "/assets/page.js", code: 200},
		{name: "status page style", method: "GET", target: "/assets/page.css", code: 200},
		{name: "openapi", method: "GET", target: "/v1/openapi.yaml", code: 200},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := tc.mux
			if m == nil {
				m = mux
			}
			req := httptest.NewRequest(tc.method, tc.target, strings.NewReader(tc.body))
			if tc.remote != "" {
				req.RemoteAddr = tc.remote
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if tc.json {
				req.Header.Set("Content-Type", "application/json")
			}
			if tc.body != "" {
				ct := tc.contentType
				if ct == "" {
					ct = "application/json"
				}
				req.Header.Set("Content-Type", ct)
			}
			rec := httptest.NewRecorder()
			m.ServeHTTP(rec, req)
			require.Equal(t, tc.code, rec.Code, rec.Body.String())
			s.checkResponse(t, m, req, rec)
		})
	}
	assert.Len(t, fa.ovs, 2, "the two added overrides are in force, the removed one is gone")
}

// The key JSON responses carry every field their schema declares, so the
// check above covered the whole schema and not only its required part.
func TestOpenAPIKeyResponsesAreFull(t *testing.T) {
	mux, _ := oaServer(t, nil)
	for target, keys := range map[string][]string{
		"/v1/health":   {"endpoints", "clusters", "probers", "changes", "held_until", "braked", "admin", "last_vote_age_seconds", "outlier"},
		"/v1/overview": {"config_path", "last_reload", "last_reload_error", "services", "share_mode", "probers", "changes", "kind"},
		"/v1/explain?name=www.gslb.test&client=10.3.0.1": {"client", "located_by", "network", "candidates", "used_for_answer", "bucket"},
		"/v1/admin/overrides":                            {"weight", "expires", "who"},
	} {
		code, body := get(t, mux, target)
		require.Equal(t, 200, code, body)
		for _, k := range keys {
			assert.Contains(t, body, `"`+k+`"`, target)
		}
	}
}

func TestOpenAPIIsServed(t *testing.T) {
	onDisk, err := os.ReadFile("openapi.yaml")
	require.NoError(t, err)
	mux, _ := oaServer(t, nil)
	code, body := get(t, mux, "/v1/openapi.yaml")
	assert.Equal(t, 200, code)
	assert.True(t, bytes.Equal(onDisk, []byte(body)), "the embedded document is the file")
}
