package route53

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/meridian-gslb/meridian/providers"
)

// checkConfig is a live check's configuration.
type checkConfig = types.HealthCheckConfig

// listChecks lists the account's health checks and keeps ours in st: those
// whose CallerReference starts with refPrefix(owner, zone) and whose owner
// tag is ours (or absent: made by us, the tags not written yet — they are
// written by ensureCheck, or the check deleted by CollectObjects). Tags are
// read only for those candidates, and only once per check and process.
func (p *Provider) listChecks(ctx context.Context, zone string, st *zoneObjects) error {
	cands, err := p.listCandidates(ctx, refPrefix(p.opts.Owner, zone))
	if err != nil {
		return err
	}
	if err := p.readTags(ctx, cands); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cands {
		tags := p.tags[c.id]
		if owner, ok := tags[tagOwner]; ok && owner != p.opts.Owner {
			continue // another installation's, whatever its reference says
		}
		c.tagged = tags[tagOwner] == p.opts.Owner && tags[tagZone] == zone
		c.name = tags[tagName]
		if c.name == "" {
			c.name = c.id
		}
		st.owned = append(st.owned, c)
		if c.cfg == nil {
			// Listed without its settings: nothing to compare or update.
			// Not used; a new check (next generation) is made if one is
			// needed, and this one deleted once no set uses it.
			p.gens[c.hash] = max(p.gens[c.hash], c.gen+1)
			continue
		}
		if i, ok := st.byHash[c.hash]; !ok || c.gen < st.owned[i].gen {
			st.byHash[c.hash] = len(st.owned) - 1
		}
	}
	st.listed = true
	return nil
}

// listCandidates pages through the account's health checks and returns
// those whose CallerReference starts with prefix, their tags not read yet.
func (p *Provider) listCandidates(ctx context.Context, prefix string) ([]ownedCheck, error) {
	var cands []ownedCheck
	in := &r53.ListHealthChecksInput{MaxItems: aws.Int32(1000)}
	for {
		var out *r53.ListHealthChecksOutput
		err := p.call(ctx, opListChecks, func(ctx context.Context) (err error) {
			out, err = p.api.ListHealthChecks(ctx, in)
			return answered(opListChecks, out, err)
		})
		if err != nil {
			return nil, fmt.Errorf("list health checks: %w", err)
		}
		for _, hc := range out.HealthChecks {
			hash, gen, ok := parseRef(prefix, aws.ToString(hc.CallerReference))
			if !ok {
				continue
			}
			if aws.ToString(hc.Id) == "" {
				return nil, fmt.Errorf("list health checks: %w", malformed(opListChecks, "id of check "+aws.ToString(hc.CallerReference)))
			}
			cfg := hc.HealthCheckConfig
			cands = append(cands, ownedCheck{id: aws.ToString(hc.Id), hash: hash, gen: gen, version: aws.ToInt64(hc.HealthCheckVersion), cfg: cfg,
				calculated: cfg != nil && cfg.Type == types.HealthCheckTypeCalculated})
		}
		if !out.IsTruncated || aws.ToString(out.NextMarker) == "" {
			return cands, nil
		}
		in = &r53.ListHealthChecksInput{MaxItems: in.MaxItems, Marker: out.NextMarker}
	}
}

// readTags fills the tag cache for the checks it lacks, 10 per call
// (ListTagsForResources' limit).
func (p *Provider) readTags(ctx context.Context, cands []ownedCheck) error {
	var ids []string
	p.mu.Lock()
	for _, c := range cands {
		if _, ok := p.tags[c.id]; !ok {
			ids = append(ids, c.id)
		}
	}
	p.mu.Unlock()
	for len(ids) > 0 {
		batch := ids[:min(len(ids), 10)]
		ids = ids[len(batch):]
		var out *r53.ListTagsForResourcesOutput
		err := p.call(ctx, opListTags, func(ctx context.Context) (err error) {
			out, err = p.api.ListTagsForResources(ctx, &r53.ListTagsForResourcesInput{ResourceType: types.TagResourceTypeHealthcheck, ResourceIds: batch})
			return answered(opListTags, out, err)
		})
		if err != nil {
			return fmt.Errorf("read health check tags: %w", err)
		}
		p.mu.Lock()
		for _, id := range batch {
			p.tags[id] = map[string]string{} // listed without tags: none
		}
		for _, set := range out.ResourceTagSets {
			m := map[string]string{}
			for _, t := range set.Tags {
				m[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			p.tags[aws.ToString(set.ResourceId)] = m
		}
		p.mu.Unlock()
	}
	return nil
}

// ensureCheck returns the id of spec's check, creating it, writing its tags
// or updating its settings when needed (in a dry run: only reported, with a
// placeholder id for a check to create). "" with a nil error: Route 53
// refused it (reported in res); the error ends the pass.
func (p *Provider) ensureCheck(ctx context.Context, zone string, st *zoneObjects, spec checkSpec, res *providers.ObjectResult) (string, error) {
	if i, ok := st.byHash[spec.hash()]; ok {
		c := &st.owned[i]
		if err := p.settleCheck(ctx, zone, st, c, spec, res, true); err != nil {
			return "", err
		}
		return c.id, nil
	}
	if st.dryRun {
		res.Changes = append(res.Changes, providers.ObjectChange{Kind: providers.KindHealthCheck, Name: spec.Name, Op: "create", Detail: spec.describe()})
		return placeholder(spec), nil
	}
	p.mu.Lock()
	refusedAt, refused := p.refused[spec.hash()]
	gen := p.gens[spec.hash()]
	p.mu.Unlock()
	if refused && p.opts.Now().Sub(refusedAt) < refusedRetry {
		return "", nil
	}
	ch := providers.ObjectChange{Kind: providers.KindHealthCheck, Name: spec.Name, Op: "create", Detail: spec.describe()}
	out, gen, err := p.createCheck(ctx, zone, spec, gen, res)
	switch {
	case err == nil:
	case fatal(err):
		return "", fmt.Errorf("route53 zone %s: create health check %s: %w", zone, spec.Name, err)
	default:
		ch.Err = err
		res.Changes = append(res.Changes, ch)
		p.mu.Lock()
		p.refused[spec.hash()] = p.opts.Now()
		p.mu.Unlock()
		p.log.Warn("route53 refused a health check; its sets go without one", "zone", zone, "check", spec.Name, "err", err)
		return "", nil
	}
	res.Changes = append(res.Changes, ch)
	hc := out.HealthCheck
	if hc == nil || aws.ToString(hc.Id) == "" {
		// Made or not, the next pass's create of the same reference tells.
		return "", fmt.Errorf("route53 zone %s: create health check %s: %w", zone, spec.Name, malformed(opCreateCheck, "health check id"))
	}
	p.mu.Lock()
	p.gens[spec.hash()] = gen + 1
	delete(p.refused, spec.hash())
	p.mu.Unlock()
	st.owned = append(st.owned, ownedCheck{id: aws.ToString(hc.Id), hash: spec.hash(), gen: gen, name: spec.Name, version: aws.ToInt64(hc.HealthCheckVersion),
		calculated: spec.Type == types.HealthCheckTypeCalculated, cfg: hc.HealthCheckConfig})
	st.byHash[spec.hash()] = len(st.owned) - 1
	c := &st.owned[len(st.owned)-1]
	// An answer for an earlier create of the same reference (a retry after
	// a lost answer) carries that check's settings: settleCheck updates them.
	if err := p.settleCheck(ctx, zone, st, c, spec, res, false); err != nil {
		return "", err
	}
	return c.id, nil
}

// createCheck creates spec's check with the caller reference of generation
// gen, or of the next ones while Route 53 answers that the reference was
// used (at most maxGenerations tries); it returns the answer and the
// generation of the last try.
func (p *Provider) createCheck(ctx context.Context, zone string, spec checkSpec, gen int, res *providers.ObjectResult) (*r53.CreateHealthCheckOutput, int, error) {
	var out *r53.CreateHealthCheckOutput
	var err error
	for tries := 0; tries < maxGenerations; tries, gen = tries+1, gen+1 {
		in := &r53.CreateHealthCheckInput{CallerReference: aws.String(callerRef(refPrefix(p.opts.Owner, zone), spec, gen)), HealthCheckConfig: spec.config()}
		err = p.call(ctx, opCreateCheck, func(ctx context.Context) (err error) {
			res.Calls++
			out, err = p.api.CreateHealthCheck(ctx, in)
			return answered(opCreateCheck, out, err)
		})
		if errorCode(err) != "HealthCheckAlreadyExists" {
			break
		}
	}
	return out, gen, err
}

// settleCheck writes our tags on c when it lacks them (report: as a change
// of its own) and updates its settings where they drifted from spec.
func (p *Provider) settleCheck(ctx context.Context, zone string, st *zoneObjects, c *ownedCheck, spec checkSpec, res *providers.ObjectResult, report bool) error {
	if !c.tagged {
		if err := p.tagCheck(ctx, zone, st, c, spec, res, report); err != nil {
			return err
		}
	}
	if drift := spec.drift(c.cfg); len(drift) > 0 {
		return p.updateCheck(ctx, zone, st, c, spec, drift, res)
	}
	return nil
}

// tagCheck writes our tags on c (owner, zone, Name).
func (p *Provider) tagCheck(ctx context.Context, zone string, st *zoneObjects, c *ownedCheck, spec checkSpec, res *providers.ObjectResult, report bool) error {
	tags := map[string]string{tagOwner: p.opts.Owner, tagZone: zone, tagName: spec.Name}
	if st.dryRun {
		if report {
			res.Changes = append(res.Changes, providers.ObjectChange{Kind: providers.KindHealthCheck, Name: spec.Name, Op: "update", Detail: "tags " + c.id})
		}
		return nil
	}
	in := &r53.ChangeTagsForResourceInput{ResourceType: types.TagResourceTypeHealthcheck, ResourceId: aws.String(c.id)}
	for _, k := range []string{tagOwner, tagZone, tagName} {
		in.AddTags = append(in.AddTags, types.Tag{Key: aws.String(k), Value: aws.String(tags[k])})
	}
	err := p.call(ctx, opChangeTags, func(ctx context.Context) error {
		res.Calls++
		_, err := p.api.ChangeTagsForResource(ctx, in)
		return err
	})
	if err != nil && fatal(err) {
		return fmt.Errorf("route53 zone %s: tag health check %s: %w", zone, c.id, err)
	}
	if err == nil {
		c.tagged = true
		p.mu.Lock()
		p.tags[c.id] = tags
		p.mu.Unlock()
	}
	// A check just created is reported by its create; an adopted one by its
	// tagging; a refusal always.
	if err != nil || report {
		res.Changes = append(res.Changes, providers.ObjectChange{Kind: providers.KindHealthCheck, Name: spec.Name, Op: "update", Detail: "tags " + c.id, Err: err})
	}
	return nil
}

// updateCheck brings c's settings back to spec (what UpdateHealthCheck can
// change), at the version listed: another writer's change in between makes
// Route 53 refuse it, and the next pass reads it again.
func (p *Provider) updateCheck(ctx context.Context, zone string, st *zoneObjects, c *ownedCheck, spec checkSpec, drift []string, res *providers.ObjectResult) error {
	ch := providers.ObjectChange{Kind: providers.KindHealthCheck, Name: spec.Name, Op: "update", Detail: c.id + ": " + strings.Join(drift, ", ")}
	if st.dryRun {
		res.Changes = append(res.Changes, ch)
		return nil
	}
	cfg := spec.config()
	live := c.cfg
	if live == nil {
		live = &checkConfig{}
	}
	in := &r53.UpdateHealthCheckInput{HealthCheckId: aws.String(c.id), HealthCheckVersion: aws.Int64(c.version),
		Disabled: aws.Bool(false), Inverted: aws.Bool(false)}
	if spec.Type == types.HealthCheckTypeCalculated {
		in.ChildHealthChecks, in.HealthThreshold = cfg.ChildHealthChecks, cfg.HealthThreshold
	} else {
		in.Port, in.FailureThreshold, in.ResourcePath, in.SearchString = cfg.Port, cfg.FailureThreshold, cfg.ResourcePath, cfg.SearchString
		in.IPAddress, in.FullyQualifiedDomainName, in.EnableSNI = cfg.IPAddress, cfg.FullyQualifiedDomainName, cfg.EnableSNI
		for what, unset := range map[types.ResettableElementName]bool{
			types.ResettableElementNameResourcePath:             cfg.ResourcePath == nil && aws.ToString(live.ResourcePath) != "",
			types.ResettableElementNameFullyQualifiedDomainName: cfg.FullyQualifiedDomainName == nil && aws.ToString(live.FullyQualifiedDomainName) != "",
		} {
			if unset {
				in.ResetElements = append(in.ResetElements, what)
			}
		}
	}
	var out *r53.UpdateHealthCheckOutput
	err := p.call(ctx, opUpdateCheck, func(ctx context.Context) (err error) {
		res.Calls++
		out, err = p.api.UpdateHealthCheck(ctx, in)
		return answered(opUpdateCheck, out, err)
	})
	if err == nil && out.HealthCheck == nil {
		err = malformed(opUpdateCheck, "health check")
	}
	switch {
	case err == nil:
		c.cfg, c.version = out.HealthCheck.HealthCheckConfig, aws.ToInt64(out.HealthCheck.HealthCheckVersion)
	case fatal(err):
		return fmt.Errorf("route53 zone %s: update health check %s: %w", zone, c.id, err)
	default:
		ch.Err = err
	}
	res.Changes = append(res.Changes, ch)
	return nil
}

// describe is a spec in a few words, for dry runs and logs.
func (s checkSpec) describe() string {
	if s.Type == types.HealthCheckTypeCalculated {
		return fmt.Sprintf("CALCULATED, healthy while %d of %s is", calculatedAtLeast, strings.Join(s.Children, ","))
	}
	d := fmt.Sprintf("%s every %ds, %d failures", s.Type, s.Interval, s.Failure)
	if s.Search != "" {
		d += fmt.Sprintf(", body has %q", s.Search)
	}
	return d
}

func deleteCheckInput(id string) *r53.DeleteHealthCheckInput {
	return &r53.DeleteHealthCheckInput{HealthCheckId: aws.String(id)}
}
