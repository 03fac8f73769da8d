//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/meridian-gslb/meridian/e2e/kubelab"
)

// The two-site test (twosite_test.go) runs the Helm chart against two real
// kube-apiservers that have no nodes, no controllers and no cloud. This file
// is what those would have done: it reads from the apiserver what the chart
// created and runs each pod of the StatefulSet as a `meridian serve` process
// in its own network namespace, from a root directory laid out as the image
// and the kubelet lay out a container's (the binary, /etc/passwd, the
// volumes with their modes and owners, the service-account token), with the
// pod's host name (a UTS namespace), environment (Secret keys included),
// user and groups; it sets the Services' load-balancer addresses and the
// StatefulSet's status; it rewrites a mounted ConfigMap or Secret as the
// kubelet does (a new timestamped directory, then the ..data symlink
// swapped) when the object changes; and when the pod template changes it
// replaces the pods one at a time, as the StatefulSet controller's rolling
// update does.

// tsCluster is one simulated cluster of the two-site test.
type tsCluster struct {
	name  string // the kube context, e.g. "east"
	m     *kubelab.Member
	cs    kubernetes.Interface
	hosts []*Host // pod ordinal i runs on hosts[i]
	// lb is the address of the meridian-dns Service's load balancer (a
	// forwarder on the lb host, to every ready pod's 5353).
	lb netip.Addr
	// web is shop/web's load-balancer address: the app's backend.
	web netip.Addr
	// resolver is the pods' nameserver (the lab's Unbound).
	resolver netip.Addr
	bridges  []int // apiserver ports bridged into every pod's namespace
	dir      string
	// life is the test the pods live as long as (TestTwoSites'): a pod
	// started while a check runs must outlive that check.
	life    testing.TB
	bridged map[string]bool // hosts (netns) whose bridges are open

	mu   sync.Mutex
	pods map[string]*tsPod // by pod name
}

// tsPod is one pod of the StatefulSet, run as a process.
type tsPod struct {
	name, site string
	host       *Host
	root       string // its root directory
	rev        string // the revision of the pod template it was started from
	proc       *Proc
	volumes    []tsVolume
	group      int  // the volumes' group (fsGroup)
	stopped    bool // stopped by the test: not restarted, not ready
}

// tsVolume is one mounted volume's content, as the kubelet projects it.
type tsVolume struct {
	mountPath string
	emptyDir  bool
	files     map[string]tsFile // relative path → content
	gen       int               // timestamped directories written so far
}

type tsFile struct {
	data []byte
	mode os.FileMode
}

// tsNamespace is where the walkthrough installs the chart; tsStatefulSet its
// StatefulSet (release "meridian").
const (
	tsNamespace   = "meridian"
	tsStatefulSet = "meridian"
)

// ctx bounds one apiserver call.
func tsCtx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 10*time.Second)
}

// reconcile does one pass of what the cluster's controllers would do.
// Objects a pod mounts that do not exist yet are waited for, as the kubelet
// does; anything it cannot run fails the test.
func (c *tsCluster) reconcile(t *testing.T) {
	t.Helper()
	c.loadBalancers(t)
	ctx, cancel := tsCtx()
	defer cancel()
	sts, err := c.cs.AppsV1().StatefulSets(tsNamespace).Get(ctx, tsStatefulSet, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	require.NoError(t, err, "%s: get StatefulSet", c.name)
	replicas := 1
	if sts.Spec.Replicas != nil {
		replicas = int(*sts.Spec.Replicas)
	}
	require.LessOrEqual(t, replicas, len(c.hosts), "%s: more replicas than pod hosts", c.name)
	rev := templateRevision(sts)
	for i := range replicas {
		name := fmt.Sprintf("%s-%d", sts.Name, i)
		c.mu.Lock()
		p := c.pods[name]
		c.mu.Unlock()
		vols, err := c.volumes(t, sts, name)
		if err != nil {
			continue // a volume's object is missing: the kubelet retries
		}
		if p == nil {
			env, err := c.env(t, sts, name, c.hosts[i])
			if err != nil {
				continue // a Secret key the env names is missing: the kubelet retries
			}
			c.startPod(t, sts, rev, name, c.hosts[i], vols, env)
			continue
		}
		c.updateVolumes(t, p, vols)
	}
	c.rollingUpdate(t, rev, replicas)
	c.statefulSetStatus(t, sts, rev)
}

// templateRevision names the StatefulSet's pod template as its controller
// names a revision: "<name>-<hash of the template>".
func templateRevision(sts *appsv1.StatefulSet) string {
	b, err := json.Marshal(sts.Spec.Template)
	if err != nil {
		panic(err) // a decoded object always encodes
	}
	h := fnv.New32a()
	h.Write(b)
	return fmt.Sprintf("%s-%08x", sts.Name, h.Sum32())
}

// rollingUpdate is the StatefulSet controller's RollingUpdate (maxUnavailable
// 1, also with podManagementPolicy Parallel): when a pod runs an older
// template and every pod is running and ready, the one of the highest
// ordinal is deleted (SIGTERM, then its root directory, emptyDirs with it);
// the next pass starts it from the new template, and the next older pod
// goes only once that one is ready.
func (c *tsCluster) rollingUpdate(t *testing.T, rev string, replicas int) {
	t.Helper()
	c.mu.Lock()
	pods := slices.Collect(maps.Values(c.pods))
	c.mu.Unlock()
	var old *tsPod
	for _, p := range pods {
		if !p.stopped && p.rev != rev && (old == nil || podOrdinal(p.name) > podOrdinal(old.name)) {
			old = p
		}
	}
	if old == nil || len(pods) < replicas {
		return
	}
	for _, p := range pods {
		if !p.stopped && !p.ready() {
			return
		}
	}
	t.Logf("%s: StatefulSet controller: pod %s runs %s, the template is %s: deleting it", c.name, old.name, old.rev, rev)
	if err := old.proc.Stop(); err != nil {
		t.Logf("%s: pod %s: %v", c.name, old.name, err)
	}
	require.NoError(t, os.RemoveAll(filepath.Dir(old.root)))
	c.mu.Lock()
	delete(c.pods, old.name)
	c.mu.Unlock()
}

// podOrdinal is the ordinal of a StatefulSet's pod, "<name>-<ordinal>".
func podOrdinal(pod string) int {
	n, _ := strconv.Atoi(pod[strings.LastIndexByte(pod, '-')+1:])
	return n
}

// loadBalancers sets the address of every LoadBalancer Service that has
// none, as the cloud's controller would: a pod's gossip Service gets the
// pod's own address, meridian-dns the site's DNS forwarder, shop/web the
// app's backend.
func (c *tsCluster) loadBalancers(t *testing.T) {
	t.Helper()
	ctx, cancel := tsCtx()
	defer cancel()
	list, err := c.cs.CoreV1().Services("").List(ctx, metav1.ListOptions{})
	require.NoError(t, err, "%s: list Services", c.name)
	for _, svc := range list.Items {
		if svc.Spec.Type != corev1.ServiceTypeLoadBalancer || len(svc.Status.LoadBalancer.Ingress) > 0 {
			continue
		}
		var ip netip.Addr
		switch {
		case svc.Namespace == tsNamespace && svc.Name == tsStatefulSet+"-dns":
			ip = c.lb
		case svc.Namespace == tsNamespace && strings.HasSuffix(svc.Name, "-gossip"):
			ord, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(svc.Name, tsStatefulSet+"-"), "-gossip"))
			if err != nil || ord < 0 || ord >= len(c.hosts) {
				continue
			}
			ip = c.hosts[ord].IP
		case svc.Namespace == "shop" && svc.Name == "web":
			ip = c.web
		default:
			continue
		}
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip.String()}}
		_, err := c.cs.CoreV1().Services(svc.Namespace).UpdateStatus(ctx, &svc, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsConflict(err) {
			require.NoError(t, err, "%s: set the load balancer of %s/%s", c.name, svc.Namespace, svc.Name)
		}
	}
}

// volumes is the content of every volume pod mounts, read from the
// apiserver now; an error when an object is missing (not yet created).
func (c *tsCluster) volumes(t *testing.T, sts *appsv1.StatefulSet, pod string) ([]tsVolume, error) {
	t.Helper()
	spec := sts.Spec.Template.Spec
	require.Len(t, spec.Containers, 1, "%s: one container", c.name)
	byName := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		byName[v.Name] = v
	}
	ctx, cancel := tsCtx()
	defer cancel()
	var out []tsVolume
	for _, vm := range spec.Containers[0].VolumeMounts {
		require.Empty(t, vm.SubPath, "%s: subPath mounts are not run here (and would never see updates)", c.name)
		v, ok := byName[vm.Name]
		require.True(t, ok, "%s: volume %s is mounted but not declared", c.name, vm.Name)
		vol := tsVolume{mountPath: vm.MountPath, files: map[string]tsFile{}}
		switch {
		case v.EmptyDir != nil:
			vol.emptyDir = true
		case v.Projected != nil:
			def := modeOr(v.Projected.DefaultMode, 0o644)
			for _, src := range v.Projected.Sources {
				switch {
				case src.ConfigMap != nil:
					cm, err := c.cs.CoreV1().ConfigMaps(sts.Namespace).Get(ctx, src.ConfigMap.Name, metav1.GetOptions{})
					if err != nil {
						return nil, err
					}
					project(vol.files, stringData(cm.Data), src.ConfigMap.Items, def)
				case src.Secret != nil:
					s, err := c.cs.CoreV1().Secrets(sts.Namespace).Get(ctx, src.Secret.Name, metav1.GetOptions{})
					if err != nil {
						return nil, err
					}
					project(vol.files, s.Data, src.Secret.Items, def)
				default:
					t.Fatalf("%s: volume %s: only ConfigMap and Secret sources are run here", c.name, v.Name)
				}
			}
		case v.Secret != nil:
			s, err := c.cs.CoreV1().Secrets(sts.Namespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			project(vol.files, s.Data, v.Secret.Items, modeOr(v.Secret.DefaultMode, 0o644))
		case v.ConfigMap != nil:
			cm, err := c.cs.CoreV1().ConfigMaps(sts.Namespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				return nil, err
			}
			project(vol.files, stringData(cm.Data), v.ConfigMap.Items, modeOr(v.ConfigMap.DefaultMode, 0o644))
		default:
			t.Fatalf("%s: volume %s: only emptyDir, projected, secret and configMap volumes are run here", c.name, v.Name)
		}
		out = append(out, vol)
	}
	return out, nil
}

func modeOr(m *int32, def os.FileMode) os.FileMode {
	if m == nil {
		return def
	}
	return os.FileMode(*m)
}

func stringData(m map[string]string) map[string][]byte {
	out := map[string][]byte{}
	for k, v := range m {
		out[k] = []byte(v)
	}
	return out
}

// project adds data's keys to files as a projection does: the listed items
// at their paths and modes, or every key at its own name.
func project(files map[string]tsFile, data map[string][]byte, items []corev1.KeyToPath, def os.FileMode) {
	if len(items) == 0 {
		for k, v := range data {
			files[k] = tsFile{data: v, mode: def}
		}
		return
	}
	for _, it := range items {
		files[it.Path] = tsFile{data: data[it.Key], mode: modeOr(it.Mode, def)}
	}
}

// fsGroup is the group of the pod's volumes (0 without one).
func fsGroup(spec corev1.PodSpec) int {
	if sc := spec.SecurityContext; sc != nil && sc.FSGroup != nil {
		return int(*sc.FSGroup)
	}
	return 0
}

// env is the container's environment as the kubelet makes it: the
// apiserver's address, the image's SSL_CERT_FILE, then the container's env
// in order (values, the pod's fields, Secret keys read now). An error when
// a Secret or key it names is missing and not optional: the kubelet
// retries.
func (c *tsCluster) env(t *testing.T, sts *appsv1.StatefulSet, name string, h *Host) (map[string]string, error) {
	t.Helper()
	env := map[string]string{
		"KUBERNETES_SERVICE_HOST": "127.0.0.1",
		"KUBERNETES_SERVICE_PORT": strconv.Itoa(c.m.Port),
		"SSL_CERT_FILE":           "/etc/ssl/certs/ca-certificates.crt",
	}
	for _, e := range sts.Spec.Template.Spec.Containers[0].Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.FieldRef != nil:
			v, ok := map[string]string{"metadata.name": name, "metadata.namespace": sts.Namespace, "status.podIP": h.IP.String()}[e.ValueFrom.FieldRef.FieldPath]
			require.True(t, ok, "%s: env %s: field %s is not run here", c.name, e.Name, e.ValueFrom.FieldRef.FieldPath)
			env[e.Name] = v
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			optional := ref.Optional != nil && *ref.Optional
			ctx, cancel := tsCtx()
			sec, err := c.cs.CoreV1().Secrets(sts.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			cancel()
			if apierrors.IsNotFound(err) && optional {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("env %s: %w", e.Name, err)
			}
			v, ok := sec.Data[ref.Key]
			if !ok && optional {
				continue
			}
			if !ok {
				return nil, fmt.Errorf("env %s: Secret %s has no key %s", e.Name, ref.Name, ref.Key)
			}
			env[e.Name] = string(v)
		default:
			t.Fatalf("%s: env %s: only values, field refs and Secret keys are run here", c.name, e.Name)
		}
	}
	return env, nil
}

// startPod lays out the pod's root directory and starts its container,
// from revision rev of the template, with the volumes and environment given.
func (c *tsCluster) startPod(t *testing.T, sts *appsv1.StatefulSet, rev, name string, h *Host, vols []tsVolume, env map[string]string) {
	t.Helper()
	spec := sts.Spec.Template.Spec
	ctr := spec.Containers[0]
	group := fsGroup(spec)
	p := &tsPod{name: name, site: c.name, host: h, root: filepath.Join(c.dir, name, "root"), rev: rev, volumes: vols, group: group}
	for _, d := range []string{"etc/ssl/certs", "var/run/secrets/kubernetes.io/serviceaccount"} {
		require.NoError(t, os.MkdirAll(filepath.Join(p.root, d), 0o755))
	}
	require.NoError(t, os.Mkdir(filepath.Join(p.root, "tmp"), 0o777))
	require.NoError(t, os.Chmod(filepath.Join(p.root, "tmp"), 0o1777))
	// The image: the static binary, the CA bundle, the users.
	copyFile(t, meridianBin, filepath.Join(p.root, "meridian"), 0o755)
	if _, err := os.Stat("/etc/ssl/certs/ca-certificates.crt"); err == nil {
		copyFile(t, "/etc/ssl/certs/ca-certificates.crt", filepath.Join(p.root, "etc/ssl/certs/ca-certificates.crt"), 0o644)
	}
	writeRoot(t, p.root, "etc/passwd", "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n", 0o644, 0)
	writeRoot(t, p.root, "etc/group", "root:x:0:\nnonroot:x:65532:\n", 0o644, 0)
	// What the kubelet adds: host name, hosts, the resolver (dnsPolicy
	// ClusterFirst: the cluster's search list, ndots 5), the token.
	sub := fmt.Sprintf("%s.%s.%s.svc.cluster.local", name, sts.Spec.ServiceName, sts.Namespace)
	writeRoot(t, p.root, "etc/hostname", name+"\n", 0o644, 0)
	writeRoot(t, p.root, "etc/hosts", fmt.Sprintf("127.0.0.1\tlocalhost\n%s\t%s %s\n", h.IP, sub, name), 0o644, 0)
	writeRoot(t, p.root, "etc/resolv.conf", fmt.Sprintf("search %[1]s.svc.cluster.local svc.cluster.local cluster.local\nnameserver %[2]s\noptions ndots:5\n", sts.Namespace, c.resolver), 0o644, 0)
	c.serviceAccount(t, p, spec.ServiceAccountName, sts.Namespace, group)
	for i := range p.volumes {
		writeVolume(t, p.root, &p.volumes[i], group)
	}
	// The apiservers, at their root-namespace loopback addresses (once a
	// host: a replaced pod finds them open).
	if !c.bridged[h.NS] {
		for _, port := range c.bridges {
			bridgeIntoNetns(c.life, h.NS, port)
		}
		c.bridged[h.NS] = true
	}

	args := slices.Clone(ctr.Args)
	for i, a := range args {
		for k, v := range env {
			a = strings.ReplaceAll(a, "$("+k+")", v)
		}
		args[i] = a
	}
	require.Empty(t, ctr.Command, "%s: the image's entrypoint runs", c.name)
	uid, gid := 0, 0
	if sc := spec.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			uid = int(*sc.RunAsUser)
		}
		if sc.RunAsGroup != nil {
			gid = int(*sc.RunAsGroup)
		}
	}
	groups := strconv.Itoa(gid)
	if group != 0 {
		groups += "," + strconv.Itoa(group)
	}
	envList := []string{}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		envList = append(envList, k+"="+env[k])
	}
	// The host name in a UTS namespace of its own, then a clean
	// environment, the root directory and the pod's user and groups. The
	// change of user clears PR_SET_PDEATHSIG: if the test binary is killed,
	// a pod runs on until the next lab's sweep of stale namespaces (NETNS.md).
	cmd := append([]string{"--uts", "--", "/bin/sh", "-c", `hostname "$0" && exec "$@"`, name,
		"/usr/bin/env", "-i"}, envList...)
	cmd = append(cmd, tsChroot, fmt.Sprintf("--userspec=%d:%d", uid, gid), "--groups="+groups, p.root, "/meridian")
	cmd = append(cmd, args...)
	p.proc = h.Start(c.life, c.name+"/"+name, "unshare", cmd...)
	t.Logf("%s: pod %s (%s) runs on %s (%s) as %d:%d, groups %s: /meridian %s", c.name, name, rev, h.Name, h.IP, uid, gid, groups, strings.Join(args, " "))
	c.mu.Lock()
	c.pods[name] = p
	c.mu.Unlock()
}

// tsChroot runs the container's process in its root directory as its user.
const tsChroot = "/usr/sbin/chroot"

// serviceAccount writes the token volume the kubelet mounts into every pod
// of a ServiceAccount: a token from the TokenRequest API, the cluster's CA,
// the namespace.
func (c *tsCluster) serviceAccount(t *testing.T, p *tsPod, sa, ns string, group int) {
	t.Helper()
	if sa == "" {
		sa = "default"
	}
	ctx, cancel := tsCtx()
	defer cancel()
	expiry := int64(3600)
	tr, err := c.cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}}, metav1.CreateOptions{})
	require.NoError(t, err, "%s: token for ServiceAccount %s/%s", c.name, ns, sa)
	vol := tsVolume{mountPath: "/var/run/secrets/kubernetes.io/serviceaccount", files: map[string]tsFile{
		"token":     {data: []byte(tr.Status.Token), mode: 0o644},
		"ca.crt":    {data: c.m.CAPEM, mode: 0o644},
		"namespace": {data: []byte(ns), mode: 0o644},
	}}
	writeVolume(t, p.root, &vol, group)
}

// writeVolume writes a volume into the pod's root as the kubelet's atomic
// writer does: the files in a new directory ..<gen>, the symlink ..data
// swapped to it by a rename, and each top-level name a symlink through
// ..data. An emptyDir is a 0777 directory.
func writeVolume(t *testing.T, root string, v *tsVolume, group int) {
	t.Helper()
	dir := filepath.Join(root, v.mountPath)
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.Chown(dir, 0, group))
	if v.emptyDir {
		require.NoError(t, os.Chmod(dir, 0o777|os.ModeSetgid))
		return
	}
	v.gen++
	ts := fmt.Sprintf("..%s.%d", time.Now().UTC().Format("2006_01_02_15_04_05"), v.gen)
	for rel, f := range v.files {
		path := filepath.Join(dir, ts, rel)
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, f.data, f.mode))
		require.NoError(t, os.Chmod(path, f.mode))
		require.NoError(t, os.Chown(path, 0, group))
	}
	require.NoError(t, filepath.Walk(filepath.Join(dir, ts), func(path string, info os.FileInfo, err error) error {
		if err == nil && info.IsDir() {
			err = os.Chown(path, 0, group)
		}
		return err
	}))
	old, _ := os.Readlink(filepath.Join(dir, "..data"))
	tmp := filepath.Join(dir, "..data_tmp")
	_ = os.Remove(tmp)
	require.NoError(t, os.Symlink(ts, tmp))
	require.NoError(t, os.Rename(tmp, filepath.Join(dir, "..data")))
	top := map[string]bool{}
	for rel := range v.files {
		top[strings.SplitN(rel, "/", 2)[0]] = true
	}
	for name := range top {
		link := filepath.Join(dir, name)
		if _, err := os.Lstat(link); err != nil {
			require.NoError(t, os.Symlink(filepath.Join("..data", name), link))
		}
	}
	if old != "" && old != ts {
		require.NoError(t, os.RemoveAll(filepath.Join(dir, old)))
	}
}

// updateVolumes rewrites the pod's ConfigMap and Secret volumes whose
// objects changed, as the kubelet's periodic sync does.
func (c *tsCluster) updateVolumes(t *testing.T, p *tsPod, vols []tsVolume) {
	t.Helper()
	for i := range p.volumes {
		old := &p.volumes[i]
		if old.emptyDir || sameFiles(old.files, vols[i].files) {
			continue
		}
		old.files = vols[i].files
		writeVolume(t, p.root, old, p.group)
		t.Logf("%s: kubelet: %s of pod %s rewritten (..data swapped)", c.name, old.mountPath, p.name)
	}
}

func sameFiles(a, b map[string]tsFile) bool {
	return maps.EqualFunc(a, b, func(x, y tsFile) bool { return x.mode == y.mode && string(x.data) == string(y.data) })
}

// statefulSetStatus reports the pods in the StatefulSet's status as its
// controller would: ready ones, and the revisions (the template's, rev, is
// the update revision; the current one is the older pods' until none is
// left), so that `kubectl rollout status` waits for a rolling update too.
func (c *tsCluster) statefulSetStatus(t *testing.T, sts *appsv1.StatefulSet, rev string) {
	t.Helper()
	ready, updated := int32(0), int32(0)
	current := rev
	c.mu.Lock()
	pods := slices.Collect(maps.Values(c.pods))
	c.mu.Unlock()
	for _, p := range pods {
		if !p.stopped && p.ready() {
			ready++
		}
		if p.rev == rev {
			updated++
		} else {
			current = p.rev
		}
	}
	currentReplicas := updated
	if current != rev {
		currentReplicas = int32(len(pods)) - updated
	}
	st := sts.Status
	want := appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: int32(len(pods)), ReadyReplicas: ready,
		CurrentReplicas: currentReplicas, UpdatedReplicas: updated, AvailableReplicas: ready,
		CurrentRevision: current, UpdateRevision: rev, CollisionCount: st.CollisionCount}
	if st.ObservedGeneration == want.ObservedGeneration && st.ReadyReplicas == ready && st.Replicas == want.Replicas &&
		st.CurrentRevision == current && st.UpdateRevision == rev && st.UpdatedReplicas == updated {
		return
	}
	sts.Status = want
	ctx, cancel := tsCtx()
	defer cancel()
	_, err := c.cs.AppsV1().StatefulSets(sts.Namespace).UpdateStatus(ctx, sts, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsConflict(err) {
		require.NoError(t, err, "%s: StatefulSet status", c.name)
	}
}

// ready is the readiness probe of the chart (GET /readyz on port probes, 8081: server.http.probe_listen).
func (p *tsPod) ready() bool {
	select {
	case <-p.proc.Exited():
		return false
	default:
	}
	code, _, err := netnsGet(p.host.NS, fmt.Sprintf("http://%s:8081/readyz", p.host.IP))
	return err == nil && code == http.StatusOK
}

// copyFile copies src to dst with mode.
func copyFile(t *testing.T, src, dst string, mode os.FileMode) {
	t.Helper()
	in, err := os.Open(src)
	require.NoError(t, err)
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, mode)
	require.NoError(t, err)
	_, err = io.Copy(out, in)
	require.NoError(t, err)
	require.NoError(t, out.Close())
}

func writeRoot(t *testing.T, root, rel, content string, mode os.FileMode, group int) {
	t.Helper()
	p := filepath.Join(root, rel)
	require.NoError(t, os.WriteFile(p, []byte(content), mode))
	require.NoError(t, os.Chown(p, 0, group))
}

// inNetns runs fn on an OS thread moved into the network namespace ns (a
// lab host's); sockets fn opens stay in ns. If the thread cannot move back
// it stays locked and ends with its goroutine.
func inNetns(ns string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer self.Close()
		target, err := os.Open(filepath.Join("/run/netns", ns))
		if err != nil {
			runtime.UnlockOSThread()
			errc <- err
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("setns %s: %w", ns, err)
			return
		}
		err = fn()
		if unix.Setns(int(self.Fd()), unix.CLONE_NEWNET) == nil {
			runtime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// netnsDial opens a connection from inside ns.
func netnsDial(ns, network, addr string, timeout time.Duration) (net.Conn, error) {
	var c net.Conn
	err := inNetns(ns, func() error {
		var err error
		c, err = net.DialTimeout(network, addr, timeout)
		return err
	})
	return c, err
}

// netnsHTTP is an HTTP client whose connections start inside ns.
func netnsHTTP(ns string, timeout time.Duration) *http.Client {
	return &http.Client{Timeout: timeout, Transport: &http.Transport{
		DisableKeepAlives: true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			return netnsDial(ns, network, addr, timeout)
		},
	}}
}

// netnsGet GETs url from inside ns (3 s at most).
func netnsGet(ns, url string) (int, string, error) {
	resp, err := netnsHTTP(ns, 3*time.Second).Get(url)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	return resp.StatusCode, string(b), err
}

// bridgeIntoNetns makes 127.0.0.1:port inside ns reach 127.0.0.1:port of
// the root namespace (an apiserver of the lab), so kubeconfigs naming it
// work unchanged in the pods: a listener opened inside ns by this process,
// each connection copied to a root-namespace connection.
func bridgeIntoNetns(t testing.TB, ns string, port int) {
	t.Helper()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	var ln net.Listener
	require.NoError(t, inNetns(ns, func() error {
		var err error
		ln, err = net.Listen("tcp", addr)
		return err
	}), "bridge %s into %s", addr, ns)
	var wg sync.WaitGroup
	var mu sync.Mutex
	open := map[net.Conn]bool{}
	track := func(c net.Conn, add bool) {
		mu.Lock()
		defer mu.Unlock()
		if add {
			open[c] = true
		} else {
			delete(open, c)
		}
	}
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range open { // watches never end on their own
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Go(func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				track(in, true)
				defer func() { track(in, false); in.Close() }()
				out, err := net.DialTimeout("tcp", addr, 5*time.Second)
				if err != nil {
					return
				}
				track(out, true)
				defer func() { track(out, false); out.Close() }()
				done := make(chan struct{})
				go func() { _, _ = io.Copy(out, in); out.(*net.TCPConn).CloseWrite(); close(done) }()
				_, _ = io.Copy(in, out)
				in.(*net.TCPConn).CloseWrite()
				<-done
			})
		}
	})
}

// netnsHelperDNSLB is a site's DNS load balancer: it listens on addr (port
// 53, UDP and TCP) and sends each query, or TCP connection, to one of the
// backends (host:port, comma-separated) that accepted a TCP connection in
// the last second, as a cloud load balancer with a TCP health check does.
func netnsHelperDNSLB(addr, backends string) error {
	targets := strings.Split(backends, ",")
	var mu sync.Mutex
	healthy := map[string]bool{}
	go func() {
		for {
			for _, b := range targets {
				c, err := net.DialTimeout("tcp", b, 500*time.Millisecond)
				if err == nil {
					c.Close()
				}
				mu.Lock()
				healthy[b] = err == nil
				mu.Unlock()
			}
			time.Sleep(time.Second)
		}
	}()
	var next int
	pick := func() (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		for range targets {
			next = (next + 1) % len(targets)
			if healthy[targets[next]] {
				return targets[next], true
			}
		}
		return "", false
	}
	pc, err := net.ListenPacket("udp", addr)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	go func() {
		for {
			in, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer in.Close()
				b, ok := pick()
				if !ok {
					return
				}
				out, err := net.DialTimeout("tcp", b, 2*time.Second)
				if err != nil {
					return
				}
				defer out.Close()
				go func() { _, _ = io.Copy(out, in) }()
				_ = in.SetDeadline(time.Now().Add(30 * time.Second))
				_, _ = io.Copy(in, out)
			}()
		}
	}()
	fmt.Printf("ready %s\n", addr)
	buf := make([]byte, 65535)
	for {
		n, from, err := pc.ReadFrom(buf)
		if err != nil {
			return err
		}
		q := slices.Clone(buf[:n])
		go func() {
			b, ok := pick()
			if !ok {
				return
			}
			c, err := net.Dial("udp", b)
			if err != nil {
				return
			}
			defer c.Close()
			_ = c.SetDeadline(time.Now().Add(3 * time.Second))
			if _, err := c.Write(q); err != nil {
				return
			}
			r := make([]byte, 65535)
			m, err := c.Read(r)
			if err != nil {
				return
			}
			_, _ = pc.WriteTo(r[:m], from)
		}()
	}
}

// startDNSLB runs a site's DNS load balancer on h at addr:53.
func startDNSLB(t *testing.T, h *Host, addr netip.Addr, pods []*Host) *Proc {
	t.Helper()
	var backends []string
	for _, p := range pods {
		backends = append(backends, netip.AddrPortFrom(p.IP, 5353).String())
	}
	p := h.startHelper(t, "dnslb "+addr.String(), "dnslb", netip.AddrPortFrom(addr, 53).String(), strings.Join(backends, ","))
	p.WaitFor(t, "ready", 10*time.Second)
	return p
}

// errNotReady marks a condition not reached yet in a poll.
var errNotReady = errors.New("not yet")

// lookPath finds a program in PATH or /usr/sbin.
func lookPath(t *testing.T, name string) string {
	t.Helper()
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	p := "/usr/sbin/" + name
	_, err := os.Stat(p)
	require.NoError(t, err, "%s not found: run `make e2e`, which installs it", name)
	return p
}
