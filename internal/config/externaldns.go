package config

import (
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/meridian-gslb/meridian/internal/model"
)

// ExternalDNS is the ExternalDNS webhook provider listener
// (docs/externaldns.md): ExternalDNS instances, one per member cluster
// started with --provider=webhook, write their records here and Meridian
// serves them as weighted services. A change needs a restart, like the
// rest of server.
type ExternalDNS struct {
	Listen string `yaml:"listen"` // address of the webhook, e.g. 127.0.0.1:8888 (required)
	// Clients are the ExternalDNS instances: each token identifies one
	// cluster, whose records it reads and writes (at least one).
	Clients []ExternalDNSClient `yaml:"clients"`
	// StateFile keeps the records across restarts (default:
	// externaldns.json in server.state_dir; "off": memory only, so a
	// restart serves none until each ExternalDNS syncs again). At start
	// its records the config no longer accepts are dropped, each logged.
	StateFile string `yaml:"state_file"`
	// HealthCheck probes the endpoints of the services made from
	// ExternalDNS records unless a record sets
	// webhook/meridian-health-check (default: not probed).
	HealthCheck *model.Check `yaml:"health_check"`
	MaxRecords  int          `yaml:"max_records"` // records per cluster, TXT included (default 10000; 1..1000000)
	// TLS, when set, serves HTTPS on listen, the files reloaded when they
	// change, as server.http.tls (default: plain HTTP). ExternalDNS trusts
	// the certificate's CA through SSL_CERT_FILE.
	TLS *TLS `yaml:"tls"`
}

// ExternalDNSClient is one ExternalDNS instance.
type ExternalDNSClient struct {
	Cluster   string `yaml:"cluster"`    // the clusters[] name its records belong to (required; one client per cluster)
	TokenFile string `yaml:"token_file"` // file holding its token, at least 16 characters, mode 600 (required)
}

// validateExternalDNS checks server.externaldns (the clusters are checked
// against clusters[] when the listener starts).
func validateExternalDNS(errs *fieldErrors, x *ExternalDNS) {
	if x == nil {
		return
	}
	const p = "server.externaldns"
	if _, err := netip.ParseAddrPort(x.Listen); err != nil {
		errs.add(p+".listen", "%q is not an IP:port address (e.g. 127.0.0.1:8888)", x.Listen)
	}
	if len(x.Clients) == 0 {
		errs.add(p+".clients", "is empty (allowed: one {cluster, token_file} per ExternalDNS instance)")
	}
	var seen []string
	for i, c := range x.Clients {
		cp := p + ".clients[" + strconv.Itoa(i) + "]"
		switch {
		case strings.TrimSpace(c.Cluster) == "":
			errs.add(cp+".cluster", "is required (a name of clusters[])")
		case slices.Contains(seen, c.Cluster):
			errs.add(cp+".cluster", "%q has a client already (allowed: one token per cluster)", c.Cluster)
		}
		seen = append(seen, c.Cluster)
		if strings.TrimSpace(c.TokenFile) == "" {
			errs.add(cp+".token_file", "is required (a file holding the token, mode 600)")
		}
	}
	if n := x.MaxRecords; n < 0 || n > 1_000_000 {
		errs.add(p+".max_records", "%d is out of range (allowed 1..1000000; 0 = default 10000)", n)
	}
	validateTLS(errs, p+".tls", x.TLS)
	if c := x.HealthCheck; c != nil && !slices.Contains(model.CheckKinds, c.Kind) {
		errs.add(p+".health_check.kind", "%q is not allowed (allowed: %s)", c.Kind, strings.Join(model.CheckKinds, ", "))
	}
}
