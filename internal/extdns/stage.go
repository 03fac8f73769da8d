package extdns

import (
	"fmt"
	"log/slog"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/model"
)

// Stage is the serving pipeline's ExternalDNS stage: it adds the store's
// services to a file the earlier stages merged (the config file, then the
// Kubernetes sources). Safe for concurrent use.
type Stage struct {
	Store       *Store
	Limits      Limits                                      // what a record is checked against again at each merge
	HealthCheck *model.Check                                // the services' default check (nil: not probed)
	ParseCheck  func(string) (*model.Check, error)          // reads webhook/meridian-health-check (nil: ignored)
	Logger      *slog.Logger                                // nil: slog.Default()
	Observe     func(served int, dropped map[string]string) // after every merge (nil: none)
	Panicked    func()                                      // after a recovered panic (nil: none); counts it

	mu      sync.Mutex
	dropped map[string]string // the last merge's reasons, so each is logged once
	partial map[string]string // the same for names served in part
	merged  bool              // a merge succeeded
}

// Merge is f with the store's services after its own. The services of f
// are not normalized again (f is loaded or merged: normalized); the
// store's are normalized with f's settings, and one that does not
// validate is left out with its reason. f is not modified.
//
// A panic while merging (a bug meeting unexpected records) is recovered,
// logged and counted (Panicked), never fatal: before the first merge that
// succeeded, Merge gives f without the store's services (there is no
// earlier state to keep); after it, an error, so that the pipeline keeps
// the state it serves.
func (s *Stage) Merge(f *config.File) (out *config.File, err error) {
	defer func() {
		v := recover()
		if v == nil {
			return
		}
		if s.Panicked != nil {
			s.Panicked()
		}
		s.mu.Lock()
		merged := s.merged
		s.mu.Unlock()
		s.logger().Error("externaldns merge panicked (recovered)", "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
		if !merged {
			out, err = f, nil
			return
		}
		out, err = nil, fmt.Errorf("externaldns: merging the stored records panicked (%v): the previous state keeps serving", v)
	}()
	out = s.merge(f)
	s.mu.Lock()
	s.merged = true
	s.mu.Unlock()
	return out, nil
}

func (s *Stage) merge(f *config.File) *config.File {
	taken := make(map[string]bool, len(f.Services))
	for i := range f.Services {
		taken[f.Services[i].Name] = true
	}
	clusters := make(map[string]bool, len(f.Clusters))
	for _, c := range f.Clusters {
		clusters[c.Name] = true
	}
	// Records are checked again with f's rules: the zones, claims and
	// tenant_targets may have changed since they were stored.
	rules := NewRules(&f.Desired, s.Limits, s.ParseCheck)
	svcs, dropped, partial := Build(s.Store.All(), BuildOptions{Clusters: clusters, Taken: func(n string) bool { return taken[n] },
		HealthCheck: s.HealthCheck, ParseCheck: s.ParseCheck, Check: rules.Check})
	out := f
	if len(svcs) > 0 {
		nk := normalizeEach(&f.Desired, svcs, dropped)
		if len(nk.Services) > 0 {
			m := *f
			m.Desired = *nk
			m.Desired.Services = slices.Concat(f.Services, nk.Services)
			out = &m
		}
	}
	for name := range dropped {
		delete(partial, name) // normalizeEach left it out after all
	}
	s.report(len(out.Services)-len(f.Services), dropped, partial)
	return out
}

// normalizeEach normalizes svcs with d's settings; when the whole fails,
// each service alone, leaving out (into dropped) those that fail. Names
// are unique (Build gives each once and none of d's), and model.Validate
// checks each service against the settings alone, so the kept ones
// validate together. The slow path costs one model.Normalize of d's
// settings (zones, clusters, policies: not the other services) per
// service, linear in len(svcs); since Check refuses up front what the
// model refuses of one record, it runs only for what records of several
// clusters do together (e.g. the same address twice).
func normalizeEach(d *model.Desired, svcs []model.Service, dropped map[string]string) *model.Desired {
	kd := *d
	kd.Services = svcs
	if nk, err := model.Normalize(&kd); err == nil {
		return nk
	}
	kept := make([]model.Service, 0, len(svcs))
	for _, svc := range svcs {
		kd.Services = []model.Service{svc}
		if _, err := model.Normalize(&kd); err != nil {
			dropped[svc.Name] = fmt.Sprintf("does not validate: %v", err)
			continue
		}
		kept = append(kept, svc)
	}
	kd.Services = kept
	nk, err := model.Normalize(&kd)
	if err != nil { // cannot happen (see above); serve none rather than a bad state
		for _, svc := range kept {
			dropped[svc.Name] = fmt.Sprintf("does not validate with the others: %v", err)
		}
		kd.Services = nil
		nk, _ = model.Normalize(&kd)
	}
	return nk
}

// report logs each new reason once and calls Observe.
func (s *Stage) report(served int, dropped, partial map[string]string) {
	log := s.logger()
	s.mu.Lock()
	for name, why := range dropped {
		if s.dropped[name] != why {
			log.Warn("externaldns: name not served", "service", name, "reason", why)
		}
	}
	for name, why := range partial {
		if s.partial[name] != why {
			log.Warn("externaldns: name served without some of its records", "service", name, "reason", why)
		}
	}
	s.dropped, s.partial = dropped, partial
	s.mu.Unlock()
	if s.Observe != nil {
		s.Observe(served, dropped)
	}
}

func (s *Stage) logger() *slog.Logger {
	if s.Logger == nil {
		return slog.Default()
	}
	return s.Logger
}

// CheckHealthCheck validates c as the health check of services made from
// ExternalDNS records, with d's settings (a check the services would
// refuse is found at start, not at every merge).
func CheckHealthCheck(d *model.Desired, c *model.Check) error {
	if c == nil || len(d.Zones) == 0 || len(d.Clusters) == 0 {
		return nil
	}
	kd := *d
	kd.Services = []model.Service{{Name: "externaldns-health-check." + d.Zones[0].Apex, HealthCheck: c,
		Endpoints: []model.Endpoint{{Address: "192.0.2.1", Cluster: d.Clusters[0].Name}}}}
	if _, err := model.Normalize(&kd); err != nil {
		return fmt.Errorf("does not validate as a service's health check: %w", err)
	}
	return nil
}
