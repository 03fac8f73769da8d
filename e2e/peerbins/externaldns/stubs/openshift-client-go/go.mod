// Compile-only stand-in for github.com/openshift/client-go's route client,
// built against the route/v1 stand-in: NewForConfig always fails, so
// ExternalDNS's OpenShift Route source cannot start (the e2e tests never
// select it).
module github.com/openshift/client-go

go 1.26

require (
	github.com/openshift/api v0.0.0-20260819011109-af5c920502e2
	k8s.io/client-go v0.37.0
)
