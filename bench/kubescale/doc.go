// Package kubescale measures Meridian's Kubernetes sources at scale on the
// e2e lab's real kube-apiservers (e2e/kubelab): N annotated LoadBalancer
// Services split across two member clusters, each with a name of its own,
// and one `meridian serve` watching both. It reports the time from the
// first creation to every name answering with its Service's address (UDP
// queries to the running server), the time one annotation change takes to
// be served at that size, how long the status write-back
// (meridian.io/status on every object) takes, and the server's RSS.
//
// The measurement is a test behind the build tag kubescale (kubelab runs
// under testing.TB), so it is never part of `make test`; run it with
// `make bench-kube-scale`. Results go to bench/results/kubescale.txt and
// kubescale.json. See README.md.
package kubescale
