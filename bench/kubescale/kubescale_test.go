//go:build kubescale

package kubescale

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/meridian-gslb/meridian/bench/internal/benchenv"
	"github.com/meridian-gslb/meridian/e2e/kubelab"
	"github.com/meridian-gslb/meridian/internal/config/scalegen"
)

const (
	zone      = "gslb.example.com"
	namespace = "scale"
)

// config is the Meridian config: the two members, status annotations on,
// RRL out of the way of the loopback queries, and the per-namespace
// hostname limit (default 1000) above the largest size: every Service is
// in the one namespace "scale".
const config = `
server: {dns: {rrl: {responses_per_second: 1000000}}}
zones:
  - apex: ` + zone + `
    nameservers: [{name: ns1.` + zone + `, ipv4: [127.0.0.1]}]
clusters:
  - {name: east, region: us-east, kubernetes: {kubeconfig: "%s"}}
  - {name: west, region: us-west, kubernetes: {kubeconfig: "%s"}}
kubernetes: {status_annotation: true, max_hostnames_per_namespace: 20000}
`

// result is one size's figures.
type result struct {
	Services int `json:"services"`
	// FileServices: the config file's own services beside the Kubernetes
	// ones (KUBESCALE_FILE_SERVICES, internal/config/scalegen).
	FileServices    int     `json:"file_services"`
	CreateSeconds   float64 `json:"create_seconds"`                   // first create to the last load-balancer status set
	ServedSeconds   float64 `json:"served_seconds"`                   // first create to every name answering its address
	ServedAfterLast float64 `json:"served_after_last_create_seconds"` // last status set to every name answering
	// ChangeMillis: each annotation change (a Service's hostname moved to a
	// new name) to the new name answering, in ms.
	ChangeMillis []float64 `json:"change_served_ms"`
	// StatusSeconds: first create to meridian.io/status on every Service
	// (-1: not within the bound).
	StatusSeconds float64            `json:"status_writeback_seconds"`
	StatusWrites  map[string]float64 `json:"status_writes"` // meridian_kube_status_writes_total by result, at the end
	RSSMiB        float64            `json:"rss_mib_served"`
	RSSEndMiB     float64            `json:"rss_mib_end"`
	PeakRSSMiB    float64            `json:"peak_rss_mib"`
}

func TestKubeScale(t *testing.T) {
	var env benchenv.Env
	var sizes []int
	for s := range strings.SplitSeq(envOr("KUBESCALE_SIZES", "2000,10000"), ",") {
		n, err := strconv.Atoi(strings.TrimSpace(s))
		if err != nil || n < 2 || n > 20000 || n%2 != 0 {
			env.Add(fmt.Errorf("KUBESCALE_SIZES=%q: want even integers in [2, 20000], comma-separated", os.Getenv("KUBESCALE_SIZES")))
			break
		}
		sizes = append(sizes, n)
	}
	changes := env.Int("KUBESCALE_CHANGES", 5, 1, 50)
	gap := env.Duration("KUBESCALE_CHANGE_GAP", time.Second, 0)
	fileServices := env.Int("KUBESCALE_FILE_SERVICES", 0, 0, 200_000)
	workers := env.Int("KUBESCALE_WORKERS", 16, 1, 64)
	bound := env.Duration("KUBESCALE_BOUND", 5*time.Minute, 10*time.Second)
	out := envOr("KUBESCALE_OUT", filepath.Join("..", "results"))
	require.NoError(t, env.Err())
	bin := os.Getenv("MERIDIAN_BIN")
	if bin == "" {
		t.Skip("MERIDIAN_BIN is not set: run `make bench-kube-scale`")
	}
	bins := kubelab.Bins(t)

	var results []result
	for _, n := range sizes {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			results = append(results, measure(t, bins, bin, n, fileServices, changes, gap, workers, bound))
		})
	}
	require.NoError(t, os.MkdirAll(out, 0o755))
	j, err := json.MarshalIndent(map[string]any{"when": time.Now().UTC().Format(time.RFC3339), "results": results}, "", "  ")
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(out, "kubescale.json"), append(j, '\n'), 0o644))
	txt := report(results)
	require.NoError(t, os.WriteFile(filepath.Join(out, "kubescale.txt"), []byte(txt), 0o644))
	t.Log("\n" + txt)
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// svc is one generated Service: its member, name, global name and address.
type svc struct {
	member *kubelab.Member
	name   string
	host   string
	ip     string
}

func generate(lab *kubelab.Lab, n int) []svc {
	out := make([]svc, n)
	for i := range n {
		m := lab.Members[i%2]
		out[i] = svc{member: m, name: fmt.Sprintf("s%05d", i), host: fmt.Sprintf("s%05d.%s.", i, zone),
			ip: fmt.Sprintf("10.%d.%d.%d", 1+i>>16, (i>>8)&255, i&255)}
	}
	return out
}

func measure(t *testing.T, bins, bin string, n, fileServices, changes int, gap time.Duration, workers int, bound time.Duration) result {
	lab := kubelab.Start(t, bins, "east", "west")
	clients := map[*kubelab.Member]kubernetes.Interface{}
	for _, m := range lab.Members {
		m.EnsureNamespace(t, namespace)
		m.EnsureNamespace(t, "meridian") // the writer Lease
		cfg := m.AdminConfig()
		cfg.QPS = -1 // the worker pool bounds the load
		c, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		clients[m] = c
	}
	cfg := withFileServices(t, fmt.Sprintf(config, lab.Members[0].Kubeconfig(t, kubelab.AdminUser), lab.Members[1].Kubeconfig(t, kubelab.AdminUser)), fileServices)
	ready := 30 * time.Second
	if fileServices > 0 {
		ready = bound // a large file takes its time to load
	}
	srv := startMeridian(t, bin, cfg, ready)
	svcs := generate(lab, n)
	r := result{Services: n, FileServices: fileServices}

	// Create every Service and set its load-balancer address, workers at a time.
	start := time.Now()
	parallel(t, workers, len(svcs), func(i int) error {
		s := svcs[i]
		c := clients[s.member].CoreV1().Services(namespace)
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		no := false
		_, err := c.Create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: s.name, Annotations: map[string]string{
				"meridian.io/hostname": strings.TrimSuffix(s.host, "."), "meridian.io/health-check": "none"}},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, AllocateLoadBalancerNodePorts: &no,
				Selector: map[string]string{"app": s.name}, Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
		}, metav1.CreateOptions{})
		if err != nil {
			return fmt.Errorf("create %s: %w", s.name, err)
		}
		// A merge patch of the status subresource: Meridian may have
		// written meridian.io/status since the create.
		status, _ := json.Marshal(map[string]any{"status": map[string]any{"loadBalancer": map[string]any{"ingress": []map[string]string{{"ip": s.ip}}}}})
		if _, err := c.Patch(ctx, s.name, types.MergePatchType, status, metav1.PatchOptions{}, "status"); err != nil {
			return fmt.Errorf("status of %s: %w", s.name, err)
		}
		return nil
	})
	created := time.Now()
	r.CreateSeconds = created.Sub(start).Seconds()
	t.Logf("%d Services created with their addresses in %s", n, created.Sub(start).Round(time.Millisecond))

	// Every name answers its address.
	pending := slices.Clone(svcs)
	deadline := time.Now().Add(bound)
	for len(pending) > 0 {
		require.False(t, time.Now().After(deadline), "%d of %d names not served within %s:\n%s", len(pending), n, bound, srv.tail())
		pending = notServed(t, srv.dns, pending, workers)
		if len(pending) > 0 {
			time.Sleep(100 * time.Millisecond)
		}
	}
	served := time.Now()
	r.ServedSeconds, r.ServedAfterLast = served.Sub(start).Seconds(), served.Sub(created).Seconds()
	r.RSSMiB, _ = rss(srv.cmd.Process.Pid)
	t.Logf("all %d names served %s after the first create (%s after the last), RSS %.0f MiB", n,
		served.Sub(start).Round(time.Millisecond), served.Sub(created).Round(time.Millisecond), r.RSSMiB)

	// One annotation change at a time: a Service's name moves to a new one.
	for k := range changes {
		s := svcs[(k*7919)%n]
		moved := svc{member: s.member, name: s.name, host: fmt.Sprintf("moved%d-%s", k, s.host), ip: s.ip}
		// A lone change, as a user makes one: not in the merge window
		// that the previous change (served a moment ago) opened.
		time.Sleep(gap)
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
			"meridian.io/hostname": strings.TrimSuffix(moved.host, ".")}}})
		at := time.Now()
		_, err := clients[s.member].CoreV1().Services(namespace).Patch(context.Background(), s.name, types.MergePatchType, patch, metav1.PatchOptions{})
		require.NoError(t, err)
		for len(notServed(t, srv.dns, []svc{moved}, 1)) > 0 {
			require.Less(t, time.Since(at), bound, "the changed name %s is not served", moved.host)
			time.Sleep(5 * time.Millisecond)
		}
		r.ChangeMillis = append(r.ChangeMillis, float64(time.Since(at).Microseconds())/1000)
		t.Logf("change %d: patched at %s, served in %v", k, at.UTC().Format(time.RFC3339Nano), time.Since(at).Round(time.Millisecond))
	}
	t.Logf("annotation changes served in %v ms", r.ChangeMillis)

	// Status write-back: meridian.io/status on every Service.
	r.StatusSeconds = -1
	for time.Since(served) < bound {
		done := 0
		for _, m := range lab.Members {
			list, err := clients[m].CoreV1().Services(namespace).List(context.Background(), metav1.ListOptions{})
			require.NoError(t, err)
			for _, s := range list.Items {
				if strings.Contains(s.Annotations["meridian.io/status"], `"served":true`) {
					done++
				}
			}
		}
		if done == n {
			r.StatusSeconds = time.Since(start).Seconds()
			break
		}
		time.Sleep(time.Second)
	}
	t.Logf("status write-back on all %d: %.1fs after the first create", n, r.StatusSeconds)
	r.StatusWrites = srv.metric(t, "meridian_kube_status_writes_total")
	r.RSSEndMiB, r.PeakRSSMiB = rss(srv.cmd.Process.Pid)
	return r
}

// parallel runs do(0..n-1) on workers goroutines and fails t on the first error.
func parallel(t *testing.T, workers, n int, do func(i int) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make([]error, workers)
	for w := range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || errs[w] != nil {
					return
				}
				errs[w] = do(i)
			}
		})
	}
	wg.Wait()
	require.NoError(t, errors.Join(errs...))
}

// notServed queries every name (workers sockets at once) and returns those
// not answering with their address.
func notServed(t *testing.T, server string, svcs []svc, workers int) []svc {
	var mu sync.Mutex
	var out []svc
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(workers, len(svcs)) {
		wg.Go(func() {
			cl := &dns.Client{Net: "udp", Timeout: 2 * time.Second}
			conn, err := cl.Dial(server)
			if err != nil {
				t.Errorf("dial %s: %v", server, err)
				return
			}
			defer conn.Close()
			for {
				i := int(next.Add(1)) - 1
				if i >= len(svcs) {
					return
				}
				q := new(dns.Msg)
				q.SetQuestion(svcs[i].host, dns.TypeA)
				r, _, err := cl.ExchangeWithConn(q, conn)
				ok := false
				if err == nil {
					for _, rr := range r.Answer {
						if a, isA := rr.(*dns.A); isA && a.A.String() == svcs[i].ip {
							ok = true
						}
					}
				}
				if !ok {
					mu.Lock()
					out = append(out, svcs[i])
					mu.Unlock()
				}
			}
		})
	}
	wg.Wait()
	return out
}

// rss reads VmRSS and VmHWM (peak) of pid, in MiB.
func rss(pid int) (now, peak float64) {
	r, h, err := benchenv.Memory(pid)
	if err != nil {
		return 0, 0
	}
	return float64(r) / 1024, float64(h) / 1024
}

// server is one running `meridian serve`.
type server struct {
	cmd       *exec.Cmd
	dns, http string
	logPath   string
}

func startMeridian(t *testing.T, bin, cfg string, ready time.Duration) *server {
	dir := t.TempDir()
	s := &server{dns: freeAddr(t), http: freeAddr(t), logPath: filepath.Join(dir, "meridian.log")}
	path := filepath.Join(dir, "meridian.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o644))
	logf, err := os.Create(s.logPath)
	require.NoError(t, err)
	args := []string{"serve", "--config", path, "--dns-listen", s.dns, "--http-listen", s.http}
	keep := os.Getenv("KUBESCALE_KEEP_LOG") // a directory: the debug log is kept there
	if keep != "" {
		args = append(args, "--log-level", "debug")
	}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, "state"))
	s.cmd.Stdout, s.cmd.Stderr = logf, logf
	require.NoError(t, s.cmd.Start())
	exited := make(chan struct{})
	go func() { _ = s.cmd.Wait(); _ = logf.Close(); close(exited) }()
	t.Cleanup(func() {
		benchenv.Stop(s.cmd.Process, exited, 20*time.Second)
		if t.Failed() {
			t.Logf("meridian log (last lines):\n%s", s.tail())
		}
		if keep != "" {
			b, err := os.ReadFile(s.logPath)
			if err == nil {
				err = os.WriteFile(filepath.Join(keep, "meridian.log"), b, 0o644)
			}
			if err != nil {
				t.Errorf("KUBESCALE_KEEP_LOG: %v", err)
			}
		}
	})
	deadline := time.Now().Add(ready)
	for {
		resp, err := http.Get("http://" + s.http + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s
			}
		}
		select {
		case <-exited:
			t.Fatalf("meridian exited early:\n%s", s.tail())
		default:
		}
		require.False(t, time.Now().After(deadline), "meridian not ready in 30s:\n%s", s.tail())
		time.Sleep(100 * time.Millisecond)
	}
}

func (s *server) tail() string {
	b, _ := os.ReadFile(s.logPath)
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-40):], "\n")
}

// metric sums the samples of a counter on /metrics by their result label.
func (s *server) metric(t *testing.T, name string) map[string]float64 {
	resp, err := http.Get("http://" + s.http + "/metrics")
	require.NoError(t, err)
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") {
			continue
		}
		_, rest, _ := strings.Cut(line, `result="`)
		res, _, _ := strings.Cut(rest, `"`)
		f := strings.Fields(line)
		v, _ := strconv.ParseFloat(f[len(f)-1], 64)
		out[res] += v
	}
	return out
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer l.Close()
	return l.Addr().String()
}

// withFileServices adds n generated services of their own zone
// (scalegen) to the config cfg: the Kubernetes changes then merge into a
// state of n file services. cfg is returned as it is for n 0.
func withFileServices(t *testing.T, cfg string, n int) string {
	if n == 0 {
		return cfg
	}
	var gen strings.Builder
	require.NoError(t, scalegen.Write(&gen, scalegen.Options{Services: n}))
	head, rest, ok := strings.Cut(cfg, "zones:\n")
	require.True(t, ok, "the config has a zones section")
	zones, rest, ok := strings.Cut(rest, "clusters:\n")
	require.True(t, ok, "the config has a clusters section")
	clusters, tail, ok := strings.Cut(rest, "\nkubernetes:")
	require.True(t, ok, "the config has a kubernetes section")
	clusters += "\n"
	out := gen.String()
	for _, ins := range []struct{ after, text string }{{"zones:\n", zones}, {"clusters:\n", clusters}} {
		i := strings.Index(out, ins.after)
		require.GreaterOrEqual(t, i, 0, "scalegen writes %q", ins.after)
		i += len(ins.after)
		out = out[:i] + ins.text + out[i:]
	}
	return head + out + "kubernetes:" + tail
}

func report(rs []result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Kubernetes at scale (bench/kubescale): annotated LoadBalancer Services, half in each of 2 members (real kube-apiservers, one etcd), one meridian serve, kubernetes.status_annotation: true, defaults otherwise\n\n")
	fmt.Fprintf(&b, "%-9s %-10s %-12s %-14s %-22s %-16s %-10s %-10s %s\n", "services", "create", "all served", "after last", "annotation change", "status on all", "RSS", "peak RSS", "status writes")
	for _, r := range rs {
		ch := slices.Clone(r.ChangeMillis)
		slices.Sort(ch)
		chs := "-"
		if len(ch) > 0 {
			chs = fmt.Sprintf("%.0f ms median, %.0f max", ch[len(ch)/2], ch[len(ch)-1])
		}
		st := "not within bound"
		if r.StatusSeconds >= 0 {
			st = fmt.Sprintf("%.1f s", r.StatusSeconds)
		}
		fmt.Fprintf(&b, "%-9d %-10s %-12s %-14s %-22s %-16s %-10s %-10s %v\n", r.Services,
			fmt.Sprintf("%.1f s", r.CreateSeconds), fmt.Sprintf("%.1f s", r.ServedSeconds), fmt.Sprintf("%.2f s", r.ServedAfterLast),
			chs, st, fmt.Sprintf("%.0f MiB", r.RSSMiB), fmt.Sprintf("%.0f MiB", r.PeakRSSMiB), r.StatusWrites)
		if r.FileServices > 0 {
			fmt.Fprintf(&b, "          (beside %d services of the config file: KUBESCALE_FILE_SERVICES)\n", r.FileServices)
		}
	}
	return b.String()
}
