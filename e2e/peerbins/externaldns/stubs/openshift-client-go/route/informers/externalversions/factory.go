// Package externalversions is a compile-only stand-in (see go.mod). No
// clientset exists to pass to it (versioned.NewForConfig fails), so none of
// its methods is reached; they panic to say so.
package externalversions

import (
	"reflect"
	"time"

	"github.com/openshift/client-go/route/clientset/versioned"
	routev1 "github.com/openshift/client-go/route/informers/externalversions/route/v1"
)

const unreachable = "openshift route informers: not built in (compile-only stand-in)"

// SharedInformerOption configures the factory.
type SharedInformerOption func(*SharedInformerFactory) *SharedInformerFactory

// WithNamespace limits the factory to one namespace.
func WithNamespace(_ string) SharedInformerOption {
	return func(f *SharedInformerFactory) *SharedInformerFactory { return f }
}

// SharedInformerFactory is the route informer factory.
type SharedInformerFactory struct{}

// NewSharedInformerFactoryWithOptions makes the factory.
func NewSharedInformerFactoryWithOptions(_ versioned.Interface, _ time.Duration, _ ...SharedInformerOption) *SharedInformerFactory {
	return &SharedInformerFactory{}
}

// Route gives the route group.
func (*SharedInformerFactory) Route() Group { panic(unreachable) }

// Start starts the informers.
func (*SharedInformerFactory) Start(<-chan struct{}) { panic(unreachable) }

// WaitForCacheSync waits for the informers.
func (*SharedInformerFactory) WaitForCacheSync(<-chan struct{}) map[reflect.Type]bool {
	panic(unreachable)
}

// Group is the route API group.
type Group interface {
	V1() Version
}

// Version is the route/v1 version.
type Version interface {
	Routes() routev1.RouteInformer
}
