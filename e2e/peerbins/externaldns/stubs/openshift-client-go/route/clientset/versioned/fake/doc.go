// Package fake is empty: only ExternalDNS's own tests import it, and `go mod
// tidy` needs the package to exist (see ../../../../go.mod).
package fake
