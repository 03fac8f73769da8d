// Package scalegen writes large, valid Meridian configuration files for
// the scale measurements (the config load benchmarks and bench/scale): one
// zone, four clusters in four regions and N services of 3 endpoints each,
// in a weighted / geo / failover mix.
package scalegen

import (
	"bufio"
	"fmt"
	"io"

	"github.com/meridian-gslb/meridian/internal/model"
)

// Zone is the apex every generated service lives under.
const Zone = "scale.test"

// Options of a generated file.
type Options struct {
	Services int // number of services (3 endpoints each)
	// Strategies cycles over the services: service i uses
	// Strategies[i%len]. Empty: weighted, geo, failover.
	Strategies []string
	// Server is written as the file's server section verbatim (YAML,
	// indented two spaces under "server:"); empty: no server section.
	Server string
}

// Mix is the default strategy mix.
var Mix = []string{model.StrategyWeighted, model.StrategyGeo, model.StrategyFailover}

var clusters = []struct{ name, region, continent, country string }{
	{"us-east", "us-east", "NA", "US"},
	{"us-west", "us-west", "NA", "US"},
	{"eu-west", "eu-west", "EU", "DE"},
	{"ap-south", "ap-south", "AS", "IN"},
}

// Name is the fully qualified name of service i (without trailing dot).
func Name(i int) string { return fmt.Sprintf("s%d.%s", i, Zone) }

// Write writes the file.
func Write(w io.Writer, o Options) error {
	strategies := o.Strategies
	if len(strategies) == 0 {
		strategies = Mix
	}
	for _, s := range strategies {
		switch s {
		case model.StrategyWeighted, model.StrategyGeo, model.StrategyFailover:
		default:
			return fmt.Errorf("scalegen: strategy %q is not generated (allowed: weighted, geo, failover)", s)
		}
	}
	b := bufio.NewWriterSize(w, 1<<16)
	if o.Server != "" {
		fmt.Fprintf(b, "server:\n%s\n", o.Server)
	}
	fmt.Fprintf(b, "zones:\n  - apex: %s\n    nameservers:\n      - name: ns1.%s\n        ipv4: [192.0.2.53]\n", Zone, Zone)
	b.WriteString("clusters:\n")
	for _, c := range clusters {
		fmt.Fprintf(b, "  - {name: %s, region: %s, continent: %s, country: %s}\n", c.name, c.region, c.continent, c.country)
	}
	b.WriteString("geo:\n  networks:\n")
	for i, c := range clusters {
		fmt.Fprintf(b, "    - {cidr: 10.%d.0.0/16, region: %s, country: %s, continent: %s}\n", i+1, c.region, c.country, c.continent)
	}
	b.WriteString("services:\n")
	for i := range o.Services {
		strategy := strategies[i%len(strategies)]
		fmt.Fprintf(b, "  - name: %s\n", Name(i))
		if strategy != model.StrategyWeighted {
			fmt.Fprintf(b, "    strategy: %s\n", strategy)
		}
		b.WriteString("    endpoints:\n")
		// Three endpoints on three of the four clusters, rotating, with
		// distinct addresses in 100.64.0.0/10 (4 194 304 of them).
		for e := range 3 {
			c := clusters[(i+e)%len(clusters)]
			a := 3*i + e
			fmt.Fprintf(b, "      - {address: 100.%d.%d.%d, cluster: %s", 64+(a>>16)&63, (a>>8)&255, a&255, c.name)
			if strategy == model.StrategyWeighted {
				fmt.Fprintf(b, ", weight: %d", 100*(e+1))
			}
			b.WriteString("}\n")
		}
		switch strategy {
		case model.StrategyGeo:
			c0, c1 := clusters[i%len(clusters)], clusters[(i+1)%len(clusters)]
			fmt.Fprintf(b, "    geo:\n      rules:\n        - {regions: [%s], clusters: [%s]}\n        - {continents: [%s], clusters: [%s]}\n      default: [%s]\n",
				c0.region, c0.name, c1.continent, c1.name, c0.name)
		case model.StrategyFailover:
			fmt.Fprintf(b, "    failover:\n      order: [%s, %s, %s]\n",
				clusters[i%len(clusters)].name, clusters[(i+1)%len(clusters)].name, clusters[(i+2)%len(clusters)].name)
		}
	}
	return b.Flush()
}
