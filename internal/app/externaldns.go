package app

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/meridian-gslb/meridian/internal/api"
	"github.com/meridian-gslb/meridian/internal/coalesce"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/extdns"
	"github.com/meridian-gslb/meridian/internal/extdns/webhook"
	"github.com/meridian-gslb/meridian/internal/kube"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/secretfile"
	"github.com/meridian-gslb/meridian/internal/serving"
)

// minExternalDNSToken is the shortest token server.externaldns accepts.
const minExternalDNSToken = 16

// extdnsParts is the ExternalDNS webhook side of a running App.
type extdnsParts struct {
	stage   *extdns.Stage
	clients []webhook.Client
	limits  extdns.Limits
	metrics *webhook.Metrics
	dirty   chan struct{} // a merge is wanted (a POST /records changed the store)
}

// startExternalDNS opens the store of server.externaldns and reads its
// tokens (before the pipeline: the stage merges its services).
func (a *App) startExternalDNS(l *serving.Loaded) error {
	x := l.File.Server.ExternalDNS
	if x == nil {
		return nil
	}
	clients, err := externalDNSClients(x, l.File)
	if err != nil {
		return err
	}
	if err := extdns.CheckHealthCheck(&l.File.Desired, x.HealthCheck); err != nil {
		return fmt.Errorf("server.externaldns.health_check: %w", err)
	}
	path := x.StateFile
	switch path {
	case "":
		path = filepath.Join(a.state, "externaldns.json")
	case "off":
		path = ""
	}
	store, err := extdns.OpenStore(path)
	if err != nil {
		a.log.Warn("externaldns: state file unreadable, starting empty: each ExternalDNS writes its records again at its next sync", "err", err)
	}
	limits := extdns.Limits{MaxRecords: x.MaxRecords}
	pruneStore(a.log, store, extdns.NewRules(&l.File.Desired, limits, kube.ParseHealthCheck), clients)
	m := webhook.NewMetrics(a.reg)
	a.ext = &extdnsParts{clients: clients, limits: limits, metrics: m, dirty: make(chan struct{}, 1),
		stage: &extdns.Stage{Store: store, Limits: limits, HealthCheck: x.HealthCheck, ParseCheck: kube.ParseHealthCheck, Logger: a.log, Observe: m.Observe, Panicked: m.Panicked}}
	return nil
}

// pruneStore drops the records of the state file that the config no
// longer accepts (a zone removed, a name now claimed by another namespace,
// a cluster with no client), each logged with its reason: never fatal.
func pruneStore(log *slog.Logger, store *extdns.Store, r *extdns.Rules, clients []webhook.Client) {
	dropped, err := store.Prune(r, func(c string) bool {
		return slices.ContainsFunc(clients, func(k webhook.Client) bool { return k.Cluster == c })
	})
	for _, d := range dropped {
		log.Warn("externaldns: a record of the state file is dropped: the config no longer accepts it", "cluster", d.Cluster,
			"name", d.Record.DNSName, "type", d.Record.RecordType, "reason", d.Reason)
	}
	if err != nil {
		log.Warn("externaldns: the pruned state file was not written; the records are dropped from memory", "err", err)
	}
}

// externalDNSClients are the clients of x with their tokens, each of a
// cluster of f.
func externalDNSClients(x *config.ExternalDNS, f *config.File) ([]webhook.Client, error) {
	out := make([]webhook.Client, 0, len(x.Clients))
	for i, c := range x.Clients {
		p := "server.externaldns.clients[" + strconv.Itoa(i) + "]"
		if !slices.ContainsFunc(f.Clusters, func(k model.Cluster) bool { return k.Name == c.Cluster }) {
			return nil, fmt.Errorf("%s.cluster: %q is not a name of clusters[]", p, c.Cluster)
		}
		b, err := secretfile.Read(c.TokenFile)
		if err != nil {
			return nil, fmt.Errorf("%s.token_file: %w", p, err)
		}
		tok := strings.TrimSpace(string(b))
		if len(tok) < minExternalDNSToken || strings.ContainsAny(tok, " \t\r\n") {
			return nil, fmt.Errorf("%s.token_file %s: the token has %d characters or holds white space (allowed: one word of at least %d characters, e.g. openssl rand -hex 32)", p, c.TokenFile, len(tok), minExternalDNSToken)
		}
		out = append(out, webhook.Client{Cluster: c.Cluster, Token: tok})
	}
	return out, nil
}

// startExternalDNSListener serves the webhook on server.externaldns.listen
// and merges the stored records again after each change, coalesced like
// the Kubernetes merges.
func (a *App) startExternalDNSListener(l *serving.Loaded) error {
	x := a.ext
	if x == nil {
		return nil
	}
	h, err := webhook.Handler(webhook.Options{Store: x.stage.Store, Clients: x.clients, Metrics: x.metrics, Logger: a.log,
		Rules: func() *extdns.Rules {
			return extdns.NewRules(&a.pipe.State().Loaded.File.Desired, x.limits, kube.ParseHealthCheck)
		},
		Changed: func() { poke(x.dirty) }})
	if err != nil {
		return err
	}
	addr := l.File.Server.ExternalDNS.Listen
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("server.externaldns.listen %s: %w", addr, err)
	}
	// The HTTP API's connection limits (1024 open, 64 per client network)
	// and certificate reloads; their counts go to a registry of their own,
	// not exported.
	lm := api.NewMetrics(prometheus.NewRegistry())
	tlsConf, err := a.httpTLS(l.File.Server.ExternalDNS.TLS, lm)
	if err != nil {
		ln.Close()
		return fmt.Errorf("server.externaldns.tls: %w", err)
	}
	if tokensInClear(addr, tlsConf != nil) {
		a.log.Warn("externaldns webhook: plain HTTP on an address other hosts reach: the clusters' tokens cross the network in clear (set server.externaldns.tls, listen on loopback, or put the webhook behind a mesh)", "addr", addr)
	}
	srv := api.NewServer(h, tlsConf, a.log)
	lim := api.Listen(srv, ln, api.Limits{}, "externaldns", lm)
	go func() {
		if err := srv.Serve(lim); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("externaldns webhook server", "err", err)
		}
	}()
	a.defer_(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
	})
	a.goBackground(func(ctx context.Context) {
		coalesce.Run(ctx, x.dirty, mergeWindow, time.After, func() {
			if err := a.pipe.Remerge(); err != nil {
				a.log.Error("externaldns merge failed: the previous state keeps serving", "err", err)
			}
		})
	})
	a.log.Info("externaldns webhook listening", "addr", ln.Addr().String(), "tls", tlsConf != nil, "clients", len(x.clients), "records", x.stage.Store.Counts())
	return nil
}

// stages is the pipeline's merge after the config file: the Kubernetes
// sources, then the ExternalDNS records (each optional).
type stages struct {
	kube serving.KubeSource // nil without Kubernetes sources
	ext  *extdns.Stage
}

func (s stages) Merge(l *serving.Loaded) (*config.File, error) {
	f := l.File
	if s.kube != nil {
		var err error
		if f, err = s.kube.Merge(l); err != nil {
			return f, err
		}
	}
	return s.ext.Merge(f)
}

func (s stages) PrepareNext() {
	if s.kube != nil {
		s.kube.PrepareNext()
	}
}

// mergeSource is the pipeline's KubeSource: the Kubernetes stage alone, or
// with the ExternalDNS stage after it (nil: the file alone).
func (a *App) mergeSource() serving.KubeSource {
	var s stages
	if a.kube != nil {
		s.kube = a.kube.src
	}
	switch {
	case a.ext != nil:
		s.ext = a.ext.stage
		return s
	case s.kube != nil:
		return s.kube
	}
	return nil
}

// tokensInClear reports whether a webhook on listen sends the tokens where
// other hosts may read them: without TLS, on any address but a loopback one.
func tokensInClear(listen string, tls bool) bool {
	if tls {
		return false
	}
	ap, err := netip.ParseAddrPort(listen)
	return err != nil || !ap.Addr().Unmap().IsLoopback()
}
