// Package v1 is a compile-only stand-in (see go.mod).
package v1

import "k8s.io/client-go/tools/cache"

// RouteInformer gives the shared informer of routes.
type RouteInformer interface {
	Informer() cache.SharedIndexInformer
}
