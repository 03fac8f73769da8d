package xfr

import (
	"fmt"
	"net/netip"
	"time"

	"github.com/miekg/dns"
)

// Notify sends NOTIFY for zone apex at serial to each of its notify targets,
// signed with the zone's key, in the background: attempts follow
// Options.NotifyBackoff until a target answers NOERROR. A newer Notify for
// the same zone and target supersedes a pending one.
func (s *Server) Notify(apex string, serial uint32) {
	s.mu.RLock()
	zs, ok := s.zones[apex]
	var cfg Zone
	if ok {
		cfg = zs.cfg
	}
	s.mu.RUnlock()
	if !ok {
		return
	}
	for _, t := range cfg.Notify {
		id := apex + " " + t.String()
		s.nmu.Lock()
		s.ngen[id]++
		gen := s.ngen[id]
		s.nmu.Unlock()
		s.wg.Add(1)
		go func() {
			defer s.wg.Done()
			s.notifyLoop(cfg, t, serial, id, gen)
		}()
	}
}

func (s *Server) superseded(id string, gen uint64) bool {
	s.nmu.Lock()
	defer s.nmu.Unlock()
	return s.ngen[id] != gen
}

func (s *Server) sleep(d time.Duration) bool {
	if d <= 0 {
		return s.ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-s.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

func (s *Server) notifyLoop(cfg Zone, target netip.AddrPort, serial uint32, id string, gen uint64) {
	zone := label(cfg.Apex)
	// Secondaries ask for the SOA as soon as they are notified: wait until
	// our DNS listens (at start the first publish comes before it).
	for deadline := time.Now().Add(time.Minute); s.opts.Ready != nil && s.opts.Ready() != nil; {
		if time.Now().After(deadline) || !s.sleep(50*time.Millisecond) {
			return
		}
	}
	for i, d := range s.opts.NotifyBackoff {
		if !s.sleep(d) {
			return
		}
		if s.superseded(id, gen) {
			s.m.notifies.WithLabelValues(zone, "superseded").Inc()
			return
		}
		start := time.Now()
		err := s.sendNotify(cfg, target, serial)
		if err == nil {
			s.m.notifies.WithLabelValues(zone, "ok").Inc()
			s.log.Info("NOTIFY answered", "zone", cfg.Apex, "target", target.String(), "serial", serial,
				"attempt", i+1, "rtt", time.Since(start).Round(time.Microsecond))
			return
		}
		if i == len(s.opts.NotifyBackoff)-1 {
			s.m.notifies.WithLabelValues(zone, "failed").Inc()
			s.log.Warn("NOTIFY failed: giving up; the secondary will still refresh on its SOA timers",
				"zone", cfg.Apex, "target", target.String(), "serial", serial, "attempts", i+1, "err", err)
			return
		}
		s.m.notifies.WithLabelValues(zone, "retry").Inc()
		s.log.Debug("NOTIFY not answered: retrying", "zone", cfg.Apex, "target", target.String(), "serial", serial,
			"attempt", i+1, "err", err)
	}
}

func (s *Server) sendNotify(cfg Zone, target netip.AddrPort, serial uint32) error {
	m := new(dns.Msg)
	m.SetNotify(cfg.Apex)
	m.Authoritative = true
	if zd, ok := s.zoneData(cfg.Apex); ok && zd.SOA.Serial == serial {
		m.Answer = []dns.RR{zd.SOA}
	}
	m.SetTsig(cfg.Key.Name, Algorithm, 300, time.Now().Unix())
	c := &dns.Client{Net: "udp", Timeout: s.opts.NotifyTimeout, TsigSecret: map[string]string{cfg.Key.Name: cfg.Key.Secret}}
	r, _, err := c.ExchangeContext(s.ctx, m, target.String())
	if err != nil {
		return err
	}
	if r.Rcode != dns.RcodeSuccess {
		return fmt.Errorf("answered %s", dns.RcodeToString[r.Rcode])
	}
	if r.IsTsig() == nil {
		return fmt.Errorf("answer not signed")
	}
	return nil
}
