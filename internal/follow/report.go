package follow

import (
	"github.com/meridian-gslb/meridian/internal/engine"
	"github.com/meridian-gslb/meridian/internal/report"
)

// ReportHealth is a running node's GET /v1/health as an engine.Health:
// what `meridian push` publishes when it is given a node's decisions.
type ReportHealth report.HealthReport

func (r ReportHealth) Endpoint(service, target string) engine.State {
	for _, e := range r.Endpoints {
		if e.Service == service && e.Target == target {
			switch e.State {
			case "down":
				return engine.Down
			case "up":
				return engine.Up
			}
		}
	}
	return engine.Unknown
}

func (r ReportHealth) Cluster(name string) engine.State {
	for _, c := range r.Clusters {
		if c.Name == name && c.State == "failed-over" {
			return engine.Down
		}
	}
	return engine.Unknown
}
