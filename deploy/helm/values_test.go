package helm

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Values change what they say they change; every config they produce
// passes check-config.
func TestChartValues(t *testing.T) {
	for _, c := range []struct {
		name, release, values string
		check                 func(t *testing.T, objs map[string]map[string]any)
	}{
		{"another release name prefixes every object, its Services and the names the config reads", "edge", "",
			func(t *testing.T, objs map[string]map[string]any) {
				for _, key := range []string{"StatefulSet/edge-meridian", "ConfigMap/edge-meridian-config", "Service/edge-meridian-dns",
					"Service/edge-meridian-gossip", "Service/edge-meridian-0-gossip", "Service/edge-meridian-1-gossip", "ClusterRole/edge-meridian", "ServiceAccount/edge-meridian"} {
					assert.Contains(t, objs, key)
				}
				assert.Equal(t, "edge-meridian", get(objs["ClusterRoleBinding/edge-meridian"], "subjects", 0, "name"))
				assert.Equal(t, "edge-meridian-config", get(objs["StatefulSet/edge-meridian"], "spec", "template", "spec", "volumes", 1, "projected", "sources", 0, "configMap", "name"))
				assert.Equal(t, "edge-meridian-0", get(objs["Service/edge-meridian-0-gossip"], "spec", "selector", "statefulset.kubernetes.io/pod-name"))
				f := checkConfig(t, "config.yaml", get(objs["ConfigMap/edge-meridian-config"], "data", "config.yaml").(string))
				assert.Equal(t, "edge-meridian-dns", f.Ring.DNSAddressesFrom.Service)
				assert.Equal(t, "meridian-gossip.meridian.svc.cluster.local:7946", strings.TrimPrefix(f.Ring.Seeds[1], "edge-"))
				assert.Equal(t, []any{"edge-meridian-0-gossip", "edge-meridian-1-gossip", "edge-meridian-dns"}, get(objs["Role/edge-meridian"], "rules", 2, "resourceNames"))
			}},
		{"a digest pins the image", "meridian", "image: {tag: v0.2.0, digest: \"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\"}",
			func(t *testing.T, objs map[string]map[string]any) {
				assert.Equal(t, "ghcr.io/meridian-gslb/meridian:v0.2.0@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
					get(objs["StatefulSet/meridian"], "spec", "template", "spec", "containers", 0, "image"))
			}},
		{"an existing service account is bound and none is created", "meridian", "serviceAccount: {create: false, name: gslb}",
			func(t *testing.T, objs map[string]map[string]any) {
				assert.NotContains(t, objs, "ServiceAccount/meridian")
				assert.Equal(t, "gslb", get(objs["StatefulSet/meridian"], "spec", "template", "spec", "serviceAccountName"))
				assert.Equal(t, "gslb", get(objs["RoleBinding/meridian"], "subjects", 0, "name"))
			}},
		{"a parent chart's global values are accepted", "meridian", "global: {imageRegistry: example.com}",
			func(t *testing.T, objs map[string]map[string]any) { assert.Contains(t, objs, "StatefulSet/meridian") }},
		{"a ClusterIP DNS Service has no externalTrafficPolicy, and the zone takes the given nameservers", "meridian",
			"service: {dns: {type: ClusterIP}}\nnameservers: [{name: ns1.gslb.example.com, ipv4: [192.0.2.53]}]",
			func(t *testing.T, objs map[string]map[string]any) {
				assert.Equal(t, "ClusterIP", get(objs["Service/meridian-dns"], "spec", "type"))
				assert.Nil(t, get(objs["Service/meridian-dns"], "spec", "externalTrafficPolicy"))
				f := config(t, objs)
				assert.Nil(t, f.Ring.DNSAddressesFrom, "a ClusterIP has no external address to read")
				assert.False(t, f.Zones[0].Ring.Nameservers)
				require.Len(t, f.Zones[0].Nameservers, 1)
				assert.Equal(t, "ns1.gslb.example.com.", f.Zones[0].Nameservers[0].Name)
			}},
		{"site.cluster names the cluster, else the site's name does", "meridian", "site: {cluster: prod-use1}",
			func(t *testing.T, objs map[string]map[string]any) {
				f := config(t, objs)
				assert.Equal(t, "prod-use1", f.Clusters[0].Name)
				assert.Equal(t, "east-meridian-0", f.Ring.NodeNameFor("meridian-0"), "node names keep the site's name")
			}},
		{"extraConfig is merged over the rendered config: maps key by key, lists replaced", "meridian",
			"extraConfig: {server: {log: {level: debug}}, decision: {min_regions: 1}, ring: {seeds: [\"east.example.net:7946\"], rejoin_interval: 10s}, kubernetes: {namespaces: [apps]}}",
			func(t *testing.T, objs map[string]map[string]any) {
				f := config(t, objs)
				assert.Equal(t, "debug", f.Server.Log.Level)
				assert.Equal(t, "json", f.Server.Log.Format, "the rest of server.log stays")
				assert.Equal(t, 1, f.Decision.MinRegions)
				assert.Equal(t, []string{"east.example.net:7946"}, f.Ring.Seeds, "a list is replaced")
				assert.Equal(t, "10s", f.Ring.RejoinInterval.String())
				assert.Equal(t, "east-{hostname}", f.Ring.NodeName, "the rest of ring stays")
				assert.Equal(t, []string{"apps"}, f.Kubernetes.Namespaces)
				assert.Equal(t, "meridian", f.Kubernetes.MemberSecrets.Namespace)
			}},
		{"a whole config file is used as is and replaces the rendered one", "meridian",
			"config: |\n  # mine\n  zones: []\n",
			func(t *testing.T, objs map[string]map[string]any) {
				assert.Equal(t, map[string]any{"config.yaml": "# mine\nzones: []\n"}, get(objs["ConfigMap/meridian-config"], "data"))
				assert.Contains(t, objs, "Service/meridian-0-gossip", "the Services and mounts stay")
			}},
		{"a whole config file needs no zone or site", "meridian",
			"zone: \"\"\nsite: {name: \"\", region: \"\"}\nconfig: \"zones: []\\n\"",
			func(t *testing.T, objs map[string]map[string]any) {
				assert.Equal(t, "zones: []\n", get(objs["ConfigMap/meridian-config"], "data", "config.yaml"))
			}},
		{"delegation and providers are passed as they are, and no writers are listed", "meridian",
			"delegation: {provider: route53, parent: example.com}\nproviders: {owner_id: gslb-prod, route53: [{zone: example.com, mode: delegate}]}",
			func(t *testing.T, objs map[string]map[string]any) {
				var cfg map[string]any
				require.NoError(t, unmarshal(get(objs["ConfigMap/meridian-config"], "data", "config.yaml").(string), &cfg))
				assert.Equal(t, map[string]any{"provider": "route53", "parent": "example.com"}, get(cfg, "zones", 0, "delegation"))
				assert.Equal(t, map[string]any{"owner_id": "gslb-prod", "route53": []any{map[string]any{"zone": "example.com", "mode": "delegate"}}}, get(cfg, "providers"))
				assert.Nil(t, get(cfg, "providers", "writers"))
			}},
		{"no delegation, providers, dnssec or revocations are rendered unless set", "meridian", "",
			func(t *testing.T, objs map[string]map[string]any) {
				var cfg map[string]any
				require.NoError(t, unmarshal(get(objs["ConfigMap/meridian-config"], "data", "config.yaml").(string), &cfg))
				assert.Nil(t, get(cfg, "zones", 0, "delegation"))
				assert.Nil(t, get(cfg, "zones", 0, "dnssec"))
				assert.Nil(t, get(cfg, "providers"))
				assert.Nil(t, get(cfg, "ring", "revoked"))
				assert.Nil(t, get(cfg, "ring", "trust_domain"), "the zone is the default")
			}},
		{"a DNSSEC key Secret is mounted and its keys sign the zone", "meridian", "dnssec: {secret: meridian-dnssec, keys: [csk]}",
			func(t *testing.T, objs map[string]map[string]any) {
				f := config(t, objs)
				require.NotNil(t, f.Zones[0].DNSSEC)
				assert.Equal(t, []string{"/etc/meridian/dnssec/csk.private"}, f.Zones[0].DNSSEC.KeyFiles)
				m := mounted(objs)
				assert.Equal(t, "secret meridian-dnssec:csk.private", m["/etc/meridian/dnssec/csk.private"])
				assert.Equal(t, "secret meridian-dnssec:csk.key", m["/etc/meridian/dnssec/csk.key"])
			}},
		{"a second CA for a rotation is mounted and trusted", "meridian", "ring: {extraCA: {configMap: ring-ca-next}, revoked: [\"serial:0a1b\"], trustDomain: ring.example.org}",
			func(t *testing.T, objs map[string]map[string]any) {
				f := config(t, objs)
				assert.Equal(t, []string{"/etc/meridian/ring/ca.crt", "/etc/meridian/ring/extra-ca.crt"}, f.Ring.CA)
				assert.Equal(t, "configMap ring-ca-next:ca.crt", mounted(objs)["/etc/meridian/ring/extra-ca.crt"])
				assert.Equal(t, []string{"serial:0a1b"}, f.Ring.Revoked)
				assert.Equal(t, "ring.example.org", f.Ring.TrustDomain)
			}},
		{"extra Secrets are mounted where the config can name them", "meridian",
			"extraSecrets: [{secret: cf-token, key: token, path: providers/cloudflare-token}]",
			func(t *testing.T, objs map[string]map[string]any) {
				assert.Equal(t, "secret cf-token:token", mounted(objs)["/etc/meridian/providers/cloudflare-token"])
			}},
		{"extra environment variables follow the chart's own, a Secret's key as Kubernetes takes it", "meridian",
			"extraEnv: [{name: AWS_ACCESS_KEY_ID, valueFrom: {secretKeyRef: {name: meridian-aws, key: AWS_ACCESS_KEY_ID}}}, {name: HTTPS_PROXY, value: \"http://proxy:3128\"}]",
			func(t *testing.T, objs map[string]map[string]any) {
				env := get(objs["StatefulSet/meridian"], "spec", "template", "spec", "containers", 0, "env").([]any)
				require.Len(t, env, 5)
				for i, name := range []string{"POD_NAME", "POD_IP", "POD_NAMESPACE"} {
					assert.Equal(t, name, get(env[i], "name"))
				}
				assert.Equal(t, map[string]any{"name": "AWS_ACCESS_KEY_ID", "valueFrom": map[string]any{"secretKeyRef": map[string]any{"name": "meridian-aws", "key": "AWS_ACCESS_KEY_ID"}}}, env[3])
				assert.Equal(t, map[string]any{"name": "HTTPS_PROXY", "value": "http://proxy:3128"}, env[4])
			}},
		{"without an admin tokens Secret none is mounted and the config has no token file", "meridian", "admin: {tokensSecret: \"\"}",
			func(t *testing.T, objs map[string]map[string]any) {
				assert.Empty(t, config(t, objs).Server.Admin.TokenFile)
				assert.NotContains(t, mounted(objs), "/etc/meridian/admin/tokens")
			}},
		{"members off: no member Secrets are read", "meridian", "members: {enabled: false}",
			func(t *testing.T, objs map[string]map[string]any) {
				assert.Nil(t, config(t, objs).Kubernetes.MemberSecrets)
			}},
		{"the status annotation component turns the annotation on in the config", "meridian", "components: {statusAnnotation: {enabled: true}}",
			func(t *testing.T, objs map[string]map[string]any) {
				assert.True(t, config(t, objs).Kubernetes.StatusAnnotationEnabled())
				assert.Contains(t, objs, "ClusterRole/meridian-status")
			}},
		{"given addresses with LoadBalancer are asked of the cloud per pod, and still read back", "meridian", "gossip: {advertise: [198.51.100.1, 198.51.100.2]}",
			func(t *testing.T, objs map[string]map[string]any) {
				assert.Equal(t, "198.51.100.1", get(objs["Service/meridian-0-gossip"], "spec", "loadBalancerIP"))
				assert.Equal(t, "198.51.100.2", get(objs["Service/meridian-1-gossip"], "spec", "loadBalancerIP"))
				assert.Equal(t, "{hostname}-gossip", config(t, objs).Ring.AdvertiseFrom.Service)
			}},
		{"the host network: no per-pod Services, the node's address", "meridian", "gossip: {expose: hostNetwork}",
			func(t *testing.T, objs map[string]map[string]any) {
				spec := get(objs["StatefulSet/meridian"], "spec", "template", "spec")
				assert.Equal(t, true, get(spec, "hostNetwork"))
				assert.Equal(t, "ClusterFirstWithHostNet", get(spec, "dnsPolicy"))
				assert.NotContains(t, objs, "Service/meridian-0-gossip")
				f := config(t, objs)
				assert.Nil(t, f.Ring.AdvertiseFrom)
				assert.Equal(t, "0.0.0.0:7946", f.Ring.Bind)
			}},
		{"one replica has no PodDisruptionBudget, which would block every drain", "meridian", "replicaCount: 1",
			func(t *testing.T, objs map[string]map[string]any) {
				assert.NotContains(t, objs, "PodDisruptionBudget/meridian")
				assert.NotContains(t, objs, "Service/meridian-1-gossip")
			}},
		{"scheduling values reach the pod", "meridian",
			"nodeSelector: {pool: dns}\ntolerations: [{key: dns, operator: Exists}]\npodAnnotations: {a: b}\ntopologySpread: false",
			func(t *testing.T, objs map[string]map[string]any) {
				spec := get(objs["StatefulSet/meridian"], "spec", "template", "spec")
				assert.Equal(t, map[string]any{"pool": "dns"}, get(spec, "nodeSelector"))
				assert.Equal(t, "dns", get(spec, "tolerations", 0, "key"))
				assert.Nil(t, get(spec, "topologySpreadConstraints"))
				assert.Equal(t, "b", get(objs["StatefulSet/meridian"], "spec", "template", "metadata", "annotations", "a"), "added to the Prometheus annotations")
			}},
		{"cert-manager: a Certificate with the site's scope and a CA Issuer", "meridian",
			"ring: {certManager: {enabled: true, issuer: {create: true, caSecret: meridian-ring-ca}}}",
			func(t *testing.T, objs map[string]map[string]any) {
				cert := objs["Certificate/meridian-ring-credential"]
				assert.Equal(t, "meridian-ring-credential", get(cert, "spec", "secretName"))
				assert.Equal(t, []any{"spiffe://gslb.example.com/prober/us-east/east-*/max-nodes/2", "meridian://gslb.example.com/capability/admin"}, get(cert, "spec", "uris"), "the site's scope and the admin capability (ring.admin, default true)")
				assert.Equal(t, map[string]any{"algorithm": "Ed25519", "encoding": "PKCS8", "rotationPolicy": "Always"}, get(cert, "spec", "privateKey"))
				assert.Equal(t, map[string]any{"group": "cert-manager.io", "kind": "Issuer", "name": "meridian-ring-ca"}, get(cert, "spec", "issuerRef"))
				assert.Equal(t, "meridian-ring-ca", get(objs["Issuer/meridian-ring-ca"], "spec", "ca", "secretName"))
			}},
		{"cert-manager with your own ClusterIssuer", "meridian",
			"ring: {certManager: {enabled: true, issuerRef: {name: vault-ring, kind: ClusterIssuer}}}",
			func(t *testing.T, objs map[string]map[string]any) {
				assert.Equal(t, map[string]any{"group": "cert-manager.io", "kind": "ClusterIssuer", "name": "vault-ring"}, get(objs["Certificate/meridian-ring-credential"], "spec", "issuerRef"))
				assert.NotContains(t, objs, "Issuer/meridian-ring-ca")
			}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out, err := Render(c.release, "meridian", []byte(mergeValues(t, minimalSite(t, "east"), c.values)))
			require.NoError(t, err)
			c.check(t, parse(t, out))
		})
	}
}

// The chart refuses values it cannot render honestly, before anything is
// installed: the schema (types, enums, formats, unknown keys, required
// fields) and the templates (values that disagree with each other), each
// naming the value.
func TestChartRefusesBadValues(t *testing.T) {
	for _, c := range []struct{ name, values, want string }{
		{"an unknown gossip exposure is refused", `gossip: {expose: Ingress}`, "at '/gossip/expose': value must be one of 'LoadBalancer', 'NodePort', 'hostNetwork'"},
		{"a missing zone is refused", `zone: ""`, "at '/zone': minLength: got 0, want 1"},
		{"a missing site name is refused", `site: {name: ""}`, "at '/site/name': minLength: got 0, want 1"},
		{"a missing region is refused", `site: {region: ""}`, "at '/site/region': minLength: got 0, want 1"},
		{"a region that is not a DNS label is refused", `site: {region: "US East"}`, "at '/site/region': 'US East' does not match pattern"},
		{"a site name with a dot is refused", `site: {name: east.1}`, "at '/site/name'"},
		{"a zone with a final dot is refused", `zone: gslb.example.com.`, "at '/zone': 'gslb.example.com.' does not match pattern"},
		{"an upper-case zone is refused", `zone: GSLB.example.com`, "at '/zone'"},
		{"a replica count that is a word is refused", `replicaCount: "two"`, "at '/replicaCount': got string, want integer"},
		{"zero replicas are refused", `replicaCount: 0`, "at '/replicaCount': minimum"},
		{"an unknown pull policy is refused", `image: {pullPolicy: Sometimes}`, "at '/image/pullPolicy'"},
		{"an unknown DNS Service type is refused", `service: {dns: {type: ExternalName}}`, "at '/service/dns/type'"},
		{"a port above 65535 is refused", `gossip: {port: 70000}`, "at '/gossip/port': maximum"},
		{"a misspelt key is refused", `replicas: 3`, "additional properties 'replicas' not allowed"},
		{"the old secrets block is refused", `secrets: {ringIdentity: meridian-ring-identity}`, "additional properties 'secrets' not allowed"},
		{"a component flag that is a string is refused", `components: {propagation: {enabled: "yes"}}`, "at '/components/propagation/enabled'"},
		{"a gossip address that is not an IP is refused", `gossip: {advertise: [east.example.com, 192.0.2.2]}`, "at '/gossip/advertise/0'"},
		{"a node port outside the range is refused", `gossip: {expose: NodePort, nodePorts: [7946, 30001], advertise: [192.0.2.1, 192.0.2.2]}`, "at '/gossip/nodePorts/0': minimum"},
		{"node ports without addresses are refused", `gossip: {expose: NodePort, nodePorts: [30000, 30001]}`, "at '/gossip/advertise': minItems"},
		{"node ports for fewer pods than replicas are refused", `gossip: {expose: NodePort, nodePorts: [30000], advertise: [192.0.2.1]}`,
			"gossip.expose NodePort needs one gossip.nodePorts entry and one gossip.advertise address per pod: replicaCount is 2, gossip.nodePorts has 1, gossip.advertise 1"},
		{"given load-balancer addresses for fewer pods are refused", `gossip: {advertise: [192.0.2.1]}`, "gossip.advertise has 1 addresses for 2 pods (replicaCount)"},
		{"given addresses on the host network are refused", `gossip: {expose: hostNetwork, advertise: [192.0.2.1, 192.0.2.2]}`, "at '/gossip/advertise': maxItems"},
		{"a ClusterIP DNS Service without nameservers is refused", `service: {dns: {type: ClusterIP}}`, "nameservers is required with service.dns.type ClusterIP"},
		{"two sources for the second CA are refused", `ring: {extraCA: {configMap: a, secret: b}}`, "ring.extraCA: set configMap or secret, not both"},
		{"a revocation that is neither a serial nor a key is refused", `ring: {revoked: ["0a1b"]}`, "at '/ring/revoked/0'"},
		{"an unknown delegation provider is refused", `delegation: {provider: godaddy, parent: example.com}`, "at '/delegation/provider'"},
		{"cert-manager without an issuer is refused", `ring: {certManager: {enabled: true}}`, "ring.certManager.issuerRef.name is required"},
		{"an extra Secret over the credential's path is refused", `extraSecrets: [{secret: x, key: k, path: ring/tls.key}]`, "at '/extraSecrets/0/path'"},
		{"an extra Secret outside the config directory is refused", `extraSecrets: [{secret: x, key: k, path: ../etc/passwd}]`, "at '/extraSecrets/0/path'"},
		{"an environment variable with both a value and a valueFrom is refused", `extraEnv: [{name: A, value: x, valueFrom: {secretKeyRef: {name: s, key: k}}}]`, "at '/extraEnv/0'"},
		{"an environment variable the chart sets itself is refused", `extraEnv: [{name: POD_NAME, value: x}]`, "at '/extraEnv/0/name'"},
		{"a Secret reference without its key is refused", `extraEnv: [{name: A, valueFrom: {secretKeyRef: {name: meridian-aws}}}]`, "at '/extraEnv/0/valueFrom/secretKeyRef': missing property 'key'"},
		{"a valueFrom of two sources is refused", `extraEnv: [{name: A, valueFrom: {secretKeyRef: {name: s, key: k}, configMapKeyRef: {name: c, key: k}}}]`, "at '/extraEnv/0/valueFrom': maxProperties"},
		{"an environment variable written as a map is refused", `extraEnv: {AWS_REGION: eu-west-1}`, "at '/extraEnv': got object, want array"},
		{"a release name too long for the per-pod Services is refused", `fullnameOverride: meridian-gslb-authoritative-dns-for-the-eu-west-site-abc`,
			"Service name meridian-gslb-authoritative-dns-for-the-eu-west-site-abc-0-gossip is longer than 63 characters"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := Render("meridian", "meridian", []byte(mergeValues(t, minimalSite(t, "east"), c.values)))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
}
