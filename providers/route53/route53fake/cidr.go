package route53fake

import (
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"time"
)

// CidrCollection is a CIDR collection as CidrCollections reports it and
// PutCidrCollection seeds it.
type CidrCollection struct {
	ID              string
	Name            string
	CallerReference string
	Version         int64
	Locations       map[string][]string // location name → CIDR blocks, sorted
}

// CidrRoutingConfig links an IP-based record set to a location of a CIDR
// collection; LocationName "*" is the default record.
type CidrRoutingConfig struct {
	CollectionID, LocationName string
}

type cidrCollection struct {
	id, name, caller string
	version          int64
	locations        map[string][]netip.Prefix // sorted by their text
}

func (c *cidrCollection) export() CidrCollection {
	out := CidrCollection{ID: c.id, Name: c.name, CallerReference: c.caller, Version: c.version, Locations: map[string][]string{}}
	for loc, blocks := range c.locations {
		for _, b := range blocks {
			out.Locations[loc] = append(out.Locations[loc], b.String())
		}
	}
	return out
}

func (c *cidrCollection) toXML() xmlCollection {
	return xmlCollection{Arn: "arn:aws:route53:::cidrcollection/" + c.id, ID: c.id, Name: c.name, Version: c.version}
}

// Limits of CIDR collections from the Route 53 API reference and Developer
// Guide (IP-based routing).
const (
	MaxCidrBlocksPerRequest = 1000 // CIDR blocks in one ChangeCidrCollection request
	MaxIPv4PrefixLen        = 24   // IPv4 blocks are /1 to /24; /0 is the default ("*") location
	MaxIPv6PrefixLen        = 48   // IPv6 blocks are /1 to /48
)

var (
	collectionNameRE = regexp.MustCompile(`^[0-9A-Za-z_\-]{1,64}$`)
	locationNameRE   = regexp.MustCompile(`^[0-9A-Za-z_\-]{1,16}$`)
	recordLocationRE = regexp.MustCompile(`^[0-9A-Za-z_\-*]{1,16}$`)
	asciiRE          = regexp.MustCompile(`^[\x00-\x7f]{1,64}$`)
)

const (
	errNoSuchLocation  = "NoSuchCidrLocationException"
	errNoSuchColl      = "NoSuchCidrCollectionException"
	errCollectionInUse = "CidrCollectionInUseException"
)

func noSuchCollection(id string) *apiError {
	return &apiError{http.StatusNotFound, errNoSuchColl, "The CIDR collection " + id + " does not exist."}
}

// checkBlock parses one CIDR block of a ChangeCidrCollection request.
func checkBlock(v string) (netip.Prefix, string) {
	p, err := netip.ParsePrefix(v)
	switch {
	case err != nil:
		return p, fmt.Sprintf("'%s' is not a valid CIDR block", v)
	case p.Addr().Is4In6():
		return p, fmt.Sprintf("'%s' is an IPv4-mapped IPv6 block; give the IPv4 block", v)
	case p.Addr().Is4() && (p.Bits() < 1 || p.Bits() > MaxIPv4PrefixLen):
		return p, fmt.Sprintf("'%s': IPv4 CIDR blocks must be between /1 and /%d (use the default location \"*\" for /0)", v, MaxIPv4PrefixLen)
	case p.Addr().Is6() && (p.Bits() < 1 || p.Bits() > MaxIPv6PrefixLen):
		return p, fmt.Sprintf("'%s': IPv6 CIDR blocks must be between /1 and /%d (use the default location \"*\" for /0)", v, MaxIPv6PrefixLen)
	case p.Masked() != p:
		return p, fmt.Sprintf("'%s' has host bits set; the block is %s", v, p.Masked())
	}
	return p, ""
}

func (s *Server) createCollection(r *http.Request, _ string) (any, *apiError) {
	var req xmlCreateCollectionRequest
	if err := readXML(r, &req); err != nil {
		return nil, err
	}
	name, ref := deref(req.Name), deref(req.CallerReference)
	var m constraints
	m.add(!collectionNameRE.MatchString(name), name, "name", `have length between 1 and 64 and satisfy regular expression pattern: [0-9A-Za-z_\-]+`)
	m.add(!asciiRE.MatchString(ref), ref, "callerReference", `have length between 1 and 64 and satisfy regular expression pattern: \p{ASCII}+`)
	if err := m.err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.collections {
		if c.name != name && c.caller != ref {
			continue
		}
		if c.name == name && c.caller == ref {
			return created{xmlCreateCollectionResponse{Collection: c.toXML()}, s.URL() + "/2013-04-01/cidrcollection/" + c.id}, nil
		}
		return nil, &apiError{http.StatusBadRequest, "CidrCollectionAlreadyExistsException",
			fmt.Sprintf("A CIDR collection with the name %s or the caller reference %s already exists with a different caller reference or name.", name, ref)}
	}
	c := s.addCollection(name, ref)
	return created{xmlCreateCollectionResponse{Collection: c.toXML()}, s.URL() + "/2013-04-01/cidrcollection/" + c.id}, nil
}

// addCollection stores an empty collection at version 1. Called with s.mu
// held.
func (s *Server) addCollection(name, ref string) *cidrCollection {
	s.seq++
	c := &cidrCollection{id: uuid(s.seq), name: name, caller: ref, version: 1, locations: map[string][]netip.Prefix{}}
	s.collections[c.id] = c
	return c
}

func (s *Server) listCollections(r *http.Request, _ string) (any, *apiError) {
	maxItems, token, aerr := pageParams(r)
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := xmlListCollectionsResponse{Collections: []xmlCollection{}}
	ids, next := page(slices.Sorted(maps.Keys(s.collections)), token, maxItems)
	for _, id := range ids {
		out.Collections = append(out.Collections, s.collections[id].toXML())
	}
	out.NextToken = next
	return out, nil
}

func pageParams(r *http.Request) (int, string, *apiError) {
	q := r.URL.Query()
	n, err := maxItemsParam(q.Get("maxresults"), 100, math.MaxInt32)
	return n, q.Get("nexttoken"), err
}

// page cuts sorted keys at token (the first key of the page) to max
// items; next is the first key of the next page, "" at the end.
func page(keys []string, token string, max int) (out []string, next string) {
	i, _ := slices.BinarySearch(keys, token)
	keys = keys[i:]
	if len(keys) > max {
		return keys[:max], keys[max]
	}
	return keys, ""
}

// changeCollection is ChangeCidrCollection: the changes apply together or
// not at all.
func (s *Server) changeCollection(r *http.Request, _ string) (any, *apiError) {
	var req xmlChangeCollectionRequest
	if err := readXML(r, &req); err != nil {
		return nil, err
	}
	var changes []xmlCidrChange
	if req.Changes != nil {
		changes = req.Changes.Changes
	}
	if err := checkCidrChanges(changes); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id, c, aerr := s.collectionOf(r)
	if aerr != nil {
		return nil, aerr
	}
	if req.CollectionVersion != nil && *req.CollectionVersion != c.version {
		return nil, &apiError{http.StatusConflict, "CidrCollectionVersionMismatchException",
			fmt.Sprintf("The CIDR collection version in the request (%d) doesn't match the collection's current version (%d).", *req.CollectionVersion, c.version)}
	}
	work := applyCidrChanges(c.locations, changes)
	if err := s.checkLocations(id, c.locations, work); err != nil {
		return nil, err
	}
	c.locations = work
	c.version++
	s.seq++
	change := fmt.Sprintf("C%012dFAKE", s.seq)
	s.changes[change] = time.Now()
	return xmlChangeCollectionResponse{ID: change}, nil
}

// applyCidrChanges returns the locations after changes (checked), leaving
// locations as they are.
func applyCidrChanges(locations map[string][]netip.Prefix, changes []xmlCidrChange) map[string][]netip.Prefix {
	work := maps.Clone(locations)
	for _, ch := range changes {
		loc := *ch.LocationName
		for _, v := range ch.CidrList.Cidrs {
			p, _ := checkBlock(v)
			blocks := work[loc]
			has := slices.Contains(blocks, p)
			switch {
			case ch.Action == "PUT" && !has:
				blocks = append(slices.Clone(blocks), p)
				slices.SortFunc(blocks, func(a, b netip.Prefix) int { return strings.Compare(a.String(), b.String()) })
				work[loc] = blocks
			case ch.Action == "DELETE_IF_EXISTS" && has:
				blocks = slices.DeleteFunc(slices.Clone(blocks), func(b netip.Prefix) bool { return b == p })
				if len(blocks) == 0 {
					delete(work, loc)
				} else {
					work[loc] = blocks
				}
			}
		}
	}
	return work
}

// checkLocations checks the locations work of collection id, which were
// old: a block is in one location at most, and a location a record set
// routes by keeps a block. Callers hold s.mu.
func (s *Server) checkLocations(id string, old, work map[string][]netip.Prefix) *apiError {
	// A block is in one location at most; name the one that had it first.
	owner := map[netip.Prefix]string{}
	for loc, blocks := range work {
		for _, p := range blocks {
			if slices.Contains(old[loc], p) {
				owner[p] = loc
			}
		}
	}
	for _, loc := range slices.Sorted(maps.Keys(work)) {
		for _, p := range work[loc] {
			if other, dup := owner[p]; dup && other != loc {
				return &apiError{http.StatusBadRequest, "CidrBlockInUseException",
					fmt.Sprintf("The CIDR block %s is already in use by the location %s of this collection; one request can DELETE_IF_EXISTS it there and PUT it in %s.", p, other, loc)}
			}
			owner[p] = loc
		}
	}
	for _, u := range s.cidrUsers(id) {
		if loc := u.Cidr.LocationName; loc != "*" && len(work[loc]) == 0 {
			return &apiError{http.StatusBadRequest, "CidrBlockInUseException",
				fmt.Sprintf("The location %s would have no CIDR block left, but the resource record set %s in hosted zone %s routes by it.", loc, u.describe(), u.zone)}
		}
	}
	return nil
}

// checkCidrChanges validates the shape of a ChangeCidrCollection request.
func checkCidrChanges(changes []xmlCidrChange) *apiError {
	var m constraints
	m.add(len(changes) < 1, "[]", "changes", "have length greater than or equal to 1")
	total := 0
	for i, ch := range changes {
		at := fmt.Sprintf("changes.%d.member.", i+1)
		loc := deref(ch.LocationName)
		m.add(!locationNameRE.MatchString(loc), loc, at+"locationName", `have length between 1 and 16 and satisfy regular expression pattern: [0-9A-Za-z_\-]+`)
		m.add(ch.Action != "PUT" && ch.Action != "DELETE_IF_EXISTS", ch.Action, at+"action", "satisfy enum value set: [PUT, DELETE_IF_EXISTS]")
		n := 0
		if ch.CidrList != nil {
			n = len(ch.CidrList.Cidrs)
			for j, v := range ch.CidrList.Cidrs {
				m.add(len(v) < 1 || len(v) > 50, v, fmt.Sprintf("%scidrList.%d.member", at, j+1), "have length between 1 and 50")
			}
		}
		m.add(n < 1 || n > MaxCidrBlocksPerRequest, n, at+"cidrList", "have length between 1 and 1000")
		total += n
	}
	if err := m.err(); err != nil {
		return err
	}
	if total > MaxCidrBlocksPerRequest {
		return invalidInput("Invalid parameter: the request changes %d CIDR blocks; at most %d are allowed in one request", total, MaxCidrBlocksPerRequest)
	}
	var bad []string
	for _, ch := range changes {
		for _, v := range ch.CidrList.Cidrs {
			if _, problem := checkBlock(v); problem != "" {
				bad = append(bad, problem)
			}
		}
	}
	if len(bad) > 0 {
		return invalidInput("Invalid CIDR block: %s", strings.Join(bad, "; "))
	}
	return nil
}

// cidrUsers returns the record sets that route by collection id. Called
// with s.mu held.
func (s *Server) cidrUsers(id string) []usedBy {
	var out []usedBy
	for _, zid := range slices.Sorted(maps.Keys(s.zones)) {
		for _, rs := range s.zones[zid].sorted() {
			if rs.Cidr != nil && rs.Cidr.CollectionID == id {
				out = append(out, usedBy{rs, zid})
			}
		}
	}
	return out
}

func (s *Server) listBlocks(r *http.Request, _ string) (any, *apiError) {
	maxItems, token, aerr := pageParams(r)
	if aerr != nil {
		return nil, aerr
	}
	location := r.URL.Query().Get("location")
	s.mu.Lock()
	defer s.mu.Unlock()
	_, c, aerr := s.collectionOf(r)
	if aerr != nil {
		return nil, aerr
	}
	if _, ok := c.locations[location]; location != "" && !ok {
		return nil, &apiError{http.StatusNotFound, errNoSuchLocation, fmt.Sprintf("The CIDR collection location %s does not exist.", location)}
	}
	var keys []string
	for loc, blocks := range c.locations {
		if location != "" && loc != location {
			continue
		}
		for _, b := range blocks {
			keys = append(keys, loc+" "+b.String())
		}
	}
	slices.Sort(keys)
	keys, next := page(keys, token, maxItems)
	out := xmlListBlocksResponse{Blocks: []xmlCidrBlock{}, NextToken: next}
	for _, k := range keys {
		loc, block, _ := strings.Cut(k, " ")
		out.Blocks = append(out.Blocks, xmlCidrBlock{CidrBlock: block, LocationName: loc})
	}
	return out, nil
}

func (s *Server) listLocations(r *http.Request, _ string) (any, *apiError) {
	maxItems, token, aerr := pageParams(r)
	if aerr != nil {
		return nil, aerr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	_, c, aerr := s.collectionOf(r)
	if aerr != nil {
		return nil, aerr
	}
	locs, next := page(slices.Sorted(maps.Keys(c.locations)), token, maxItems)
	out := xmlListLocationsResponse{Locations: []xmlLocation{}, NextToken: next}
	for _, l := range locs {
		out.Locations = append(out.Locations, xmlLocation{LocationName: l})
	}
	return out, nil
}

// collectionOf returns the id and the collection the request's path names.
// Callers hold s.mu.
func (s *Server) collectionOf(r *http.Request) (string, *cidrCollection, *apiError) {
	id := r.PathValue("id")
	c, ok := s.collections[id]
	if !ok {
		return id, nil, noSuchCollection(id)
	}
	return id, c, nil
}

func (s *Server) deleteCollection(r *http.Request, _ string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	id, c, aerr := s.collectionOf(r)
	if aerr != nil {
		return nil, aerr
	}
	if users := s.cidrUsers(id); len(users) > 0 {
		return nil, &apiError{http.StatusBadRequest, errCollectionInUse,
			fmt.Sprintf("The CIDR collection %s is in use by the resource record set %s in hosted zone %s.", id, users[0].describe(), users[0].zone)}
	}
	if len(c.locations) > 0 {
		return nil, &apiError{http.StatusBadRequest, errCollectionInUse,
			fmt.Sprintf("The CIDR collection %s isn't empty: it has %d locations; delete their CIDR blocks first.", id, len(c.locations))}
	}
	delete(s.collections, id)
	return xmlEmptyResponse{XMLName: response("DeleteCidrCollection")}, nil
}

// CidrCollections returns every CIDR collection with its locations, by id.
func (s *Server) CidrCollections() []CidrCollection {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]CidrCollection, 0, len(s.collections))
	for _, id := range slices.Sorted(maps.Keys(s.collections)) {
		out = append(out, s.collections[id].export())
	}
	return out
}

// PutCidrCollection stores a collection as another tool would have
// created it, without Route 53's checks (it panics on a block that does not
// parse), and returns its id (c.ID when set). The version defaults to 1.
func (s *Server) PutCidrCollection(c CidrCollection) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.CallerReference == "" {
		c.CallerReference = fmt.Sprintf("foreign-%d", s.seq+1)
	}
	coll := s.addCollection(c.Name, c.CallerReference)
	if c.ID != "" {
		delete(s.collections, coll.id)
		coll.id = c.ID
		s.collections[coll.id] = coll
	}
	if c.Version > 0 {
		coll.version = c.Version
	}
	for loc, blocks := range c.Locations {
		for _, b := range blocks {
			coll.locations[loc] = append(coll.locations[loc], netip.MustParsePrefix(b))
		}
		slices.SortFunc(coll.locations[loc], func(a, b netip.Prefix) int { return strings.Compare(a.String(), b.String()) })
	}
	return coll.id
}
