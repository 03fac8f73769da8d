package route53fake

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// tagsOf returns the tag map of a health check or hosted zone. Called with
// s.mu held.
func (s *Server) tagsOf(typ, id string) (map[string]string, *apiError) {
	switch typ {
	case "healthcheck":
		h, ok := s.checks[id]
		if !ok {
			return nil, noSuchHealthCheck(id)
		}
		return h.tags, nil
	case "hostedzone":
		z, err := s.zone(id)
		if err != nil {
			return nil, err
		}
		if z.tags == nil {
			z.tags = map[string]string{}
		}
		return z.tags, nil
	}
	return nil, invalidInput("1 validation error detected: Value '%s' at 'resourceType' failed to satisfy constraint: Member must satisfy enum value set: [healthcheck, hostedzone]", typ)
}

func tagSet(typ, id string, tags map[string]string) xmlResourceTagSet {
	out := xmlResourceTagSet{ResourceType: typ, ResourceID: id, Tags: []xmlTag{}}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		out.Tags = append(out.Tags, xmlTag{Key: k, Value: tags[k]})
	}
	return out
}

func (s *Server) changeTags(r *http.Request, _ string) (any, *apiError) {
	var req xmlChangeTagsRequest
	if err := readXML(r, &req); err != nil {
		return nil, err
	}
	var add []xmlTag
	var remove []string
	if req.AddTags != nil {
		add = req.AddTags.Tags
	}
	if req.RemoveTagKeys != nil {
		remove = req.RemoveTagKeys.Keys
	}
	var m constraints
	m.add(req.AddTags != nil && (len(add) < 1 || len(add) > MaxTagsPerResource), len(add), "addTags", "have length between 1 and 10")
	m.add(req.RemoveTagKeys != nil && (len(remove) < 1 || len(remove) > MaxTagsPerResource), len(remove), "removeTagKeys", "have length between 1 and 10")
	for i, t := range add {
		m.add(len(t.Key) > 128, t.Key, fmt.Sprintf("addTags.%d.member.key", i+1), "have length less than or equal to 128")
		m.add(len(t.Value) > 256, t.Value, fmt.Sprintf("addTags.%d.member.value", i+1), "have length less than or equal to 256")
	}
	for i, k := range remove {
		m.add(len(k) > 128, k, fmt.Sprintf("removeTagKeys.%d.member", i+1), "have length less than or equal to 128")
	}
	if err := m.err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	typ, id := r.PathValue("type"), r.PathValue("id")
	tags, aerr := s.tagsOf(typ, id)
	if aerr != nil {
		return nil, aerr
	}
	work := maps.Clone(tags)
	for _, k := range remove {
		delete(work, k)
	}
	for _, t := range add {
		work[t.Key] = t.Value
	}
	if len(work) > MaxTagsPerResource {
		return nil, invalidInput("Invalid parameter: the %s %s would have %d tags; a health check or hosted zone can have at most %d", typ, id, len(work), MaxTagsPerResource)
	}
	clear(tags)
	maps.Copy(tags, work)
	return xmlEmptyResponse{XMLName: response("ChangeTagsForResource")}, nil
}

func (s *Server) listTags(r *http.Request, _ string) (any, *apiError) {
	s.mu.Lock()
	defer s.mu.Unlock()
	typ, id := r.PathValue("type"), r.PathValue("id")
	tags, aerr := s.tagsOf(typ, id)
	if aerr != nil {
		return nil, aerr
	}
	return xmlListTagsResponse{Set: tagSet(typ, id, tags)}, nil
}

func (s *Server) listTagsForResources(r *http.Request, _ string) (any, *apiError) {
	var req xmlListTagsForResourcesRequest
	if err := readXML(r, &req); err != nil {
		return nil, err
	}
	var ids []string
	if req.ResourceIDs != nil {
		ids = req.ResourceIDs.IDs
	}
	var m constraints
	m.add(len(ids) < 1 || len(ids) > 10, "["+strings.Join(ids, ", ")+"]", "resourceIds", "have length between 1 and 10")
	if err := m.err(); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	typ := r.PathValue("type")
	out := xmlListTagsForResourcesResponse{Sets: []xmlResourceTagSet{}}
	for _, id := range ids {
		tags, aerr := s.tagsOf(typ, id)
		if aerr != nil {
			return nil, aerr
		}
		out.Sets = append(out.Sets, tagSet(typ, id, tags))
	}
	return out, nil
}
