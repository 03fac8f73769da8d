package kubelab

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/util/retry"
)

// ServiceClusterIPRange is every member's --service-cluster-ip-range.
const ServiceClusterIPRange = "10.96.0.0/16"

// Member is one simulated member cluster: a kube-apiserver on
// 127.0.0.1:Port that stores under /registry-<Name> in the lab's etcd.
type Member struct {
	Name string
	// URL is https://127.0.0.1:<Port>.
	URL  string
	Port int
	// CAPEM is the CA that signed the serving cert (IP SAN 127.0.0.1).
	CAPEM []byte
	// ClientCAPEM is the apiserver's --client-ca-file: it signs client certs.
	ClientCAPEM []byte
	// Issuer is the --service-account-issuer (the "iss" of its tokens).
	Issuer string

	lab                *Lab
	dir                string
	serverCA, clientCA *authority
	adminCert          []byte
	adminKey           []byte
	proc               *proc
	ready              probe

	opMu sync.Mutex // serializes Start and Stop
}

// KubeUser says who a kubeconfig (or rest.Config) authenticates as, and
// whether it trusts the right CA. Either Token is set, or a client cert is
// issued by the member's client CA for CommonName (user) and Groups.
type KubeUser struct {
	// CommonName and Groups (the cert's O) of the client cert.
	CommonName string
	Groups     []string
	// NotAfter of the client cert; zero means valid for a day. A time in the
	// past makes an expired cert, which the apiserver answers with 401.
	NotAfter time.Time
	// Token, when set, is sent as a bearer token instead of a client cert.
	Token string
	// WrongCA writes a CA unrelated to the member as the server's CA, so that
	// TLS verification fails (x509.UnknownAuthorityError).
	WrongCA bool
	// ServerCAPEM, when set, replaces the member's CA (another member's
	// CAPEM, say). WrongCA wins over it.
	ServerCAPEM []byte
}

var (
	// AdminUser is a cluster admin by client cert (O=system:masters).
	AdminUser = KubeUser{CommonName: "kubelab-admin", Groups: []string{"system:masters"}}
	// ExpiredAdminUser is AdminUser with a client cert that expired an hour
	// before the package was loaded: the apiserver answers 401.
	ExpiredAdminUser = KubeUser{CommonName: "kubelab-admin", Groups: []string{"system:masters"}, NotAfter: time.Now().Add(-time.Hour)}
	// WrongCAAdminUser is AdminUser with a kubeconfig that trusts an
	// unrelated CA for the server: the client fails TLS verification.
	WrongCAAdminUser = KubeUser{CommonName: "kubelab-admin", Groups: []string{"system:masters"}, WrongCA: true}
)

// TokenUser authenticates with a bearer token (a ServiceAccountToken, say).
func TokenUser(token string) KubeUser { return KubeUser{Token: token} }

// newMember prepares a member: its CAs, certs and keys in its own
// directory, and its kube-apiserver process on port (not started).
func newMember(lab *Lab, bins, name string, port int) (*Member, error) {
	dir := filepath.Join(lab.dir, "member-"+name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	m := &Member{
		Name:   name,
		Port:   port,
		URL:    "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(port)),
		Issuer: "https://kubelab-" + name + ".invalid",
		lab:    lab,
		dir:    dir,
	}
	if err := m.writeCerts(); err != nil {
		return nil, err
	}
	var err error
	if m.ready, err = httpsProbe(m.URL, "/readyz", m.CAPEM, m.adminCert, m.adminKey); err != nil {
		return nil, err
	}
	m.proc = m.apiserver(bins)
	return m, nil
}

// writeCerts makes the member's server and client CAs, its admin client
// cert, and writes the apiserver's serving cert, client CA and service
// account key into its directory.
func (m *Member) writeCerts() error {
	var err error
	if m.serverCA, err = newAuthority("kubelab-" + m.Name + "-server-ca"); err != nil {
		return err
	}
	if m.clientCA, err = newAuthority("kubelab-" + m.Name + "-client-ca"); err != nil {
		return err
	}
	m.CAPEM, m.ClientCAPEM = m.serverCA.certPEM, m.clientCA.certPEM
	servingCert, servingKey, err := m.serverCA.issue(leaf{
		commonName: "kube-apiserver-" + m.Name,
		ips:        []net.IP{net.IPv4(127, 0, 0, 1)},
		dnsNames:   []string{"localhost"},
		server:     true,
	})
	if err != nil {
		return err
	}
	if m.adminCert, m.adminKey, err = m.issueClient(AdminUser); err != nil {
		return err
	}
	saKey, err := newSAKey()
	if err != nil {
		return err
	}
	files := map[string][]byte{
		"serving.crt": servingCert, "serving.key": servingKey,
		"client-ca.crt": m.ClientCAPEM, "sa.key": saKey,
	}
	for f, b := range files {
		if err := os.WriteFile(filepath.Join(m.dir, f), b, 0o600); err != nil {
			return err
		}
	}
	return nil
}

// apiserver is the member's kube-apiserver process, on the lab's etcd under
// a prefix of its own.
func (m *Member) apiserver(bins string) *proc {
	name, dir := m.Name, m.dir
	return &proc{
		name: "kube-apiserver-" + name,
		bin:  filepath.Join(bins, "kube-apiserver"),
		args: []string{
			"--etcd-servers=" + m.lab.EtcdURL,
			"--etcd-prefix=/registry-" + name,
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(m.Port),
			"--cert-dir=" + dir,
			"--tls-cert-file=" + filepath.Join(dir, "serving.crt"),
			"--tls-private-key-file=" + filepath.Join(dir, "serving.key"),
			"--client-ca-file=" + filepath.Join(dir, "client-ca.crt"),
			"--authorization-mode=RBAC",
			"--service-account-issuer=" + m.Issuer,
			"--service-account-key-file=" + filepath.Join(dir, "sa.key"),
			"--service-account-signing-key-file=" + filepath.Join(dir, "sa.key"),
			"--service-cluster-ip-range=" + ServiceClusterIPRange,
			// The advertise address is 127.0.0.1, which an Endpoints object
			// may not hold; no kubernetes.default endpoints are needed here.
			"--endpoint-reconciler-type=none",
			"--profiling=false",
		},
		logPath: filepath.Join(m.lab.dir, "kube-apiserver-"+name+".log"),
	}
}

func newSAKey() ([]byte, error) {
	a, err := newAuthority("sa") // only its key is used
	if err != nil {
		return nil, err
	}
	return ecKeyPEM(a.key)
}

// issueClient issues a client cert for user from the member's client CA.
func (m *Member) issueClient(user KubeUser) (certPEM, keyPEM []byte, err error) {
	if user.CommonName == "" {
		return nil, nil, fmt.Errorf("KubeUser has neither Token nor CommonName")
	}
	return m.clientCA.issue(leaf{commonName: user.CommonName, orgs: user.Groups, notAfter: user.NotAfter})
}

// Start starts the member's kube-apiserver again after Stop, on the same port
// with the same certs and keys, and waits (ReadyTimeout) for /readyz. It does
// nothing but wait when the apiserver runs. Safe for concurrent use.
func (m *Member) Start() error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	return m.start()
}

func (m *Member) start() error {
	if err := m.proc.start(); err != nil {
		return err
	}
	return waitReady(m.proc, m.ready)
}

// Stop stops the member's kube-apiserver (SIGTERM, then SIGKILL after 15s) to
// simulate an outage: connections to URL are refused until Start.
func (m *Member) Stop() error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	return m.proc.stop(stopGrace)
}

// Kill stops the member's kube-apiserver with SIGKILL: an abrupt crash.
func (m *Member) Kill() error {
	m.opMu.Lock()
	defer m.opMu.Unlock()
	return m.proc.stop(0)
}

// LogPath is the kube-apiserver's log file (appended to across restarts).
func (m *Member) LogPath() string { return m.proc.logPath }

// AdminConfig is a rest.Config for a cluster admin (client cert with
// O=system:masters).
func (m *Member) AdminConfig() *rest.Config {
	return &rest.Config{
		Host: m.URL,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   m.CAPEM,
			CertData: m.adminCert,
			KeyData:  m.adminKey,
		},
		QPS:   100,
		Burst: 200,
	}
}

// RESTConfig is a rest.Config for user (see KubeUser).
func (m *Member) RESTConfig(user KubeUser) (*rest.Config, error) {
	kc, err := m.kubeconfig(user)
	if err != nil {
		return nil, err
	}
	return clientcmd.NewDefaultClientConfig(*kc, nil).ClientConfig()
}

// Kubeconfig writes a kubeconfig for user to a file in t.TempDir() and returns
// its path. Its one context, also the current one, is named after the member.
func (m *Member) Kubeconfig(t testing.TB, user KubeUser) string {
	t.Helper()
	kc, err := m.kubeconfig(user)
	require.NoError(t, err)
	f, err := os.CreateTemp(t.TempDir(), "kubeconfig-"+m.Name+"-*.yaml")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	require.NoError(t, clientcmd.WriteToFile(*kc, f.Name()))
	return f.Name()
}

func (m *Member) kubeconfig(user KubeUser) (*clientcmdapi.Config, error) {
	ca := m.CAPEM
	if user.ServerCAPEM != nil {
		ca = user.ServerCAPEM
	}
	if user.WrongCA {
		ca = m.lab.rogueCA.certPEM
	}
	auth := clientcmdapi.NewAuthInfo()
	if user.Token != "" {
		auth.Token = user.Token
	} else {
		var err error
		if auth.ClientCertificateData, auth.ClientKeyData, err = m.issueClient(user); err != nil {
			return nil, err
		}
	}
	cluster := clientcmdapi.NewCluster()
	cluster.Server = m.URL
	cluster.CertificateAuthorityData = ca
	kctx := clientcmdapi.NewContext()
	kctx.Cluster, kctx.AuthInfo = m.Name, m.Name
	kc := clientcmdapi.NewConfig()
	kc.Clusters[m.Name] = cluster
	kc.AuthInfos[m.Name] = auth
	kc.Contexts[m.Name] = kctx
	kc.CurrentContext = m.Name
	return kc, nil
}

// Client is an admin clientset for the member.
func (m *Member) Client(t testing.TB) kubernetes.Interface {
	t.Helper()
	c, err := kubernetes.NewForConfig(m.AdminConfig())
	require.NoError(t, err)
	return c
}

func opContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// EnsureNamespace creates the namespace unless it exists.
func (m *Member) EnsureNamespace(t testing.TB, ns string) {
	t.Helper()
	_, err := m.Client(t).CoreV1().Namespaces().Create(opContext(t),
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err, "create namespace %s in %s", ns, m.Name)
	}
}

// ServiceAccountToken creates the namespace and service account when missing
// and returns a token for it from the TokenRequest API (valid one hour,
// audience: the member's issuer). The account has no RBAC grants: see
// BindClusterRole.
func (m *Member) ServiceAccountToken(t testing.TB, ns, name string) string {
	t.Helper()
	m.EnsureNamespace(t, ns)
	c := m.Client(t)
	ctx := opContext(t)
	_, err := c.CoreV1().ServiceAccounts(ns).Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err, "create service account %s/%s in %s", ns, name, m.Name)
	}
	expiry := int64(3600)
	tr, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &expiry}},
		metav1.CreateOptions{})
	require.NoError(t, err, "token request for %s/%s in %s", ns, name, m.Name)
	require.NotEmpty(t, tr.Status.Token)
	return tr.Status.Token
}

// BindClusterRole binds the cluster role (e.g. "view", "cluster-admin") to
// the service account ns/name, cluster-wide. An aggregated role (admin, edit,
// view) gets its rules filled in first, once, as kube-controller-manager's
// aggregation controller would (there is none here).
func (m *Member) BindClusterRole(t testing.TB, ns, name, clusterRole string) {
	t.Helper()
	c := m.Client(t)
	ctx := opContext(t)
	require.NoError(t, aggregateClusterRole(ctx, c, clusterRole), "aggregate cluster role %s in %s", clusterRole, m.Name)
	_, err := c.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "kubelab:" + ns + ":" + name + ":" + clusterRole},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: name}},
	}, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		require.NoError(t, err, "bind %s to %s/%s in %s", clusterRole, ns, name, m.Name)
	}
}

// aggregateClusterRole sets the rules of an aggregated cluster role to the
// union of the rules of the roles its selectors match (recursively).
func aggregateClusterRole(ctx context.Context, c kubernetes.Interface, name string) error {
	roles := c.RbacV1().ClusterRoles()
	role, err := roles.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil // the binding may come first
	}
	if err != nil || role.AggregationRule == nil {
		return err
	}
	var rules []rbacv1.PolicyRule
	seen := map[string]bool{name: true}
	for _, sel := range role.AggregationRule.ClusterRoleSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&sel)
		if err != nil {
			return err
		}
		list, err := roles.List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
		if err != nil {
			return err
		}
		for _, r := range list.Items {
			if seen[r.Name] {
				continue
			}
			seen[r.Name] = true
			if r.AggregationRule != nil {
				if err := aggregateClusterRole(ctx, c, r.Name); err != nil {
					return err
				}
				got, err := roles.Get(ctx, r.Name, metav1.GetOptions{})
				if err != nil {
					return err
				}
				r = *got
			}
			rules = append(rules, r.Rules...)
		}
	}
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		role, err := roles.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		role.Rules = rules
		_, err = roles.Update(ctx, role, metav1.UpdateOptions{})
		return err
	})
}

// SetLoadBalancerIP sets status.loadBalancer.ingress of the Service, as a
// cloud controller would (there is none here). Each value that is not an IP
// is set as a hostname; none clears the status.
func (m *Member) SetLoadBalancerIP(t testing.TB, ns, svcName string, ips ...string) {
	t.Helper()
	c := m.Client(t).CoreV1().Services(ns)
	ctx := opContext(t)
	var ingress []corev1.LoadBalancerIngress
	for _, v := range ips {
		if net.ParseIP(v) != nil {
			ingress = append(ingress, corev1.LoadBalancerIngress{IP: v})
		} else {
			ingress = append(ingress, corev1.LoadBalancerIngress{Hostname: v})
		}
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		svc, err := c.Get(ctx, svcName, metav1.GetOptions{})
		if err != nil {
			return err
		}
		svc.Status.LoadBalancer.Ingress = ingress
		_, err = c.UpdateStatus(ctx, svc, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err, "set load balancer status of service %s/%s in %s", ns, svcName, m.Name)
}

// SetIngressLoadBalancerIP is SetLoadBalancerIP for an Ingress
// (status.loadBalancer.ingress), as an ingress controller would.
func (m *Member) SetIngressLoadBalancerIP(t testing.TB, ns, name string, ips ...string) {
	t.Helper()
	c := m.Client(t).NetworkingV1().Ingresses(ns)
	ctx := opContext(t)
	var ingress []networkingv1.IngressLoadBalancerIngress
	for _, v := range ips {
		if net.ParseIP(v) != nil {
			ingress = append(ingress, networkingv1.IngressLoadBalancerIngress{IP: v})
		} else {
			ingress = append(ingress, networkingv1.IngressLoadBalancerIngress{Hostname: v})
		}
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ing, err := c.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		ing.Status.LoadBalancer.Ingress = ingress
		_, err = c.UpdateStatus(ctx, ing, metav1.UpdateOptions{})
		return err
	})
	require.NoError(t, err, "set load balancer status of ingress %s/%s in %s", ns, name, m.Name)
}
