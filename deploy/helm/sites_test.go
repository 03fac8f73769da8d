package helm

import (
	"path"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/util/yaml"

	cfg "github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/ringca"
	"github.com/meridian-gslb/meridian/internal/serving"
)

type cfgFile = cfg.File

// checkConfig loads a rendered config file as `meridian check-config`
// does (serving.Load: parse, validate, prepare) and returns it.
func checkConfig(t *testing.T, name, data string) *cfgFile {
	t.Helper()
	l, err := serving.Load(name, []byte(data), "")
	require.NoError(t, err, "meridian check-config refuses %s:\n%s", name, data)
	t.Cleanup(func() { l.Locator.Close() })
	return l.File
}

// configFiles are the rendered config files by the name each pod reads:
// config.yaml, or <pod>.yaml per pod with gossip.expose NodePort.
func configFiles(t *testing.T, objs map[string]map[string]any) map[string]string {
	t.Helper()
	data, ok := get(objs["ConfigMap/meridian-config"], "data").(map[string]any)
	require.True(t, ok, "ConfigMap meridian-config has no data")
	out := map[string]string{}
	for k, v := range data {
		out[k] = v.(string)
	}
	return out
}

// mounted lists the files of the pods' projected volume, relative to
// /etc/meridian, as source:key->path.
func mounted(objs map[string]map[string]any) map[string]string {
	out := map[string]string{}
	sources, _ := get(objs["StatefulSet/meridian"], "spec", "template", "spec", "volumes", 1, "projected", "sources").([]any)
	for _, s := range sources {
		for _, kind := range []string{"configMap", "secret"} {
			src, ok := get(s, kind).(map[string]any)
			if !ok {
				continue
			}
			items, _ := src["items"].([]any)
			for _, it := range items {
				p := get(it, "path").(string)
				out["/etc/meridian/"+p] = kind + " " + src["name"].(string) + ":" + get(it, "key").(string)
			}
		}
	}
	return out
}

// The two sites of the walkthrough (deploy/helm/examples/east.yaml and
// eu-west.yaml, exactly as deploy/README.md installs them) render a config
// that Meridian's own loader accepts, and everything that config relies on
// is rendered too: every file it names is mounted from the Secret the
// walkthrough creates; every pod's ring name is covered by the credential
// the walkthrough issues (and the Certificate cert-manager would be given),
// at most replicaCount of them; every pod advertises the external address
// of its own LoadBalancer Service, which selects that pod alone and which
// the Role lets it read; the site's DNS Service announces its nameserver;
// the seeds are the ring's own name and the site's headless Service.
func TestTheWalkthroughSitesRenderConfigsMeridianAccepts(t *testing.T) {
	for _, c := range []struct {
		site, region string
		replicas     int
	}{
		{"east", "us-east", 2},
		{"eu-west", "eu-west", 1},
	} {
		t.Run("site "+c.site, func(t *testing.T) {
			objs := render(t, example(t, "common"), example(t, c.site))
			files := configFiles(t, objs)
			require.Len(t, files, 1)
			f := checkConfig(t, "config.yaml", files["config.yaml"])

			sts := objs["StatefulSet/meridian"]
			assert.EqualValues(t, c.replicas, get(sts, "spec", "replicas"))
			assert.Equal(t, []any{"serve", "--config", "/etc/meridian/config.yaml"}, get(sts, "spec", "template", "spec", "containers", 0, "args"))

			// Files: the config names them, the volume mounts them.
			m := mounted(objs)
			want := map[string]string{
				"/etc/meridian/config.yaml": "configMap meridian-config:config.yaml",
				f.Ring.KeyFile:              "secret meridian-keys:key",
				"/etc/meridian/parent.tsig": "secret meridian-keys:parent.tsig",
				"/etc/meridian/slack.url":   "secret meridian-keys:slack.url",
				f.Ring.Credential.CertFile:  "secret meridian-ring-credential:tls.crt",
				f.Ring.Credential.KeyFile:   "secret meridian-ring-credential:tls.key",
				f.Server.Admin.TokenFile:    "secret meridian-admin-tokens:tokens",
			}
			require.Len(t, f.Ring.CA, 1)
			want[f.Ring.CA[0]] = "secret meridian-ring-credential:ca.crt"
			assert.Equal(t, want, m)
			assert.True(t, f.Ring.RequireEncryption)
			require.Len(t, f.Providers.RFC2136, 1)
			assert.Equal(t, "/etc/meridian/parent.tsig", f.Providers.RFC2136[0].TSIGKeyFile)
			require.Len(t, f.Notifications.Receivers, 1)
			assert.Equal(t, "/etc/meridian/slack.url", f.Notifications.Receivers[0].URLFile)

			// The zone's keys: the whole Secret as the key directory.
			require.NotNil(t, f.Zones[0].DNSSEC)
			assert.Equal(t, "/etc/meridian-dnssec", f.Zones[0].DNSSEC.KeyDirectory)
			assert.Equal(t, "meridian-keys", get(sts, "spec", "template", "spec", "volumes", 2, "secret", "secretName"))
			assert.Equal(t, "dnssec", get(sts, "spec", "template", "spec", "containers", 0, "volumeMounts", 2, "name"))
			assert.Equal(t, "/etc/meridian-dnssec", get(sts, "spec", "template", "spec", "containers", 0, "volumeMounts", 2, "mountPath"))
			require.NotNil(t, f.Zones[0].Delegation)
			assert.Equal(t, "rfc2136", f.Zones[0].Delegation.Provider)
			assert.Empty(t, f.Ring.Peers, "no site lists another site's keys")
			assert.Empty(t, f.Providers.Writers, "writers are not listed: the ring's probers are the candidates")

			// The credential: as `meridian ring ca issue` makes it in the
			// walkthrough, and as the chart's Certificate asks for it.
			issued := ringca.Scope{TrustDomain: "gslb.example.com", Role: ringca.RoleProber, Region: c.region, Name: c.site + "-*", MaxNodes: c.replicas}
			require.NoError(t, issued.Validate())
			cm := render(t, example(t, "common"), example(t, c.site), "ring: {certManager: {enabled: true, issuer: {create: true, caSecret: meridian-ring-ca}}}")
			uris, _ := get(cm["Certificate/meridian-ring-credential"], "spec", "uris").([]any)
			require.Len(t, uris, 2)
			scope, err := ringca.ParseURI(uris[0].(string))
			require.NoError(t, err)
			assert.Equal(t, issued, scope, "the Certificate's URI is the scope the walkthrough issues")
			withAdmin := issued
			require.NoError(t, withAdmin.SetCapability(ringca.CapabilityAdmin))
			assert.Equal(t, withAdmin.CapabilityURIs(), []string{uris[1].(string)}, "and the admin capability, as --capability admin issues it: drain works from every pod")
			probeOnly := render(t, example(t, "common"), example(t, c.site), "ring: {admin: false, certManager: {enabled: true, issuer: {create: true, caSecret: meridian-ring-ca}}}")
			uris, _ = get(probeOnly["Certificate/meridian-ring-credential"], "spec", "uris").([]any)
			assert.Len(t, uris, 1, "a probe-only site's credential has no capability")
			assert.Equal(t, c.region, f.Ring.Region)

			// Every pod: its ring name, its own gossip Service.
			role := objs["Role/meridian"]
			readable := get(role, "rules", 2, "resourceNames")
			require.NotNil(t, f.Ring.AdvertiseFrom)
			for i := range c.replicas {
				pod := "meridian-" + strconv.Itoa(i)
				name := f.Ring.NodeNameFor(pod)
				assert.True(t, scope.Matches(name), "pod %s is ring node %s, outside %s", pod, name, scope.URI())
				svcName := strings.ReplaceAll(f.Ring.AdvertiseFrom.Service, model.HostnamePlaceholder, pod)
				svc, ok := objs["Service/"+svcName]
				require.True(t, ok, "pod %s advertises Service %s, which is not rendered", pod, svcName)
				assert.Equal(t, "LoadBalancer", get(svc, "spec", "type"))
				assert.Equal(t, pod, get(svc, "spec", "selector", "statefulset.kubernetes.io/pod-name"), "%s selects its one pod", svcName)
				assert.Equal(t, true, get(svc, "spec", "publishNotReadyAddresses"))
				for j, proto := range []string{"UDP", "TCP"} {
					assert.Equal(t, proto, get(svc, "spec", "ports", j, "protocol"))
					assert.Equal(t, "gossip-"+strings.ToLower(proto), get(svc, "spec", "ports", j, "targetPort"))
				}
				assert.Contains(t, readable, svcName, "the Role lets the pod read its gossip Service")
			}
			assert.NotContains(t, objs, "Service/meridian-"+strconv.Itoa(c.replicas)+"-gossip", "no Service for a pod that does not exist")
			assert.Equal(t, "0.0.0.0:7946", f.Ring.Bind)

			// DNS: the site's nameserver from its DNS Service.
			require.NotNil(t, f.Ring.DNSAddressesFrom)
			assert.Equal(t, "LoadBalancer", get(objs["Service/"+f.Ring.DNSAddressesFrom.Service], "spec", "type"))
			assert.Contains(t, readable, f.Ring.DNSAddressesFrom.Service)
			require.Len(t, f.Zones, 1)
			assert.Equal(t, "gslb.example.com.", f.Zones[0].Apex)
			require.NotNil(t, f.Zones[0].Ring)
			assert.True(t, f.Zones[0].Ring.Names)
			assert.True(t, f.Zones[0].Ring.Nameservers)
			assert.Empty(t, f.Zones[0].Nameservers, "no static nameserver: the sites' own, learned from the ring")

			// Seeds: the ring's own name, and this site's headless Service.
			assert.Equal(t, []string{"ring.gslb.example.com:7946", "meridian-gossip.meridian.svc.cluster.local:7946"}, f.Ring.Seeds)
			assert.Equal(t, "None", get(objs["Service/meridian-gossip"], "spec", "clusterIP"))
			assert.Equal(t, "meridian-gossip", get(sts, "spec", "serviceName"))

			require.Len(t, f.Clusters, 1)
			assert.Equal(t, c.site, f.Clusters[0].Name)
			assert.Equal(t, c.region, f.Clusters[0].Region)
		})
	}
}

// The Role of each gossip mode: exactly the lease, the member Secrets and
// the Services that mode's config reads, by name; the ClusterRole is the
// kustomize base's (compared field by field in
// TestChartRendersTheKustomizeObjects, pinned in kustomize_test.go).
func TestTheRoleReadsExactlyTheSitesOwnServices(t *testing.T) {
	lease := map[string]any{"apiGroups": []any{"coordination.k8s.io"}, "resources": []any{"leases"}, "verbs": []any{"get", "create", "update"}}
	secrets := map[string]any{"apiGroups": []any{""}, "resources": []any{"secrets"}, "verbs": []any{"get", "list", "watch"}}
	services := func(names ...any) map[string]any {
		return map[string]any{"apiGroups": []any{""}, "resources": []any{"services"}, "resourceNames": names, "verbs": []any{"get", "list", "watch"}}
	}
	for _, c := range []struct {
		name, values string
		want         []any
	}{
		{"site east reads its two gossip Services and its DNS Service", "",
			[]any{lease, secrets, services("meridian-0-gossip", "meridian-1-gossip", "meridian-dns")}},
		{"three replicas read three gossip Services", "replicaCount: 3",
			[]any{lease, secrets, services("meridian-0-gossip", "meridian-1-gossip", "meridian-2-gossip", "meridian-dns")}},
		{"node ports are not read, only the DNS Service",
			"gossip: {expose: NodePort, nodePorts: [30946, 30947], advertise: [203.0.113.10, 203.0.113.11]}",
			[]any{lease, secrets, services("meridian-dns")}},
		{"the host network with a ClusterIP DNS Service reads no Service",
			"gossip: {expose: hostNetwork}\nservice: {dns: {type: ClusterIP}}\nnameservers: [{name: ns1.gslb.example.com, ipv4: [192.0.2.53]}]",
			[]any{lease, secrets}},
	} {
		t.Run(c.name, func(t *testing.T) {
			objs := render(t, minimalSite(t, "east"), c.values)
			assert.Equal(t, c.want, get(objs["Role/meridian"], "rules"))
			for _, r := range append(slices.Clone(get(objs["Role/meridian"], "rules").([]any)), get(objs["ClusterRole/meridian"], "rules").([]any)...) {
				for _, field := range []string{"apiGroups", "resources", "verbs"} {
					assert.NotContains(t, get(r, field), "*", "no wildcards")
				}
			}
		})
	}
}

// gossip.expose NodePort: one config file per pod (they differ only in
// ring.advertise, the pod's given address and node port), chosen by the
// pod's name through $(POD_NAME) in the args; each per-pod Service has
// that node port for UDP and TCP. Every file passes check-config.
func TestNodePortGossipRendersOneConfigPerPod(t *testing.T) {
	objs := render(t, minimalSite(t, "east"), "gossip: {expose: NodePort, nodePorts: [30946, 30947], advertise: [203.0.113.10, \"2001:db8::11\"]}")
	sts := objs["StatefulSet/meridian"]
	assert.Equal(t, []any{"serve", "--config", "/etc/meridian/$(POD_NAME).yaml"}, get(sts, "spec", "template", "spec", "containers", 0, "args"))
	assert.Equal(t, "POD_NAME", get(sts, "spec", "template", "spec", "containers", 0, "env", 0, "name"))
	assert.Equal(t, "metadata.name", get(sts, "spec", "template", "spec", "containers", 0, "env", 0, "valueFrom", "fieldRef", "fieldPath"))
	files := configFiles(t, objs)
	require.Len(t, files, 2)
	m := mounted(objs)
	for i, want := range []string{"203.0.113.10:30946", "[2001:db8::11]:30947"} {
		pod := "meridian-" + strconv.Itoa(i)
		data, ok := files[pod+".yaml"]
		require.True(t, ok, "no config file for pod %s", pod)
		assert.Equal(t, "configMap meridian-config:"+pod+".yaml", m[path.Join("/etc/meridian", pod+".yaml")])
		f := checkConfig(t, pod+".yaml", data)
		assert.Equal(t, want, f.Ring.Advertise)
		assert.Nil(t, f.Ring.AdvertiseFrom, "a node port is not read from the API")
		svc := objs["Service/"+pod+"-gossip"]
		assert.Equal(t, "NodePort", get(svc, "spec", "type"))
		port := strings.TrimPrefix(want[strings.LastIndex(want, ":"):], ":")
		for j := range 2 {
			assert.EqualValues(t, port, strconv.Itoa(int(get(svc, "spec", "ports", j, "nodePort").(float64))))
		}
	}
	assert.NotContains(t, files, "config.yaml")
}

// config is the rendered config.yaml, as check-config loads it.
func config(t *testing.T, objs map[string]map[string]any) *cfgFile {
	t.Helper()
	data, ok := get(objs["ConfigMap/meridian-config"], "data", "config.yaml").(string)
	require.True(t, ok, "ConfigMap meridian-config has no config.yaml")
	return checkConfig(t, "config.yaml", data)
}

func unmarshal(data string, v any) error { return yaml.Unmarshal([]byte(data), v) }

// Route 53 as the parent instead of BIND (examples/route53.yaml after
// common.yaml and the site's file, as deploy/README.md upgrades each site):
// the delegation goes to Route 53 alone (no RFC 2136 entry is left), the
// owner stays common.yaml's, the config passes check-config, and the
// container takes the AWS keys from the Secret meridian-aws.
func TestTheRoute53ParentRendersAConfigMeridianAccepts(t *testing.T) {
	for _, site := range []string{"east", "eu-west"} {
		t.Run("site "+site, func(t *testing.T) {
			objs := render(t, example(t, "common"), example(t, site), example(t, "route53"))
			f := config(t, objs)
			require.NotNil(t, f.Zones[0].Delegation)
			assert.Equal(t, "route53", f.Zones[0].Delegation.Provider)
			assert.Equal(t, "example.com", strings.TrimSuffix(f.Zones[0].Delegation.Parent, "."))
			assert.Empty(t, f.Providers.RFC2136)
			require.Len(t, f.Providers.Route53, 1)
			assert.Equal(t, "delegate", f.Providers.Route53[0].Mode)
			assert.Equal(t, "gslb-example-com", f.Providers.OwnerID)
			env := get(objs["StatefulSet/meridian"], "spec", "template", "spec", "containers", 0, "env").([]any)
			got := map[string]any{}
			for _, e := range env[3:] {
				got[get(e, "name").(string)] = get(e, "valueFrom", "secretKeyRef")
			}
			assert.Equal(t, map[string]any{
				"AWS_ACCESS_KEY_ID":     map[string]any{"name": "meridian-aws", "key": "AWS_ACCESS_KEY_ID"},
				"AWS_SECRET_ACCESS_KEY": map[string]any{"name": "meridian-aws", "key": "AWS_SECRET_ACCESS_KEY"},
			}, got)
		})
	}
}
