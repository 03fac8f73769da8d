// Package kubelab runs real Kubernetes API servers on loopback for the
// end-to-end tests: one etcd and one kube-apiserver per simulated member
// cluster, each apiserver with its own etcd prefix, CAs, client certs and
// service-account keys. There are no nodes and no controllers: tests create
// objects and set the status a controller would (SetLoadBalancerIP).
//
// The binaries are built by `make kube-bins` (scripts/kube-bins.sh) from the
// nested module e2e/kubebins; `make e2e` builds them and sets KUBE_BINS.
package kubelab

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"
)

// ReadyTimeout bounds each wait for etcd or a kube-apiserver to become ready.
var ReadyTimeout = 60 * time.Second

// stopGrace is how long a stopped process gets between SIGTERM and SIGKILL.
const stopGrace = 15 * time.Second

// Bins returns the directory holding the etcd and kube-apiserver binaries,
// from $KUBE_BINS; it skips the test when KUBE_BINS is not set.
func Bins(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("KUBE_BINS")
	if dir == "" {
		t.Skip("kubelab: KUBE_BINS is not set: run `make e2e`, or `make kube-bins` and set KUBE_BINS to the dir it prints")
	}
	for _, b := range []string{"etcd", "kube-apiserver"} {
		if st, err := os.Stat(filepath.Join(dir, b)); err != nil || st.IsDir() {
			t.Fatalf("kubelab: KUBE_BINS=%s has no %s binary: run `make kube-bins`", dir, b)
		}
	}
	return dir
}

// Lab is one etcd and one kube-apiserver per member.
type Lab struct {
	// Members in the order given to Start.
	Members []*Member
	// EtcdURL is etcd's client URL (http://127.0.0.1:port).
	EtcdURL string
	// StartDuration is how long Start took, certs to the last /readyz.
	StartDuration time.Duration

	dir     string
	etcd    *proc
	rogueCA *authority // unrelated to every member: KubeUser.WrongCA
}

// Member returns the member of that name; it panics on an unknown name.
func (l *Lab) Member(name string) *Member {
	for _, m := range l.Members {
		if m.Name == name {
			return m
		}
	}
	panic("kubelab: no member " + strconv.Quote(name))
}

// Start starts etcd and one kube-apiserver per member and waits until each
// answers /readyz. Everything is stopped by t.Cleanup; logs are files in a
// t.TempDir() whose tails are logged when the test has failed.
func Start(t testing.TB, bins string, members ...string) *Lab {
	t.Helper()
	begin := time.Now()
	checkMemberNames(t, members)
	// First, so that its removal is the last cleanup: after every process stopped.
	dir := t.TempDir()
	lab := &Lab{dir: dir}
	t.Cleanup(func() {
		if t.Failed() {
			lab.logTails(t)
		}
	})

	var err error
	lab.rogueCA, err = newAuthority("kubelab-rogue-ca")
	if err != nil {
		t.Fatalf("kubelab: %v", err)
	}

	ports := freePorts(t, 2+len(members))
	lab.startEtcd(t, bins, ports[0], ports[1])
	lab.addMembers(t, bins, members, ports[2:])

	if err := waitReady(lab.etcd, etcdProbe(lab.EtcdURL)); err != nil {
		t.Fatalf("kubelab: %v", err)
	}
	etcdReady := time.Since(begin)

	// The apiservers start side by side: the slow part is their own bootstrap.
	var wg sync.WaitGroup
	errs := make([]error, len(lab.Members))
	for i, m := range lab.Members {
		wg.Go(func() { errs[i] = m.start() })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatalf("kubelab: %v", err)
		}
	}
	lab.StartDuration = time.Since(begin)
	t.Logf("kubelab: etcd ready in %s, %d kube-apiserver(s) ready in %s", etcdReady.Round(time.Millisecond), len(members), lab.StartDuration.Round(time.Millisecond))
	return lab
}

// checkMemberNames fails the test unless there is at least one member and
// every name is a distinct, plain file name.
func checkMemberNames(t testing.TB, members []string) {
	t.Helper()
	if len(members) == 0 {
		t.Fatal("kubelab: Start needs at least one member name")
	}
	seen := map[string]bool{}
	for _, name := range members {
		if name == "" || seen[name] || filepath.Base(name) != name {
			t.Fatalf("kubelab: bad or duplicate member name %q", name)
		}
		seen[name] = true
	}
}

// logTails logs the last lines of the log of etcd and of every member.
func (l *Lab) logTails(t testing.TB) {
	var procs []*proc
	if l.etcd != nil {
		procs = append(procs, l.etcd)
	}
	for _, m := range l.Members {
		procs = append(procs, m.proc)
	}
	for _, p := range procs {
		t.Logf("kubelab: last lines of %s (%s):\n%s", p.name, p.logPath, p.tail(60))
	}
}

// startEtcd starts the lab's etcd on the client and peer ports (without
// waiting for it) and has t.Cleanup stop it.
func (l *Lab) startEtcd(t testing.TB, bins string, clientPort, peerPort int) {
	t.Helper()
	l.EtcdURL = fmt.Sprintf("http://127.0.0.1:%d", clientPort)
	peerURL := fmt.Sprintf("http://127.0.0.1:%d", peerPort)
	l.etcd = &proc{
		name: "etcd",
		bin:  filepath.Join(bins, "etcd"),
		args: []string{
			"--name=kubelab",
			"--data-dir=" + filepath.Join(l.dir, "etcd-data"),
			"--listen-client-urls=" + l.EtcdURL,
			"--advertise-client-urls=" + l.EtcdURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=kubelab=" + peerURL,
			"--initial-cluster-state=new",
			"--unsafe-no-fsync",
			"--log-level=warn",
		},
		logPath: filepath.Join(l.dir, "etcd.log"),
	}
	t.Cleanup(func() {
		if err := l.etcd.stop(stopGrace); err != nil {
			t.Errorf("kubelab: %v", err)
		}
	})
	if err := l.etcd.start(); err != nil {
		t.Fatalf("kubelab: %v", err)
	}
}

// addMembers prepares one member per name, its apiserver on the port of the
// same index (not started), and has t.Cleanup stop them.
func (l *Lab) addMembers(t testing.TB, bins string, names []string, ports []int) {
	t.Helper()
	for i, name := range names {
		m, err := newMember(l, bins, name, ports[i])
		if err != nil {
			t.Fatalf("kubelab: member %s: %v", name, err)
		}
		l.Members = append(l.Members, m)
	}
	for _, m := range l.Members {
		t.Cleanup(func() {
			if err := m.proc.stop(stopGrace); err != nil {
				t.Errorf("kubelab: %v", err)
			}
		})
	}
}

// probe reports nil when the process serves.
type probe func(ctx context.Context) error

// waitReady polls probe until it succeeds, the process exits or ReadyTimeout
// passes; errors carry the tail of the log.
func waitReady(p *proc, ready probe) error {
	ctx, cancel := context.WithTimeout(context.Background(), ReadyTimeout)
	defer cancel()
	done, status := p.exited()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		pctx, pcancel := context.WithTimeout(ctx, 5*time.Second)
		last = ready(pctx)
		pcancel()
		if last == nil {
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("%w before it was ready; last lines of %s:\n%s", exitError(p.name, status()), p.logPath, p.tail(40))
		case <-ctx.Done():
			return fmt.Errorf("%s not ready after %s (last probe: %v); last lines of %s:\n%s", p.name, ReadyTimeout, last, p.logPath, p.tail(40))
		case <-tick.C:
		}
	}
}

func etcdProbe(url string) probe {
	c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	return func(ctx context.Context) error { return get(ctx, c, url+"/health") }
}

// httpsProbe GETs path with the given client cert and server CA.
func httpsProbe(url, path string, caPEM, certPEM, keyPEM []byte) (probe, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("bad CA PEM")
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	c := &http.Client{Transport: &http.Transport{
		DisableKeepAlives: true,
		TLSClientConfig:   &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{pair}},
	}}
	return func(ctx context.Context) error { return get(ctx, c, url+path) }, nil
}

func get(ctx context.Context, c *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return nil
}

// freePorts returns n distinct loopback TCP ports that were free a moment
// ago. They are drawn below the kernel's ephemeral range, so that no outgoing
// connection (an apiserver's to etcd, say) takes one as its source port while
// a member is stopped and Start can bind it again.
func freePorts(t testing.TB, n int) []int {
	t.Helper()
	lo, hi := 20000, 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		var elo, ehi int
		if _, err := fmt.Sscan(string(b), &elo, &ehi); err == nil && elo > lo+1000 {
			hi = elo
		}
	}
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			t.Fatalf("kubelab: no free port in [%d,%d)", lo, hi)
		}
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", lo+rand.IntN(hi-lo)))
		if err != nil {
			continue
		}
		defer l.Close() // held until all are chosen: no duplicates
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports
}
