package kube

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func wrapURL(err error) error {
	return fmt.Errorf("GET /readyz: %w", &url.Error{Op: "Get", URL: "https://127.0.0.1:6443/readyz", Err: err})
}

func TestReasonNamesWhatFailed(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"a certificate from another CA is untrusted", wrapURL(&tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}), "untrusted server certificate"},
		{"an expired server certificate is named", wrapURL(x509.CertificateInvalidError{Reason: x509.Expired}), "server certificate expired"},
		{"a certificate for another host is named", wrapURL(x509.HostnameError{Host: "10.0.0.1", Certificate: &x509.Certificate{}}), "does not match the host"},
		{"a refused connection is unreachable", wrapURL(&net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}), "unreachable: connection refused"},
		{"401 means the credentials were rejected", apierrors.NewUnauthorized("Unauthorized"), "credentials rejected (401"},
		{"403 means missing permission", apierrors.NewForbidden(schema.GroupResource{}, "readyz", errors.New("no")), "forbidden (403)"},
		{"a plain TLS record error means no TLS server", wrapURL(tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}), "not a TLS server"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Contains(t, Reason(tt.err), tt.want)
		})
	}
	assert.Empty(t, Reason(nil))
}
