// Package health probes endpoints and cluster heartbeats and turns the
// results into votes (internal/vote): each prober applies fall/rise
// thresholds locally and publishes its view, which internal/ring gossips
// and internal/failover decides on.
package health
