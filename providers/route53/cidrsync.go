package route53

import (
	"context"
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	r53 "github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/meridian-gslb/meridian/providers"
)

// maxVersionRetries bounds the re-reads after a CollectionVersion mismatch
// in one pass.
const maxVersionRetries = 3

// cidrState is the zone's CIDR collection as this pass sees it.
type cidrState struct {
	id, name string
	version  int64
	live     map[string]string // CIDR block → location, as listed (and changed since)
	want     map[string]string // CIDR block → location geo.networks need (empty: the collection is not needed)
}

// networksOf returns geo.networks when a geo service of the zone with
// address endpoints has them (they are the same for every service).
func networksOf(zone string, views []providers.ServiceView) []cidrLocation {
	for _, v := range views {
		name := canonicalName(v.Name)
		if name != zone && !strings.HasSuffix(name, "."+zone) || len(v.Networks) == 0 || strings.HasPrefix(name, "*.") {
			continue
		}
		for _, e := range v.Endpoints {
			if e.Type != "CNAME" {
				locs, _ := cidrLocations(v.Networks)
				return locs
			}
		}
	}
	return nil
}

// prepareCIDR makes the zone's collection hold every block geo.networks
// gives (creating the collection and moving blocks between locations as
// needed; blocks and locations no longer wanted go in collectCIDR, after
// the record sets stop using them) and sets st.objs.CIDR. Without networks
// the collection is looked for once per process, so that one left by an
// earlier config is emptied and deleted.
func (p *Provider) prepareCIDR(ctx context.Context, zone string, views []providers.ServiceView, st *zoneObjects, res *providers.ObjectResult) error {
	locs := networksOf(zone, views)
	p.mu.Lock()
	swept := p.cidrSwept[zone]
	if len(locs) > 0 {
		p.cidrSwept[zone] = false // a collection made now is looked for once networks go
	}
	p.mu.Unlock()
	if len(locs) == 0 && swept {
		return nil
	}
	c := &cidrState{name: collectionName(p.opts.Owner, zone), want: map[string]string{}}
	for _, l := range locs {
		for _, b := range l.CIDRs {
			c.want[b] = l.Name
		}
	}
	found, err := p.readCollection(ctx, c)
	if err != nil {
		if len(locs) == 0 {
			p.log.Info("route53 CIDR collections not listed (no geo.networks; needed only to delete an earlier one)", "zone", zone, "err", err)
			p.mu.Lock()
			p.cidrSwept[zone] = true // tried once per process
			p.mu.Unlock()
			return nil
		}
		return fmt.Errorf("route53 zone %s: CIDR collection %s: %w", zone, c.name, err)
	}
	if !found {
		if len(locs) == 0 {
			p.mu.Lock()
			p.cidrSwept[zone] = true
			p.mu.Unlock()
			return nil
		}
		if err := p.createCollection(ctx, zone, c, st.dryRun, res); err != nil || c.id == "" {
			return err
		}
	}
	st.cidr = c
	if len(locs) == 0 {
		return nil
	}
	if err := p.putBlocks(ctx, zone, c, st.dryRun, res); err != nil {
		return err
	}
	present := map[string]bool{}
	for _, loc := range c.live {
		present[loc] = true
	}
	st.objs.CIDR = &CIDRObjects{CollectionID: c.id, Locations: present}
	return nil
}

// readCollection finds c by name and reads its version and blocks.
func (p *Provider) readCollection(ctx context.Context, c *cidrState) (bool, error) {
	in := &r53.ListCidrCollectionsInput{}
	c.id = ""
	for {
		var out *r53.ListCidrCollectionsOutput
		err := p.call(ctx, opListColls, func(ctx context.Context) (err error) {
			out, err = p.api.ListCidrCollections(ctx, in)
			return answered(opListColls, out, err)
		})
		if err != nil {
			return false, fmt.Errorf("list CIDR collections: %w", err)
		}
		for _, s := range out.CidrCollections {
			if aws.ToString(s.Name) == c.name {
				if aws.ToString(s.Id) == "" {
					return false, malformed(opListColls, "collection id")
				}
				c.id, c.version = aws.ToString(s.Id), aws.ToInt64(s.Version)
			}
		}
		if c.id != "" || aws.ToString(out.NextToken) == "" {
			break
		}
		in = &r53.ListCidrCollectionsInput{NextToken: out.NextToken}
	}
	if c.id == "" {
		return false, nil
	}
	c.live = map[string]string{}
	bin := &r53.ListCidrBlocksInput{CollectionId: aws.String(c.id)}
	for {
		var out *r53.ListCidrBlocksOutput
		err := p.call(ctx, opListBlocks, func(ctx context.Context) (err error) {
			out, err = p.api.ListCidrBlocks(ctx, bin)
			return answered(opListBlocks, out, err)
		})
		if err != nil {
			return false, fmt.Errorf("list CIDR blocks of %s: %w", c.id, err)
		}
		for _, b := range out.CidrBlocks {
			block := aws.ToString(b.CidrBlock)
			if pfx, err := netip.ParsePrefix(block); err == nil {
				block = pfx.Masked().String() // as the wanted blocks are written, whatever AWS's spelling
			}
			c.live[block] = aws.ToString(b.LocationName)
		}
		if aws.ToString(out.NextToken) == "" {
			break
		}
		bin = &r53.ListCidrBlocksInput{CollectionId: bin.CollectionId, NextToken: out.NextToken}
	}
	return true, nil
}

// createCollection creates c (in a dry run: reports it, with a placeholder
// id). The name is unique in the account: a create repeated after a lost
// answer is refused as existing, and the collection is then read again.
func (p *Provider) createCollection(ctx context.Context, zone string, c *cidrState, dryRun bool, res *providers.ObjectResult) error {
	ch := providers.ObjectChange{Kind: providers.KindCIDRCollection, Name: c.name, Op: "create"}
	res.Changes = append(res.Changes, ch)
	if dryRun {
		c.id, c.live = "new-"+c.name, map[string]string{}
		return nil
	}
	in := &r53.CreateCidrCollectionInput{Name: aws.String(c.name), CallerReference: aws.String(c.name[:min(len(c.name), 44)] + "-" + strconv.FormatInt(p.opts.Now().UnixNano(), 36))}
	var out *r53.CreateCidrCollectionOutput
	err := p.call(ctx, opCreateColl, func(ctx context.Context) (err error) {
		res.Calls++
		out, err = p.api.CreateCidrCollection(ctx, in)
		if err == nil && (out == nil || out.Collection == nil || aws.ToString(out.Collection.Id) == "") {
			err = malformed(opCreateColl, "collection id")
		}
		return err
	})
	switch {
	case err == nil:
		c.id, c.version, c.live = aws.ToString(out.Collection.Id), aws.ToInt64(out.Collection.Version), map[string]string{}
		return nil
	case errorCode(err) == "CidrCollectionAlreadyExistsException":
		if _, err := p.readCollection(ctx, c); err != nil {
			return fmt.Errorf("route53 zone %s: CIDR collection %s: %w", zone, c.name, err)
		}
		return nil
	case fatal(err):
		return fmt.Errorf("route53 zone %s: create CIDR collection %s: %w", zone, c.name, err)
	}
	res.Changes[len(res.Changes)-1].Err = err
	p.log.Warn("route53 refused the CIDR collection; geo services keep geolocation sets only", "zone", zone, "collection", c.name, "err", err)
	return nil
}

// putBlocks adds the wanted blocks c lacks, moving a block whose location
// changed (deleted from the old one and put in the new in one request).
func (p *Provider) putBlocks(ctx context.Context, zone string, c *cidrState, dryRun bool, res *providers.ObjectResult) error {
	put, del := map[string][]string{}, map[string][]string{}
	for _, b := range slices.Sorted(maps.Keys(c.want)) {
		loc := c.want[b]
		switch old, ok := c.live[b]; {
		case ok && old == loc:
			continue
		case ok:
			del[old] = append(del[old], b)
		}
		put[loc] = append(put[loc], b)
	}
	return p.changeBlocks(ctx, zone, c, put, del, dryRun, res)
}

// changeBlocks sends the block changes in requests of at most 1,000
// blocks (deletes first), each at the collection's version, re-reading the
// version when another writer moved it. A refusal is reported; the blocks
// stay as they were.
func (p *Provider) changeBlocks(ctx context.Context, zone string, c *cidrState, put, del map[string][]string, dryRun bool, res *providers.ObjectResult) error {
	changes, details := blockChanges(put, del)
	for len(changes) > 0 {
		// One request: changes up to 1,000 blocks together.
		n, blocks := 0, 0
		for n < len(changes) && (n == 0 || blocks+len(changes[n].CidrList) <= maxBlocksPerCall) {
			blocks += len(changes[n].CidrList)
			n++
		}
		batch, detail := changes[:n], strings.Join(details[:n], "; ")
		changes, details = changes[n:], details[n:]
		ch := providers.ObjectChange{Kind: providers.KindCIDRCollection, Name: c.name, Op: "update", Detail: detail}
		if !dryRun {
			refusal, err := p.sendBlocks(ctx, zone, c, batch, res)
			if err != nil {
				return err
			}
			ch.Err = refusal
		}
		if ch.Err == nil { // done, or planned in a dry run: the blocks as they are (or would be) now
			for _, chg := range batch {
				for _, b := range chg.CidrList {
					if chg.Action == types.CidrCollectionChangeActionPut {
						c.live[b] = aws.ToString(chg.LocationName)
					} else if c.live[b] == aws.ToString(chg.LocationName) {
						delete(c.live, b)
					}
				}
			}
		}
		res.Changes = append(res.Changes, ch)
	}
	return nil
}

// blockChanges turns the blocks to delete and put, by location, into
// collection changes of at most maxBlocksPerCall blocks each (deletes
// first, locations in order), with a line of detail each.
func blockChanges(put, del map[string][]string) ([]types.CidrCollectionChange, []string) {
	var changes []types.CidrCollectionChange
	var details []string
	for _, step := range []struct {
		action types.CidrCollectionChangeAction
		blocks map[string][]string
	}{{types.CidrCollectionChangeActionDeleteIfExists, del}, {types.CidrCollectionChangeActionPut, put}} {
		for _, loc := range slices.Sorted(maps.Keys(step.blocks)) {
			bs := step.blocks[loc]
			for len(bs) > 0 {
				n := min(len(bs), maxBlocksPerCall)
				changes = append(changes, types.CidrCollectionChange{Action: step.action, LocationName: aws.String(loc), CidrList: bs[:n]})
				details = append(details, fmt.Sprintf("%s %s: %s", step.action, loc, strings.Join(bs[:n], ",")))
				bs = bs[n:]
			}
		}
	}
	return changes, details
}

// sendBlocks sends one request of changes at the collection's version,
// reading the version again (at most maxVersionRetries times) when another
// writer moved it. Route 53's refusal is returned as refusal (logged); err
// ends the pass.
func (p *Provider) sendBlocks(ctx context.Context, zone string, c *cidrState, batch []types.CidrCollectionChange, res *providers.ObjectResult) (refusal, err error) {
	for try := 0; ; try++ {
		in := &r53.ChangeCidrCollectionInput{Id: aws.String(c.id), CollectionVersion: aws.Int64(c.version), Changes: batch}
		err = p.call(ctx, opChangeColl, func(ctx context.Context) error {
			res.Calls++
			_, err := p.api.ChangeCidrCollection(ctx, in)
			return err
		})
		if err == nil {
			c.version++
			return nil, nil
		}
		if errorCode(err) != "CidrCollectionVersionMismatchException" || try >= maxVersionRetries {
			break
		}
		// Another writer changed the collection: read its version again.
		// The blocks of this request are sent as they are (PUT and
		// DELETE_IF_EXISTS are idempotent).
		if _, rerr := p.readCollection(ctx, c); rerr != nil {
			return nil, fmt.Errorf("route53 zone %s: CIDR collection %s: %w", zone, c.name, rerr)
		}
	}
	if fatal(err) {
		return nil, fmt.Errorf("route53 zone %s: change CIDR collection %s: %w", zone, c.name, err)
	}
	p.log.Warn("route53 refused a CIDR collection change", "zone", zone, "collection", c.name, "err", err)
	return err, nil
}

// collectCIDR removes the blocks no longer wanted (their locations go with
// their last block) and, when geo.networks are gone, the collection.
// Route 53 refuses while record sets still use them: reported, and tried
// again on the next pass.
func (p *Provider) collectCIDR(ctx context.Context, zone string, st *zoneObjects, dryRun bool, res *providers.ObjectResult) error {
	c := st.cidr
	if c == nil || c.id == "" || strings.HasPrefix(c.id, "new-") {
		return nil
	}
	del := map[string][]string{}
	for b, loc := range c.live {
		if c.want[b] != loc {
			del[loc] = append(del[loc], b)
		}
	}
	for _, bs := range del {
		slices.Sort(bs)
	}
	failed := res.Failed()
	if err := p.changeBlocks(ctx, zone, c, nil, del, dryRun, res); err != nil {
		return err
	}
	if len(c.want) > 0 || res.Failed() > failed {
		return nil
	}
	ch := providers.ObjectChange{Kind: providers.KindCIDRCollection, Name: c.name, Op: "delete", Detail: c.id}
	if !dryRun {
		err := p.call(ctx, opDeleteColl, func(ctx context.Context) error {
			res.Calls++
			_, err := p.api.DeleteCidrCollection(ctx, &r53.DeleteCidrCollectionInput{Id: aws.String(c.id)})
			return err
		})
		switch {
		case err == nil || errorCode(err) == "NoSuchCidrCollectionException":
			p.mu.Lock()
			p.cidrSwept[zone] = true
			p.mu.Unlock()
		case fatal(err):
			return fmt.Errorf("route53 zone %s: delete CIDR collection %s: %w", zone, c.name, err)
		default:
			ch.Err = err
		}
	}
	res.Changes = append(res.Changes, ch)
	return nil
}
