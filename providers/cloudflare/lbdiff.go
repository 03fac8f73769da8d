package cloudflare

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Comparisons: "" when cur already is want, else what differs.

func monitorDiff(cur, want Monitor) string {
	var d []string
	add := func(field string, differs bool, from, to any) {
		if differs {
			d = append(d, fmt.Sprintf("%s %v → %v", field, from, to))
		}
	}
	add("type", cur.Type != want.Type, cur.Type, want.Type)
	add("description", cur.Description != want.Description, cur.Description, want.Description)
	add("method", cur.Method != want.Method, cur.Method, want.Method)
	add("port", cur.Port != want.Port, cur.Port, want.Port)
	add("interval", cur.Interval != want.Interval, cur.Interval, want.Interval)
	add("timeout", cur.Timeout != want.Timeout, cur.Timeout, want.Timeout)
	add("retries", cur.Retries != want.Retries, cur.Retries, want.Retries)
	add("consecutive_down", cur.ConsecutiveDown != want.ConsecutiveDown, cur.ConsecutiveDown, want.ConsecutiveDown)
	add("consecutive_up", cur.ConsecutiveUp != want.ConsecutiveUp, cur.ConsecutiveUp, want.ConsecutiveUp)
	if want.Type != "tcp" {
		add("path", cur.Path != want.Path, cur.Path, want.Path)
		add("header", !headersEqual(cur.Header, want.Header), cur.Header, want.Header)
		add("expected_codes", cur.ExpectedCodes != want.ExpectedCodes, cur.ExpectedCodes, want.ExpectedCodes)
		add("expected_body", cur.ExpectedBody != want.ExpectedBody, cur.ExpectedBody, want.ExpectedBody)
		add("follow_redirects", cur.FollowRedirects != want.FollowRedirects, cur.FollowRedirects, want.FollowRedirects)
		add("allow_insecure", cur.AllowInsecure != want.AllowInsecure, cur.AllowInsecure, want.AllowInsecure)
	}
	return strings.Join(d, ", ")
}

func headersEqual(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func poolDiff(cur, want Pool) string {
	var d []string
	if cur.Description != want.Description {
		d = append(d, "description")
	}
	if cur.Enabled != want.Enabled {
		d = append(d, fmt.Sprintf("enabled %v → %v", cur.Enabled, want.Enabled))
	}
	if cur.MinimumOrigins != want.MinimumOrigins {
		d = append(d, fmt.Sprintf("minimum_origins %d → %d", cur.MinimumOrigins, want.MinimumOrigins))
	}
	if cur.Monitor != want.Monitor {
		d = append(d, fmt.Sprintf("monitor %q → %q", cur.Monitor, want.Monitor))
	}
	old := map[string]Origin{}
	for _, o := range cur.Origins {
		old[o.Name] = o
	}
	for _, o := range want.Origins {
		c, ok := old[o.Name]
		switch {
		case !ok:
			d = append(d, fmt.Sprintf("+origin %s (weight %.2f%s)", o.Name, o.Weight, offText(o.Enabled)))
		case c.Address != o.Address:
			d = append(d, fmt.Sprintf("origin %s address %s → %s", o.Name, c.Address, o.Address))
		}
		if ok && c.Enabled != o.Enabled {
			d = append(d, fmt.Sprintf("origin %s enabled %v → %v", o.Name, c.Enabled, o.Enabled))
		}
		if ok && round2(c.Weight) != round2(o.Weight) {
			d = append(d, fmt.Sprintf("origin %s weight %.2f → %.2f", o.Name, c.Weight, o.Weight))
		}
		delete(old, o.Name)
	}
	for _, o := range cur.Origins {
		if _, gone := old[o.Name]; gone {
			d = append(d, "-origin "+o.Name)
		}
	}
	if len(d) == 0 && !slices.EqualFunc(cur.Origins, want.Origins, func(a, b Origin) bool { return a.Name == b.Name }) {
		d = append(d, "origin order")
	}
	return strings.Join(d, ", ")
}

func offText(enabled bool) string {
	if enabled {
		return ""
	}
	return ", disabled"
}

func lbDiff(cur, want LoadBalancer, names map[string]string) string {
	var d []string
	pn := func(ids []string) string { return poolNames(ids, names) }
	if cur.Description != want.Description {
		d = append(d, "description")
	}
	if cur.Enabled != want.Enabled {
		d = append(d, fmt.Sprintf("enabled %v → %v", cur.Enabled, want.Enabled))
	}
	if cur.Proxied != want.Proxied {
		d = append(d, fmt.Sprintf("proxied %v → %v", cur.Proxied, want.Proxied))
	}
	if !want.Proxied && cur.TTL != want.TTL {
		d = append(d, fmt.Sprintf("ttl %d → %d", cur.TTL, want.TTL))
	}
	if cur.SteeringPolicy != want.SteeringPolicy {
		d = append(d, fmt.Sprintf("steering_policy %q → %q", cur.SteeringPolicy, want.SteeringPolicy))
	}
	if cur.FallbackPool != want.FallbackPool {
		d = append(d, fmt.Sprintf("fallback_pool %s → %s", pn([]string{cur.FallbackPool}), pn([]string{want.FallbackPool})))
	}
	if !slices.Equal(cur.DefaultPools, want.DefaultPools) {
		d = append(d, fmt.Sprintf("default_pools [%s] → [%s]", pn(cur.DefaultPools), pn(want.DefaultPools)))
	}
	for _, f := range []struct {
		name      string
		cur, want map[string][]string
	}{{"country_pools", cur.CountryPools, want.CountryPools}, {"region_pools", cur.RegionPools, want.RegionPools}} {
		for _, k := range slices.Sorted(maps.Keys(union(f.cur, f.want))) {
			if !slices.Equal(f.cur[k], f.want[k]) {
				d = append(d, fmt.Sprintf("%s[%s] [%s] → [%s]", f.name, k, pn(f.cur[k]), pn(f.want[k])))
			}
		}
	}
	if want.SteeringPolicy == "random" {
		if cur.DefaultWeight != want.DefaultWeight {
			d = append(d, fmt.Sprintf("random_steering.default_weight %.2f → %.2f", cur.DefaultWeight, want.DefaultWeight))
		}
		ids := slices.Sorted(maps.Keys(union(cur.PoolWeights, want.PoolWeights)))
		for _, id := range ids {
			a, inCur := cur.PoolWeights[id]
			b, inWant := want.PoolWeights[id]
			if inCur != inWant || round2(a) != round2(b) {
				d = append(d, fmt.Sprintf("weight %s %.2f → %.2f", pn([]string{id}), a, b))
			}
		}
	}
	return strings.Join(d, ", ")
}

func union[V any](a, b map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

func poolNames(ids []string, names map[string]string) string {
	out := make([]string, len(ids))
	for i, id := range ids {
		if n, ok := names[id]; ok {
			out[i] = n
		} else {
			out[i] = id
		}
	}
	return strings.Join(out, " ")
}

func monitorSummary(m Monitor) string {
	s := fmt.Sprintf("%s port %d every %ds, down after %d, up after %d", m.Type, m.Port, m.Interval, m.ConsecutiveDown, m.ConsecutiveUp)
	if m.Type != "tcp" {
		s = fmt.Sprintf("%s %s %s expect %s, ", m.Type, m.Method, m.Path, m.ExpectedCodes) + s[len(m.Type)+1:]
	}
	return s
}

func poolSummary(p Pool) string {
	parts := make([]string, 0, len(p.Origins))
	for _, o := range p.Origins {
		parts = append(parts, fmt.Sprintf("%s %.2f%s", o.Address, o.Weight, offText(o.Enabled)))
	}
	s := strings.Join(parts, ", ")
	if !p.Enabled {
		s += "; pool disabled"
	}
	return s
}

func lbSummary(lb LoadBalancer, names map[string]string) string {
	s := fmt.Sprintf("%s, default_pools [%s], fallback %s", lb.SteeringPolicy, poolNames(lb.DefaultPools, names), poolNames([]string{lb.FallbackPool}, names))
	if lb.SteeringPolicy == "random" {
		var w []string
		for _, id := range lb.DefaultPools {
			w = append(w, fmt.Sprintf("%s=%.2f", poolNames([]string{id}, names), lb.PoolWeights[id]))
		}
		s += ", weights " + strings.Join(w, " ")
	}
	if n := len(lb.CountryPools) + len(lb.RegionPools); n > 0 {
		s += fmt.Sprintf(", %d countries, %d regions", len(lb.CountryPools), len(lb.RegionPools))
	}
	return s
}
