package join

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/meridian-gslb/meridian/internal/kube"
	"github.com/meridian-gslb/meridian/internal/kube/grants"
)

func TestOptionsNormalize(t *testing.T) {
	ok := Options{Name: "west", Region: "us-west"}
	for _, c := range []struct {
		name    string
		opts    func(o *Options)
		wantErr string // "" = accepted
		check   func(t *testing.T, o Options)
	}{
		{name: "the defaults fill in both namespaces and a year of token", opts: func(*Options) {},
			check: func(t *testing.T, o Options) {
				assert.Equal(t, "meridian", o.Namespace)
				assert.Equal(t, "meridian", o.HubNamespace)
				assert.Equal(t, 8760*time.Hour, o.TokenExpiry)
				assert.Empty(t, o.Components)
			}},
		{name: "components are deduplicated and put in grants' order", opts: func(o *Options) { o.Components = []string{"propagation", " status-annotation", "propagation"} },
			check: func(t *testing.T, o Options) {
				assert.Equal(t, []string{"status-annotation", "propagation"}, o.Components)
			}},
		{name: "a missing name is refused naming --name", opts: func(o *Options) { o.Name = "" }, wantErr: "--name is required"},
		{name: "a name with capitals is refused with what is allowed", opts: func(o *Options) { o.Name = "West" }, wantErr: `--name "West": a lowercase RFC 1123 label`},
		{name: "a missing region is refused naming --region", opts: func(o *Options) { o.Region = "" }, wantErr: "--region is required"},
		{name: "a region with a space is refused", opts: func(o *Options) { o.Region = "us west" }, wantErr: `--region "us west": contains white space`},
		{name: "a namespace that is not a DNS label is refused", opts: func(o *Options) { o.Namespace = "a_b" }, wantErr: `--namespace "a_b"`},
		{name: "a hub namespace that is not a DNS label is refused", opts: func(o *Options) { o.HubNamespace = "A" }, wantErr: `--hub-namespace "A"`},
		{name: "an unknown component names the allowed ones", opts: func(o *Options) { o.Components = []string{"status"} },
			wantErr: `--components: unknown component "status" (allowed: status-annotation, propagation)`},
		{name: "a plain http server is refused", opts: func(o *Options) { o.Server = "http://10.0.0.1:6443" }, wantErr: `--server "http://10.0.0.1:6443": not an https:// URL`},
		{name: "an https server with a path is accepted", opts: func(o *Options) { o.Server = "https://rancher.example/k8s/clusters/c-1" }},
		{name: "a token expiry under ten minutes is refused", opts: func(o *Options) { o.TokenExpiry = 5 * time.Minute }, wantErr: "--token-expiry 5m0s: shorter than 10m0s"},
		{name: "every problem is reported at once", opts: func(o *Options) { o.Name, o.Region = "", "" }, wantErr: "--name is required"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := ok
			c.opts(&o)
			got, err := o.Normalize()
			if c.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.wantErr)
				return
			}
			require.NoError(t, err)
			if c.check != nil {
				c.check(t, got)
			}
		})
	}
	_, err := Options{}.Normalize()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "--region is required", "all problems together")
}

func TestNewPlan(t *testing.T) {
	for _, c := range []struct {
		name       string
		components []string
		namespace  string
		wantRoles  []string
		wantRules  [][]rbacv1.PolicyRule
	}{
		{name: "the base grants the member rules of grants and nothing else",
			wantRoles: []string{"meridian-hub"}, wantRules: [][]rbacv1.PolicyRule{grants.Member()}},
		{name: "status-annotation adds its own ClusterRole with the component's rules", components: []string{"status-annotation"},
			wantRoles: []string{"meridian-hub", "meridian-hub-status-annotation"},
			wantRules: [][]rbacv1.PolicyRule{grants.Member(), grants.StatusAnnotation.Rules()}},
		{name: "both components add theirs in grants' order whatever the flag's", components: []string{"propagation", "status-annotation"},
			wantRoles: []string{"meridian-hub", "meridian-hub-status-annotation", "meridian-hub-propagation"},
			wantRules: [][]rbacv1.PolicyRule{grants.Member(), grants.StatusAnnotation.Rules(), grants.Propagation.Rules()}},
		{name: "another namespace moves the ServiceAccount and the bindings' subject", namespace: "gslb",
			wantRoles: []string{"meridian-hub"}, wantRules: [][]rbacv1.PolicyRule{grants.Member()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := NewPlan(Options{Name: "west", Region: "us-west", Namespace: c.namespace, Components: c.components})
			require.NoError(t, err)
			ns := c.namespace
			if ns == "" {
				ns = "meridian"
			}
			assert.Equal(t, ns, p.Namespace.Name)
			assert.Equal(t, ns, p.ServiceAccount.Namespace)
			assert.Equal(t, "meridian-hub", p.ServiceAccount.Name)
			var roles []string
			for i, g := range p.Grants {
				roles = append(roles, g.Role.Name)
				assert.Equal(t, c.wantRules[i], g.Role.Rules, g.Role.Name)
				assert.Equal(t, g.Role.Name, g.Binding.Name)
				assert.Equal(t, rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: g.Role.Name}, g.Binding.RoleRef)
				assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: "meridian-hub"}}, g.Binding.Subjects)
				for _, r := range g.Role.Rules {
					for _, l := range [][]string{r.APIGroups, r.Resources, r.Verbs} {
						assert.NotContains(t, l, "*", "no wildcards")
					}
				}
			}
			assert.Equal(t, c.wantRoles, roles)

			// Every object carries the labels of the member's name.
			objs := []interface{ GetLabels() map[string]string }{p.Namespace, p.ServiceAccount, p.Secret}
			for _, g := range p.Grants {
				objs = append(objs, g.Role, g.Binding)
			}
			for _, o := range objs {
				assert.Equal(t, ManagedBy, o.GetLabels()[LabelManagedBy])
				assert.Equal(t, "west", o.GetLabels()[LabelJoinedAs])
			}
			assert.Equal(t, "meridian", p.Secret.Namespace)
			assert.Equal(t, "member-west", p.Secret.Name)
			assert.Equal(t, "true", p.Secret.Labels[kube.LabelMember])
			assert.Equal(t, map[string]string{kube.AnnoCluster: "west", kube.AnnoRegion: "us-west"}, p.Secret.Annotations)
		})
	}
}

func TestOwned(t *testing.T) {
	p, err := NewPlan(Options{Name: "west", Region: "us-west"})
	require.NoError(t, err)
	for _, c := range []struct {
		name   string
		labels map[string]string
		want   bool
		note   string
	}{
		{name: "an object with both labels for the name is join's", labels: Labels("west"), want: true},
		{name: "an object joined as another member is not", labels: Labels("east"), note: `for member "east", not "west"`},
		{name: "an object without labels is not", labels: nil, note: "was not made by `meridian cluster join --name west`"},
		{name: "the member name label alone is not enough", labels: map[string]string{LabelJoinedAs: "west"}, note: "was not made by"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := p.ServiceAccount.DeepCopy()
			o.Labels = c.labels
			assert.Equal(t, c.want, Owned(o, "west"))
			if c.note != "" {
				assert.Contains(t, ownerNote(o, "west"), c.note)
			}
		})
	}
}

const testCA = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"

func operatorConfig(mut func(c *clientcmdapi.Cluster)) *clientcmdapi.Config {
	cfg := clientcmdapi.NewConfig()
	c := clientcmdapi.NewCluster()
	c.Server, c.CertificateAuthorityData = "https://10.0.0.1:6443", []byte(testCA)
	if mut != nil {
		mut(c)
	}
	u := clientcmdapi.NewAuthInfo()
	u.Exec = &clientcmdapi.ExecConfig{Command: "aws"} // the operator's own login: fine here
	cfg.Clusters["west-cluster"], cfg.AuthInfos["west-user"] = c, u
	cfg.Contexts["west"] = &clientcmdapi.Context{Cluster: "west-cluster", AuthInfo: "west-user"}
	cfg.Contexts["hub"] = &clientcmdapi.Context{Cluster: "west-cluster", AuthInfo: "west-user"}
	return cfg
}

func TestEndpointFor(t *testing.T) {
	caFile := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(caFile, []byte(testCA), 0o600))
	for _, c := range []struct {
		name    string
		cluster func(c *clientcmdapi.Cluster)
		context string
		server  string
		want    Endpoint
		wantErr string
	}{
		{name: "the context's server and inline CA are taken", want: Endpoint{Server: "https://10.0.0.1:6443", CAData: []byte(testCA)}},
		{name: "a CA file of the operator is read and inlined", cluster: func(c *clientcmdapi.Cluster) { c.CertificateAuthorityData, c.CertificateAuthority = nil, caFile },
			want: Endpoint{Server: "https://10.0.0.1:6443", CAData: []byte(testCA)}},
		{name: "a CA file that cannot be read is an error naming the context", cluster: func(c *clientcmdapi.Cluster) {
			c.CertificateAuthorityData, c.CertificateAuthority = nil, "/nonexistent/ca.crt"
		},
			wantErr: `--member-context "west": certificate-authority: open /nonexistent/ca.crt`},
		{name: "--server replaces the server and keeps the CA", server: "https://west.example:6443",
			want: Endpoint{Server: "https://west.example:6443", CAData: []byte(testCA)}},
		{name: "the TLS server name is kept", cluster: func(c *clientcmdapi.Cluster) { c.TLSServerName = "kubernetes" },
			want: Endpoint{Server: "https://10.0.0.1:6443", CAData: []byte(testCA), TLSServerName: "kubernetes"}},
		{name: "no CA at all leaves the system roots to verify", cluster: func(c *clientcmdapi.Cluster) { c.CertificateAuthorityData = nil },
			want: Endpoint{Server: "https://10.0.0.1:6443"}},
		{name: "a context that skips TLS verification is refused", cluster: func(c *clientcmdapi.Cluster) { c.InsecureSkipTLSVerify = true },
			wantErr: "sets insecure-skip-tls-verify; the hub always verifies"},
		{name: "a plain http server is refused naming the context", cluster: func(c *clientcmdapi.Cluster) { c.Server = "http://10.0.0.1:8080" },
			wantErr: `--member-context west: server "http://10.0.0.1:8080" is not an https:// URL`},
		{name: "an unknown context lists the contexts there are", context: "east", wantErr: `--member-context "east": no such context in the kubeconfig (contexts: hub, west)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := c.context
			if ctx == "" {
				ctx = "west"
			}
			got, err := EndpointFor(operatorConfig(c.cluster), ctx, c.server, os.ReadFile)
			if c.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), c.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestTheKubeconfigBuiltIsInlineAndAcceptedByTheHub(t *testing.T) {
	p, err := NewPlan(Options{Name: "west", Region: "us-west"})
	require.NoError(t, err)
	ep := Endpoint{Server: "https://10.0.0.1:6443", CAData: []byte(testCA), TLSServerName: "kubernetes"}
	kc, err := Kubeconfig("west", ep, "tok.en.value")
	require.NoError(t, err)

	cfg, err := clientcmd.Load(kc)
	require.NoError(t, err)
	assert.Equal(t, "west", cfg.CurrentContext)
	require.Len(t, cfg.Clusters, 1)
	require.Len(t, cfg.AuthInfos, 1)
	c, u := cfg.Clusters["west"], cfg.AuthInfos["west"]
	assert.Equal(t, ep.Server, c.Server)
	assert.Equal(t, []byte(testCA), c.CertificateAuthorityData)
	assert.Equal(t, "kubernetes", c.TLSServerName)
	assert.Empty(t, c.CertificateAuthority)
	assert.False(t, c.InsecureSkipTLSVerify)
	assert.Equal(t, "tok.en.value", u.Token)
	assert.Nil(t, u.Exec)
	assert.Nil(t, u.AuthProvider)
	assert.Empty(t, u.TokenFile+u.ClientCertificate+u.ClientKey)

	s, err := p.MemberSecret(kc)
	require.NoError(t, err)
	m, err := kube.MemberFromSecret(s)
	require.NoError(t, err, "the hub's own check accepts it")
	assert.Equal(t, "west", m.Cluster.Name)
	assert.Equal(t, "us-west", m.Cluster.Region)
	assert.Equal(t, kc, s.Data[kube.SecretKubeconfig])

	_, err = Kubeconfig("west", ep, "")
	assert.ErrorContains(t, err, "no token")
}

func TestAMemberSecretTheHubWouldRefuseIsNeverReturned(t *testing.T) {
	p, err := NewPlan(Options{Name: "west", Region: "us-west"})
	require.NoError(t, err)
	for _, c := range []struct{ name, kubeconfig, wantErr string }{
		{name: "an exec plugin is refused by the hub's check",
			kubeconfig: "apiVersion: v1\nkind: Config\ncurrent-context: w\ncontexts: [{name: w, context: {cluster: w, user: w}}]\nclusters: [{name: w, cluster: {server: 'https://x:6443'}}]\nusers: [{name: w, user: {exec: {command: sh, apiVersion: client.authentication.k8s.io/v1}}}]\n",
			wantErr:    "exec plugins are refused"},
		{name: "a token file is refused by the hub's check",
			kubeconfig: "apiVersion: v1\nkind: Config\ncurrent-context: w\ncontexts: [{name: w, context: {cluster: w, user: w}}]\nclusters: [{name: w, cluster: {server: 'https://x:6443'}}]\nusers: [{name: w, user: {tokenFile: /var/run/secrets/token}}]\n",
			wantErr:    "file \"/var/run/secrets/token\" is refused"},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := p.MemberSecret([]byte(c.kubeconfig))
			assert.Nil(t, s)
			require.Error(t, err)
			assert.Contains(t, err.Error(), "would be refused by the hub")
			assert.Contains(t, err.Error(), c.wantErr)
		})
	}
}

func TestManifestsCarryNoToken(t *testing.T) {
	p, err := NewPlan(Options{Name: "west", Region: "us-west", Components: []string{"status-annotation"}})
	require.NoError(t, err)
	out, err := p.Manifests(Endpoint{Server: "https://10.0.0.1:6443", CAData: []byte(testCA)})
	require.NoError(t, err)
	s := string(out)
	assert.Equal(t, 6, strings.Count(s, "---\n"), "namespace, service account, two roles, two bindings, then the Secret")
	for _, want := range []string{"kind: Namespace", "kind: ServiceAccount", "name: meridian-hub-status-annotation", "kind: Secret", "name: member-west",
		"meridian.io/member: \"true\"", "server: https://10.0.0.1:6443", "token: " + tokenPlaceholder} {
		assert.Contains(t, s, want)
	}
}

func TestShortenedTokens(t *testing.T) {
	minted := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name    string
		granted time.Duration
		want    bool
	}{
		{name: "a token granted as asked is not shortened", granted: 8760 * time.Hour},
		{name: "a token granted seconds short of the ask is not shortened", granted: 8760*time.Hour - 30*time.Second},
		{name: "a token capped at 48h by the apiserver is shortened", granted: 48 * time.Hour, want: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Result{TokenAsked: 8760 * time.Hour, TokenExpires: minted.Add(c.granted)}
			assert.Equal(t, c.want, r.Shortened(minted))
		})
	}
}
