package model

// ECSDependents returns the names of the services whose answer depends on
// where the client is (strategy geo or latency) or on its network (sticky:
// subnet): the ones a forged EDNS Client Subnet option can steer. In the
// order of the services.
func (d *Desired) ECSDependents() []string {
	var out []string
	for _, s := range d.Services {
		if s.Strategy == StrategyGeo || s.Strategy == StrategyLatency || s.Sticky == StickySubnet {
			out = append(out, s.Name)
		}
	}
	return out
}

// ECSTrustedFromEverySource reports whether the EDNS Client Subnet of
// every source is believed: geo.ecs_trusted is absent (nil). An empty
// list believes no one.
func (d *Desired) ECSTrustedFromEverySource() bool { return d.Geo.ECSTrusted == nil }
