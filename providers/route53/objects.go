package route53

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go"

	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/providers"
	"github.com/meridian-gslb/meridian/providers/plan"
)

var _ providers.ObjectSyncer = (*Provider)(nil)

// Timings of the object sync.
const (
	// refusedRetry is how long a health check Route 53 refused to create
	// (a private address, the account's quota) is not asked for again.
	refusedRetry = 10 * time.Minute
	// maxGenerations bounds the CallerReference generations one create
	// tries (each HealthCheckAlreadyExists moves to the next).
	maxGenerations = 16
)

// zoneObjects is what PrepareObjects settled for one zone: read by Desired
// (the ids) and CollectObjects (what to delete).
type zoneObjects struct {
	objs   Objects
	listed bool           // owned is the complete list of our checks
	owned  []ownedCheck   // our checks, as listed plus those made since
	byHash map[string]int // spec hash → index into owned of the check in use
	wanted map[string]bool
	cidr   *cidrState // the zone's CIDR collection (nil: not looked at)
	dryRun bool
}

// ownedCheck is one of our health checks.
type ownedCheck struct {
	id, hash, name string
	gen            int
	calculated     bool
	version        int64
	tagged         bool // carries our owner tag (else: made by us, tags not written yet)
	cfg            *checkConfig
}

// Desired is the zone's Translate: TranslateWith the health checks and
// CIDR collection the last PrepareObjects of zone settled (none before the
// first one, or with health_checks off and no geo.networks).
func (p *Provider) Desired(views []providers.ServiceView, zone string) []plan.Record {
	p.mu.Lock()
	st := p.objects[canonicalName(zone)]
	p.mu.Unlock()
	var objs Objects
	if st != nil {
		objs = st.objs
	}
	return TranslateWith(views, zone, objs)
}

// PrepareObjects implements providers.ObjectSyncer: it creates the CIDR
// collection and locations geo.networks need (when a geo service of the
// zone has networks) and, with health_checks: backstop, the health checks
// the record sets will carry — endpoint checks first, then the CALCULATED
// ones over them — repairing ours that drifted (tags, settings, disabled).
// Foreign checks are never changed. A check Route 53 refuses is reported
// in the result and its sets go without one; errors that end the pass
// (throttled past the retries, network) are returned. With health_checks
// off, the zone's checks are still listed once per process (and each pass
// while some are left) so that those of an earlier backstop are deleted.
func (p *Provider) PrepareObjects(ctx context.Context, zone string, views []providers.ServiceView, dryRun bool) (providers.ObjectResult, error) {
	zone = canonicalName(zone)
	var res providers.ObjectResult
	id, err := p.zoneID(ctx, zone)
	if err != nil {
		return res, err
	}
	st := &zoneObjects{objs: Objects{ZoneID: id}, byHash: map[string]int{}, wanted: map[string]bool{}, dryRun: dryRun}
	if err := p.prepareCIDR(ctx, zone, views, st, &res); err != nil {
		return res, err
	}
	backstop := p.opts.HealthChecks == model.HealthChecksBackstop
	p.mu.Lock()
	swept := p.swept[zone]
	p.mu.Unlock()
	if backstop || !swept {
		if err := p.listChecks(ctx, zone, st); err != nil {
			if backstop {
				return res, fmt.Errorf("route53 zone %s: health checks: %w", zone, err)
			}
			// Tried once per process: a role without the health check
			// permissions (not needed with backstop off) is not an error.
			p.log.Info("route53 health checks not listed (health_checks is off; needed only to delete those of an earlier backstop)", "zone", zone, "err", err)
			p.mu.Lock()
			p.swept[zone] = true
			p.mu.Unlock()
		}
	}
	if backstop {
		p.warnUnchecked(zone, views)
		st.objs.Checks = map[string]string{}
		for round := range 2 { // endpoint checks, then the CALCULATED ones over them
			_, needs := translate(views, zone, st.objs)
			for _, spec := range needs {
				if round == 1 {
					st.wanted[spec.hash()] = true
				}
				if st.objs.Checks[spec.key()] != "" {
					continue
				}
				id, err := p.ensureCheck(ctx, zone, st, spec, &res)
				if err != nil {
					return res, err
				}
				if id != "" {
					st.objs.Checks[spec.key()] = id
				}
			}
		}
	}
	p.mu.Lock()
	p.objects[zone] = st
	p.mu.Unlock()
	return res, nil
}

// CollectObjects implements providers.ObjectSyncer: it deletes our health
// checks no record set needs any more (CALCULATED ones first: Route 53
// refuses to delete a check another one or a record set uses) and the
// CIDR blocks, locations and collection no set uses. A check still in use
// (a set whose change Route 53 refused) is reported and tried again on the
// next pass.
func (p *Provider) CollectObjects(ctx context.Context, zone string, dryRun bool) (providers.ObjectResult, error) {
	zone = canonicalName(zone)
	var res providers.ObjectResult
	p.mu.Lock()
	st := p.objects[zone]
	p.mu.Unlock()
	if st == nil {
		return res, nil
	}
	if st.listed {
		if err := p.collectChecks(ctx, zone, st, dryRun, &res); err != nil {
			return res, err
		}
	}
	if err := p.collectCIDR(ctx, zone, st, dryRun, &res); err != nil {
		return res, err
	}
	return res, nil
}

// collectChecks deletes the owned checks not wanted (see CollectObjects),
// but never one a record set still uses as far as the zone's last listing
// and the batches accepted since tell (a set whose change Route 53 refused
// keeps its old check): real Route 53 deletes a check in use, and the set
// would then count as unhealthy.
func (p *Provider) collectChecks(ctx context.Context, zone string, st *zoneObjects, dryRun bool, res *providers.ObjectResult) error {
	inUse := p.checksInUse(zone, st)
	var doomed []ownedCheck
	for i, c := range st.owned {
		if keep, ok := st.byHash[c.hash]; ok && keep == i && st.wanted[c.hash] {
			continue
		}
		doomed = append(doomed, c)
	}
	slices.SortStableFunc(doomed, func(a, b ownedCheck) int {
		switch {
		case a.calculated == b.calculated:
			return 0
		case a.calculated:
			return -1
		}
		return 1
	})
	left := len(doomed)
	for _, c := range doomed {
		ch := providers.ObjectChange{Kind: providers.KindHealthCheck, Name: c.name, Op: "delete", Detail: c.id}
		if by, used := inUse[c.id]; used && !dryRun {
			ch.Err = fmt.Errorf("health check %s is still used by %s: kept until that set lets go of it", c.id, by)
			res.Changes = append(res.Changes, ch)
			continue
		}
		if !dryRun {
			err := p.call(ctx, opDeleteCheck, func(ctx context.Context) error {
				res.Calls++
				_, err := p.api.DeleteHealthCheck(ctx, deleteCheckInput(c.id))
				return err
			})
			switch {
			case err == nil || errorCode(err) == "NoSuchHealthCheck":
				left--
				p.forgetCheck(c)
			case fatal(err):
				return fmt.Errorf("route53 zone %s: delete health check %s: %w", zone, c.id, err)
			default:
				ch.Err = err
			}
		}
		res.Changes = append(res.Changes, ch)
	}
	if !dryRun && left == 0 && p.opts.HealthChecks != model.HealthChecksBackstop {
		p.mu.Lock()
		p.swept[zone] = true
		p.mu.Unlock()
	}
	return nil
}

// checksInUse maps the health check ids the zone's record sets use (as
// last listed, with the accepted batches since) to a set using each;
// the children of a CALCULATED check in use are in use too.
func (p *Provider) checksInUse(zone string, st *zoneObjects) map[string]string {
	out := map[string]string{}
	p.mu.Lock()
	for key, s := range p.live[zone] {
		if id := aws.ToString(s.HealthCheckId); id != "" {
			out[id] = key.String()
		}
	}
	p.mu.Unlock()
	for _, c := range st.owned {
		if by, ok := out[c.id]; ok && c.cfg != nil {
			for _, kid := range c.cfg.ChildHealthChecks {
				if _, seen := out[kid]; !seen {
					out[kid] = by + " (through " + c.id + ")"
				}
			}
		}
	}
	return out
}

// forgetCheck drops a deleted check from the caches; its CallerReference
// is spent, so the next create of the same spec starts past its generation.
func (p *Provider) forgetCheck(c ownedCheck) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.tags, c.id)
	p.gens[c.hash] = max(p.gens[c.hash], c.gen+1)
}

// warnUnchecked logs once per service and reason why its endpoints get no
// health check, and once per service whose CNAME endpoints Route 53 checks
// with another Host than Meridian's probers do.
func (p *Provider) warnUnchecked(zone string, views []providers.ServiceView) {
	for _, v := range views {
		name := canonicalName(v.Name)
		if name != zone && !strings.HasSuffix(name, "."+zone) || len(v.Endpoints) == 0 {
			continue
		}
		_, reason := endpointCheck(v, v.Endpoints[0])
		if reason != "" {
			if p.firstWarning(name + " " + reason) {
				p.log.Warn("route53 backstop: no health check for this service; Route 53 answers its sets while Meridian's last push stands",
					"zone", zone, "service", name, "reason", reason)
			}
			continue
		}
		if host := cnameHostMismatch(v); host != "" && p.firstWarning(name+" cname host") {
			p.log.Warn("route53 backstop: CNAME endpoints are checked with their target as Host (and SNI), not health_check.host; Route 53 may fail where Meridian's probers pass",
				"zone", zone, "service", name, "host", host)
		}
	}
}

// firstWarning reports whether key is warned about for the first time.
func (p *Provider) firstWarning(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	seen := p.warned[key]
	p.warned[key] = true
	return !seen
}

// cnameHostMismatch returns the service's HTTP(S) health_check host when a
// CNAME endpoint is checked by Route 53 with another Host (its target).
func cnameHostMismatch(v providers.ServiceView) string {
	c := v.HealthCheck
	if c == nil || c.Host == "" || c.Kind != model.CheckHTTP && c.Kind != model.CheckHTTPS {
		return ""
	}
	host := strings.TrimSuffix(strings.ToLower(c.Host), ".")
	for _, e := range v.Endpoints {
		if e.Type == "CNAME" && strings.TrimSuffix(strings.ToLower(e.Target), ".") != host {
			return host
		}
	}
	return ""
}

// errorCode is the API error code of err ("" if none).
func errorCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// fatal reports whether err ends the pass (transient past the retries, the
// context ended, a malformed answer) rather than refusing one object.
func fatal(err error) bool {
	return errors.Is(err, providers.ErrTransient) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, errMalformed)
}

// placeholder stands for the id of a check a dry run would create.
func placeholder(spec checkSpec) string { return "new-" + spec.hash()[:12] }
