package observe

import (
	"context"
	"errors"
	"time"

	"github.com/meridian-gslb/meridian/internal/capacity"
	"github.com/meridian-gslb/meridian/internal/model"
)

// poller queries Prometheus for one service on its interval.
type poller struct {
	cfg    model.CapacityPrometheus
	svc    capacity.Service
	cancel context.CancelFunc
	done   chan struct{}
}

// syncPollers runs one poller per service with source prometheus: new ones
// start, removed ones stop, changed ones restart.
func (o *Observer) syncPollers(ctx context.Context, d *model.Desired) {
	want := map[string]*model.Service{}
	for i := range d.Services {
		s := &d.Services[i]
		if s.Capacity != nil && s.Capacity.Source == model.CapacitySourcePrometheus && s.Capacity.Prometheus != nil {
			want[s.Name] = s
		}
	}
	svcs := map[string]capacity.Service{}
	for _, s := range capacity.Services(d) {
		svcs[s.Name] = s
	}
	o.mu.Lock()
	var stop []*poller
	for name, p := range o.pollers {
		if s, ok := want[name]; !ok || *s.Capacity.Prometheus != p.cfg || !sameEndpoints(svcs[name], p.svc) {
			stop = append(stop, p)
			delete(o.pollers, name)
		}
	}
	var start []*poller
	for name, s := range want {
		if _, ok := o.pollers[name]; ok {
			continue
		}
		p := &poller{cfg: *s.Capacity.Prometheus, svc: svcs[name], done: make(chan struct{})}
		o.pollers[name] = p
		start = append(start, p)
	}
	o.mu.Unlock()
	for _, p := range stop {
		p.cancel()
		<-p.done
	}
	for _, p := range start {
		pctx, cancel := context.WithCancel(ctx)
		p.cancel = cancel
		go func() { defer close(p.done); o.poll(pctx, p) }()
	}
}

func sameEndpoints(a, b capacity.Service) bool {
	if len(a.Endpoints) != len(b.Endpoints) {
		return false
	}
	for i := range a.Endpoints {
		if a.Endpoints[i] != b.Endpoints[i] {
			return false
		}
	}
	return true
}

func (o *Observer) stopPollers() {
	o.mu.Lock()
	ps := o.pollers
	o.pollers = map[string]*poller{}
	o.mu.Unlock()
	for _, p := range ps {
		p.cancel()
		<-p.done
	}
}

// poll queries at once, then every interval, until ctx ends.
func (o *Observer) poll(ctx context.Context, p *poller) {
	q, err := newProm(p.cfg, o.opts.Transport)
	if err != nil {
		o.log.Error("capacity: prometheus source not usable; the service keeps its configured weights", "service", p.svc.Name, "err", err)
		return
	}
	t := time.NewTicker(p.cfg.Interval.D())
	defer t.Stop()
	failing := false
	for {
		failing = o.pollOnce(ctx, q, p, failing)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pollOnce runs one query and records its readings. A failure keeps the
// last good readings (capacity rule 1), is counted, and is logged when the
// source starts failing and when it recovers.
func (o *Observer) pollOnce(ctx context.Context, q *prom, p *poller, failing bool) bool {
	name := p.svc.Name
	now := o.opts.Now()
	samples, warnings, err := q.query(ctx, now)
	if ctx.Err() != nil {
		return failing
	}
	if err != nil {
		reason := FailUnreachable
		var qe *queryError
		if errors.As(err, &qe) {
			reason = qe.reason
		}
		o.m.queryFailures.WithLabelValues(name, reason).Inc()
		if !failing {
			o.log.Warn("capacity: prometheus query failed; the last good fractions stay until stale_after", "service", name,
				"url", p.cfg.URL, "reason", reason, "err", err)
		}
		for _, e := range p.svc.Endpoints {
			o.record(capacity.Key{Service: name, Target: e.Target}, capacity.Reading{}, false, "prometheus query failing: "+reason)
		}
		o.Poke()
		return true
	}
	if failing {
		o.log.Info("capacity: prometheus query works again", "service", name, "url", p.cfg.URL)
	}
	if len(warnings) > 0 {
		o.log.Debug("capacity: prometheus warnings", "service", name, "warnings", short(joinWarnings(warnings), 300))
	}
	o.m.queries.WithLabelValues(name).Inc()
	readings, problems := capacity.FromSamples(p.svc, samples, now)
	for _, pr := range problems {
		o.m.invalidSamples.WithLabelValues(name, pr.Reason).Inc()
	}
	o.logProblems(name, problems)
	for _, e := range p.svc.Endpoints {
		k := capacity.Key{Service: name, Target: e.Target}
		r, ok := readings[e.Target]
		o.record(k, r, ok, "the query gives no usable sample for endpoint "+e.Target+" or cluster "+e.Cluster)
	}
	o.Poke()
	return false
}

// logProblems logs a service's sample problems when they change.
func (o *Observer) logProblems(service string, problems []capacity.Problem) {
	text := ""
	for i, p := range problems {
		if i == 5 {
			text += "; …"
			break
		}
		if i > 0 {
			text += "; "
		}
		text += p.Reason + ": " + p.Detail
	}
	o.mu.Lock()
	same := o.logged[service] == text
	o.logged[service] = text
	o.mu.Unlock()
	if !same && text != "" {
		o.log.Warn("capacity: prometheus samples left out or changed", "service", service, "problems", len(problems), "detail", text)
	}
}

func joinWarnings(ws []string) string {
	out := ""
	for i, w := range ws {
		if i > 0 {
			out += "; "
		}
		out += w
	}
	return out
}
