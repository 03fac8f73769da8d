// Compile-only stand-in for github.com/openshift/api, whose version that
// ExternalDNS pins the Go module proxy does not serve. Only route/v1's types
// that ExternalDNS's OpenShift Route source reads are here; the e2e tests
// never select that source.
module github.com/openshift/api

go 1.26

require (
	k8s.io/api v0.37.0
	k8s.io/apimachinery v0.37.0
)
