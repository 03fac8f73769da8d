// Package layers writes down which of our packages may import which: every
// package of the module is in one layer, and a layer may import only the
// layers it lists. The test of this package checks the real imports (go
// list) against the table; docs/architecture.md lists every package the
// table has (docs test). Nothing imports this package.
package layers

// Layer is a set of packages and the layers they may import.
type Layer struct {
	Name     string
	Doc      string
	Packages []string // module-relative import paths; "dir/..." is dir and everything below it
	MayUse   []string // layer names (its own included when its packages import each other)
}

// Layers, from the bottom. Packages are module-relative ("internal/model").
var Layers = []Layer{
	{
		Name: "foundation",
		Doc:  "types and rules that need nothing of ours",
		Packages: []string{
			"internal/model", "internal/vote", "internal/report", "internal/geo", "internal/latency", "internal/leader",
			"internal/placement", "internal/coalesce", "internal/shift", "internal/secretfile",
			"internal/logthrottle", "internal/srcdir", "internal/promreg", "internal/kube/grants", "providers/plan",
			"deploy/examples", // the embedded demo config
		},
	},
	{
		Name: "domain",
		Doc:  "answering, deciding and the state operators set; no network I/O",
		Packages: []string{
			"internal/engine", "internal/dnssec", "internal/failover", "internal/capacity", "internal/admin",
			"internal/whatif", "internal/ringca", "internal/sites", "internal/config", "internal/config/scalegen",
			"internal/notify", "internal/demo", "internal/kube/claims",
			"internal/extdns",
		},
		MayUse: []string{"foundation", "domain"},
	},
	{
		Name: "edge",
		Doc:  "talks to the world: probes, gossip, Kubernetes, DNS and HTTP listeners, providers",
		Packages: []string{
			"internal/health", "internal/ring", "internal/kube", "internal/kube/join", "internal/propagation",
			"internal/capacity/observe", "internal/dnsserver", "internal/xfr", "internal/zonekeys", "internal/api",
			"providers", "providers/apicall", "providers/cloudflare", "providers/cloudflare/cffake",
			"providers/rfc2136", "providers/rfc2136/rfc2136fake", "providers/route53", "providers/route53/route53fake",
			"internal/extdns/webhook",
		},
		MayUse: []string{"foundation", "domain", "edge"},
	},
	{
		Name:     "pipeline",
		Doc:      "the serving pipeline both front ends share",
		Packages: []string{"internal/serving", "internal/serving/servingtest", "internal/follow", "internal/shift/runner", "internal/kube/merge"},
		MayUse:   []string{"foundation", "domain", "edge", "pipeline"},
	},
	{
		Name:     "front end",
		Doc:      "composition roots: meridian serve, the CoreDNS plugin, the commands",
		Packages: []string{"internal/app", "plugin/meridian", "cmd/meridian", "cmd/coredns-meridian"},
		MayUse:   []string{"foundation", "domain", "edge", "pipeline", "front end"},
	},
	{
		Name:     "outside",
		Doc:      "benchmarks, deployment and documentation tests, e2e helpers: they use anything, nothing uses them",
		Packages: []string{"bench/...", "deploy/...", "docs", "e2e/..."},
		MayUse:   []string{"foundation", "domain", "edge", "pipeline", "front end", "outside"},
	},
}

// FrontEndsOnly are packages the layer rules would let more packages
// import, but only front ends (and the outside layer) may: the core never speaks the HTTP API's
// types, so what it reports does not change with the API.
var FrontEndsOnly = []string{"internal/api"}

// Debt lists imports that break FrontEndsOnly today and are to go; the
// test fails when one is no longer there, so the list only shrinks. The
// pipeline's import of internal/api (issue 32) is paid: it reports with
// internal/report's types.
var Debt = map[string][]string{}

// MaxImports caps how many of our packages a package may import: the
// pipeline's core stays the pipeline (its State, overrides and publish),
// while what feeds it (ring following, the Kubernetes merge, shifts,
// simulations, key files) lives in packages of its own.
var MaxImports = map[string]int{"internal/serving": 8}
