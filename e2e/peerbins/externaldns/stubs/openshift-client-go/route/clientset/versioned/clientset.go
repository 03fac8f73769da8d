// Package versioned is a compile-only stand-in (see go.mod).
package versioned

import (
	"errors"

	"k8s.io/client-go/rest"
)

// Interface is the route clientset.
type Interface interface {
	stub()
}

// Clientset is never made.
type Clientset struct{}

func (*Clientset) stub() {}

// NewForConfig fails: the OpenShift Route source is not built in.
func NewForConfig(_ *rest.Config) (*Clientset, error) {
	return nil, errors.New("openshift route client: not built in (compile-only stand-in, the module proxy does not serve github.com/openshift/api)")
}
