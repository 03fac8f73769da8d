// Compile-only stand-in for github.com/civo/civogo, which the Go module proxy
// does not serve. ExternalDNS's Civo provider links against it; the e2e tests
// never select that provider, and every call here fails.
module github.com/civo/civogo

go 1.26
