package kube

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meridian-gslb/meridian/internal/model"
)

// slowAPI is a TLS kube-apiserver stand-in whose LISTs take listDelay and
// whose watches stay open until the test ends; it counts what the client
// did.
type slowAPI struct {
	listDelay time.Duration
	done      chan struct{} // closed at the end: held watches return

	mu      sync.Mutex
	lists   map[string]int // path -> LISTs answered
	watches map[string]int // path -> watches opened
	cut     map[string]int // path -> watches the client closed
}

func (a *slowAPI) count(m map[string]int, path string) {
	a.mu.Lock()
	m[path]++
	a.mu.Unlock()
}

func (a *slowAPI) get(m map[string]int, path string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return m[path]
}

func (a *slowAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var list any
	switch r.URL.Path {
	case "/readyz":
		_, _ = io.WriteString(w, "ok")
		return
	case "/api/v1/services":
		svc := lb("shop", "web", "app.gslb.example.com", "198.51.100.1", t0)
		svc.ResourceVersion = "10"
		list = &corev1.ServiceList{TypeMeta: metav1.TypeMeta{Kind: "ServiceList", APIVersion: "v1"},
			ListMeta: metav1.ListMeta{ResourceVersion: "10"}, Items: []corev1.Service{*svc}}
	case "/apis/networking.k8s.io/v1/ingresses":
		list = &networkingv1.IngressList{TypeMeta: metav1.TypeMeta{Kind: "IngressList", APIVersion: "networking.k8s.io/v1"},
			ListMeta: metav1.ListMeta{ResourceVersion: "10"}}
	default:
		status(w, http.StatusNotFound, "NotFound")
		return
	}
	switch {
	case q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true":
		// No streaming lists here: the reflector falls back to LIST.
		status(w, http.StatusBadRequest, "BadRequest")
	case q.Get("watch") == "true":
		a.count(a.watches, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		select {
		case <-a.done:
		case <-r.Context().Done():
			a.count(a.cut, r.URL.Path)
		}
	default:
		select {
		case <-time.After(a.listDelay):
		case <-r.Context().Done():
			return
		}
		a.count(a.lists, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(list)
	}
}

func status(w http.ResponseWriter, code int, reason string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status: metav1.StatusFailure, Reason: metav1.StatusReason(reason), Code: int32(code)})
}

// kubeconfigFor writes a kubeconfig for server (trusting ca, with a token).
func kubeconfigFor(t *testing.T, server string, cert *x509.Certificate) string {
	t.Helper()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
	kc := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters:
- name: c
  cluster:
    server: %s
    certificate-authority-data: %s
users:
- name: u
  user:
    token: test-token
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
`, server, base64.StdEncoding.EncodeToString(ca))
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(path, []byte(kc), 0o600))
	return path
}

func TestWatchesAndListsOutliveTheConnectTimeout(t *testing.T) {
	const connect = 200 * time.Millisecond
	api := &slowAPI{listDelay: 5 * connect, done: make(chan struct{}),
		lists: map[string]int{}, watches: map[string]int{}, cut: map[string]int{}}
	srv := httptest.NewTLSServer(api)
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(api.done) }) // before srv.Close: held watches return

	mg := NewManager(context.Background(), Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Registry: prometheus.NewRegistry()})
	t.Cleanup(mg.Stop)
	mg.Configure(model.Kubernetes{ConnectTimeout: model.Duration(connect), RetryInterval: model.Duration(time.Hour)},
		[]MemberSource{{Cluster: "east", Config: model.KubeMember{Kubeconfig: kubeconfigFor(t, srv.URL, srv.Certificate())}, Origin: "config"}})

	require.Eventually(t, func() bool { return len(mg.Objects()) == 1 }, 30*time.Second, 20*time.Millisecond,
		"a LIST that takes longer than connect_timeout still lists")
	const services = "/api/v1/services"
	require.Eventually(t, func() bool { return api.get(api.watches, services) == 1 }, 30*time.Second, 20*time.Millisecond,
		"the watch opens after the LIST")
	// Hold the watch open for several connect timeouts: with the connect
	// timeout as the client's request timeout, it was cut and reopened
	// every connect_timeout.
	time.Sleep(5 * connect)
	assert.Equal(t, 1, api.get(api.lists, services), "one LIST: none failed and was retried")
	assert.Equal(t, 1, api.get(api.watches, services), "one watch: never restarted")
	assert.Zero(t, api.get(api.cut, services), "the client never closed the watch")
	assert.Equal(t, StateReady, mg.Members()[0].State)
}

func TestTheConnectTimeoutStillBoundsTheTLSHandshake(t *testing.T) {
	const connect = 200 * time.Millisecond
	// A listener that accepts and then says nothing: no TLS handshake
	// ever completes.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var conns []net.Conn
	var mu sync.Mutex
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			_ = c.Close()
		}
	})
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	ca := httptest.NewTLSServer(http.NotFoundHandler()) // for a CA only
	ca.Close()
	src := MemberSource{Cluster: "east", Config: model.KubeMember{Kubeconfig: kubeconfigFor(t, "https://"+ln.Addr().String(), ca.Certificate())}, Origin: "config"}
	cfg, err := src.restConfig(connect)
	require.NoError(t, err)
	wcfg, err := watchConfig(cfg, connect)
	require.NoError(t, err)
	assert.Zero(t, wcfg.Timeout, "no overall timeout on watches and LISTs")
	tr, ok := wcfg.Transport.(*http.Transport)
	require.True(t, ok, "a transport of our own")
	assert.Equal(t, connect, tr.TLSHandshakeTimeout, "the handshake is bounded by connect_timeout, not client-go's 10s")

	cs, err := kubernetes.NewForConfig(wcfg)
	require.NoError(t, err)
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CoreV1().Services("").List(context.Background(), metav1.ListOptions{})
		errc <- err
	}()
	select {
	case err := <-errc:
		require.Error(t, err)
		assert.Contains(t, err.Error(), "TLS handshake timeout")
	case <-time.After(9 * time.Second): // client-go's own bound is 10s
		t.Fatal("the LIST to a server that never completes the handshake did not fail before client-go's 10s handshake timeout")
	}
}
