package kustomize_test

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/meridian-gslb/meridian/deploy/kustomize"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/kube/grants"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/ringca"
	"github.com/meridian-gslb/meridian/internal/serving"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.yaml from the current manifests")

// The kustomizations under test and their golden files: the base is site
// east, the example overlay site eu-west of the two-site walkthrough.
var builds = []struct {
	name, path     string
	site, region   string
	replicas       int
	gossipServices []string // one per pod: meridian-<n>-gossip
}{
	{"base", "base", "east", "us-east", 2, []string{"meridian-0-gossip", "meridian-1-gossip"}},
	{"example", "overlays/example", "eu-west", "eu-west", 1, []string{"meridian-0-gossip"}},
}

const (
	image      = "ghcr.io/meridian-gslb/meridian"
	namespace  = "meridian"
	configPath = "/etc/meridian/config.yaml"
	keyPath    = "/etc/meridian/gossip/key"
	certPath   = "/etc/meridian/ring/tls.crt"
	credPath   = "/etc/meridian/ring/tls.key"
	caPath     = "/etc/meridian/ring/ca.crt"
	statePath  = "/var/lib/meridian"
	tokensPath = "/etc/meridian/admin/tokens"
)

// rule is one RBAC PolicyRule. Every field is parsed so that a rule growing
// resourceNames or nonResourceURLs is a difference too.
type rule struct {
	APIGroups       []string `yaml:"apiGroups"`
	Resources       []string `yaml:"resources"`
	Verbs           []string `yaml:"verbs"`
	ResourceNames   []string `yaml:"resourceNames"`
	NonResourceURLs []string `yaml:"nonResourceURLs"`
}

// The exact grants of Meridian's service account are internal/kube/grants,
// the one list `meridian cluster join` grants too. Changing them is a
// decision: update grants, rbac.yaml's comments and deploy/README.md.
var (
	// The base: read Services and Ingresses, create Events. No write to
	// any tenant object.
	wantClusterRules = fromGrants(grants.Member())
	// components/status-annotation adds patch, for the meridian.io/status
	// annotation (kubernetes.status_annotation: true).
	wantStatusRules     = fromGrants(grants.StatusAnnotation.Rules())
	wantNamespacedRules = fromGrants(grants.Hub())
)

// fromGrants turns grants' rules into this test's rules.
func fromGrants(rs []rbacv1.PolicyRule) []rule {
	out := make([]rule, len(rs))
	for i, r := range rs {
		out[i] = rule{APIGroups: r.APIGroups, Resources: r.Resources, Verbs: r.Verbs, ResourceNames: r.ResourceNames, NonResourceURLs: r.NonResourceURLs}
	}
	return out
}

// wantRoleRules is the Role of a site whose pods have these gossip
// Services: the lease and member Secrets, and reading exactly the site's
// own Services by name (ring.advertise_from, ring.dns_addresses_from).
func wantRoleRules(gossipServices []string) []rule {
	return append(slices.Clone(wantNamespacedRules),
		rule{APIGroups: []string{""}, Resources: []string{"services"}, Verbs: []string{"get", "list", "watch"},
			ResourceNames: append(slices.Clone(gossipServices), "meridian-dns")})
}

type meta struct {
	Name        string            `yaml:"name"`
	Namespace   string            `yaml:"namespace"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type ref struct {
	APIGroup  string `yaml:"apiGroup"`
	Kind      string `yaml:"kind"`
	Name      string `yaml:"name"`
	Namespace string `yaml:"namespace"`
}

type port struct {
	Name          string `yaml:"name"`
	Port          int    `yaml:"port"`
	ContainerPort int    `yaml:"containerPort"`
	TargetPort    string `yaml:"targetPort"`
	Protocol      string `yaml:"protocol"`
}

// probe is the httpGet of a container's probe.
type probe struct {
	HTTPGet struct {
		Path string `yaml:"path"`
		Port string `yaml:"port"`
	} `yaml:"httpGet"`
}

type container struct {
	Name            string   `yaml:"name"`
	Image           string   `yaml:"image"`
	Args            []string `yaml:"args"`
	Ports           []port   `yaml:"ports"`
	ReadinessProbe  *probe   `yaml:"readinessProbe"`
	LivenessProbe   *probe   `yaml:"livenessProbe"`
	SecurityContext struct {
		AllowPrivilegeEscalation *bool `yaml:"allowPrivilegeEscalation"`
		ReadOnlyRootFilesystem   bool  `yaml:"readOnlyRootFilesystem"`
		Capabilities             struct {
			Drop []string `yaml:"drop"`
			Add  []string `yaml:"add"`
		} `yaml:"capabilities"`
	} `yaml:"securityContext"`
	VolumeMounts []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		ReadOnly  bool   `yaml:"readOnly"`
	} `yaml:"volumeMounts"`
}

type item struct {
	Key  string `yaml:"key"`
	Path string `yaml:"path"`
}

type object struct {
	APIVersion string            `yaml:"apiVersion"`
	Kind       string            `yaml:"kind"`
	Metadata   meta              `yaml:"metadata"`
	Rules      []rule            `yaml:"rules"`
	RoleRef    ref               `yaml:"roleRef"`
	Subjects   []ref             `yaml:"subjects"`
	Data       map[string]string `yaml:"data"`
	Spec       struct {
		Replicas                 int            `yaml:"replicas"`
		ServiceName              string         `yaml:"serviceName"`
		Type                     string         `yaml:"type"`
		ExternalTrafficPolicy    string         `yaml:"externalTrafficPolicy"`
		ClusterIP                string         `yaml:"clusterIP"`
		PublishNotReadyAddresses bool           `yaml:"publishNotReadyAddresses"`
		Selector                 map[string]any `yaml:"selector"`
		Ports                    []port         `yaml:"ports"`
		MinAvailable             int            `yaml:"minAvailable"`
		Template                 struct {
			Spec struct {
				ServiceAccountName string `yaml:"serviceAccountName"`
				SecurityContext    struct {
					RunAsNonRoot bool `yaml:"runAsNonRoot"`
				} `yaml:"securityContext"`
				Containers []container `yaml:"containers"`
				Volumes    []struct {
					Name      string          `yaml:"name"`
					EmptyDir  *map[string]any `yaml:"emptyDir"`
					Projected struct {
						Sources []struct {
							ConfigMap *struct {
								Name  string `yaml:"name"`
								Items []item `yaml:"items"`
							} `yaml:"configMap"`
							Secret *struct {
								Name  string `yaml:"name"`
								Items []item `yaml:"items"`
							} `yaml:"secret"`
						} `yaml:"sources"`
					} `yaml:"projected"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

func parse(t *testing.T, manifests []byte) []object {
	t.Helper()
	var out []object
	dec := yaml.NewDecoder(bytes.NewReader(manifests))
	for {
		var o object
		err := dec.Decode(&o)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		out = append(out, o)
	}
	return out
}

func find(t *testing.T, objs []object, kind, name string) object {
	t.Helper()
	for _, o := range objs {
		if o.Kind == kind && o.Metadata.Name == name {
			return o
		}
	}
	require.Failf(t, "object missing", "no %s %q in the rendered manifests", kind, name)
	return object{}
}

func render(t *testing.T, path string) []object {
	t.Helper()
	out, err := kustomize.Render(path)
	require.NoError(t, err)
	return parse(t, out)
}

// golden compares got with testdata/name, or rewrites the file with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	file := filepath.Join("testdata", name)
	if *update {
		require.NoError(t, os.WriteFile(file, got, 0o644))
	}
	want, err := os.ReadFile(file)
	require.NoError(t, err, "run `go test ./deploy/kustomize/ -update` to create it")
	assert.Equal(t, string(want), string(got), "%s is stale: review the change, then run `go test ./deploy/kustomize/ -update`", file)
}

func TestTheRenderedManifestsMatchTheGoldenFiles(t *testing.T) {
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			out, err := kustomize.Render(b.path)
			require.NoError(t, err)
			golden(t, b.name+".golden.yaml", out)
		})
	}
}

func TestTheRBACGoldenFileHoldsTheRenderedRBACObjectsAlone(t *testing.T) {
	out, err := kustomize.RenderRBAC("base")
	require.NoError(t, err)
	golden(t, "rbac.golden.yaml", out)

	var kinds []string
	for _, o := range parse(t, out) {
		kinds = append(kinds, o.Kind+"/"+o.Metadata.Name)
	}
	assert.ElementsMatch(t, []string{"ClusterRole/meridian", "ClusterRoleBinding/meridian", "Role/meridian", "RoleBinding/meridian"}, kinds)

	overlay, err := kustomize.RenderRBAC("overlays/example")
	require.NoError(t, err)
	assert.Equal(t, strings.Replace(string(out), "  - meridian-1-gossip\n", "", 1), string(overlay),
		"the example overlay (one pod) changes the RBAC only by the second pod's gossip Service")
}

// Both modes: least privilege (the base), and the base with the
// status-annotation component.
func TestTheRBACOfBothStatusModes(t *testing.T) {
	least := render(t, "base")
	withStatus := render(t, overlayWith(t, "status-annotation"))

	out, err := kustomize.RenderRBAC(overlayWith(t, "status-annotation"))
	require.NoError(t, err)
	golden(t, "rbac-status-annotation.golden.yaml", out)

	for _, mode := range []struct {
		name string
		objs []object
		want []rule // the rules of every ClusterRole bound to the service account, together
	}{
		{"least privilege: read Services and Ingresses, create Events", least, wantClusterRules},
		{"status annotation: patch Services and Ingresses too", withStatus, append(slices.Clone(wantClusterRules), wantStatusRules...)},
	} {
		t.Run(mode.name, func(t *testing.T) {
			var rules []rule
			for _, o := range mode.objs {
				if o.Kind == "ClusterRole" {
					rules = append(rules, o.Rules...)
				}
			}
			assert.Equal(t, normalize(mode.want), normalize(rules))
		})
	}
	for _, o := range least {
		for _, r := range o.Rules {
			if o.Kind != "ClusterRole" {
				continue
			}
			for _, v := range r.Verbs {
				if !slices.Contains([]string{"get", "list", "watch"}, v) {
					assert.Equal(t, []string{"events"}, r.Resources, "the base writes nothing but Events: %s %v", v, r.Resources)
					assert.Equal(t, "create", v, "Events are only created")
				}
			}
		}
	}
	crb := find(t, withStatus, "ClusterRoleBinding", "meridian-status")
	assert.Equal(t, ref{APIGroup: kustomize.RBACGroup, Kind: "ClusterRole", Name: "meridian-status"}, crb.RoleRef)
	assert.Equal(t, []ref{{Kind: "ServiceAccount", Name: "meridian", Namespace: namespace}}, crb.Subjects)
}

// overlayWith writes a throw-away overlay of the base with the named
// components and returns its directory.
func overlayWith(t *testing.T, components ...string) string {
	t.Helper()
	dir := filepath.Join(kustomize.Dir(), "overlays", "test-"+strings.Join(components, "-"))
	require.NoError(t, os.MkdirAll(dir, 0o755))
	t.Cleanup(func() { os.RemoveAll(dir) })
	var b strings.Builder
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources: [../../base]\ncomponents:\n")
	for _, c := range components {
		b.WriteString("  - ../../components/" + c + "\n")
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(b.String()), 0o644))
	return dir
}

// normalize sorts the lists inside each rule and the rules themselves, so
// that the comparison is of sets.
func normalize(rules []rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		parts := make([]string, 0, 5)
		for _, l := range [][]string{r.APIGroups, r.Resources, r.Verbs, r.ResourceNames, r.NonResourceURLs} {
			l = slices.Clone(l)
			slices.Sort(l)
			parts = append(parts, "["+strings.Join(l, ",")+"]")
		}
		out[i] = "apiGroups=" + parts[0] + " resources=" + parts[1] + " verbs=" + parts[2] + " resourceNames=" + parts[3] + " nonResourceURLs=" + parts[4]
	}
	slices.Sort(out)
	return out
}

func TestTheRBACGrantsExactlyTheDocumentedRules(t *testing.T) {
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			objs := render(t, b.path)

			var roles []string
			for _, o := range objs {
				if strings.HasPrefix(o.APIVersion, kustomize.RBACGroup+"/") {
					roles = append(roles, o.Kind+"/"+o.Metadata.Namespace+"/"+o.Metadata.Name)
				}
			}
			assert.ElementsMatch(t, []string{"ClusterRole//meridian", "ClusterRoleBinding//meridian", "Role/meridian/meridian", "RoleBinding/meridian/meridian"}, roles, "no other RBAC objects")

			cr := find(t, objs, "ClusterRole", "meridian")
			assert.Equal(t, normalize(wantClusterRules), normalize(cr.Rules), "ClusterRole meridian")
			role := find(t, objs, "Role", "meridian")
			assert.Equal(t, normalize(wantRoleRules(b.gossipServices)), normalize(role.Rules), "Role meridian")

			for _, r := range append(slices.Clone(cr.Rules), role.Rules...) {
				for _, l := range [][]string{r.APIGroups, r.Resources, r.Verbs} {
					assert.NotContains(t, l, "*", "no wildcards")
				}
			}

			sa := []ref{{Kind: "ServiceAccount", Name: "meridian", Namespace: namespace}}
			crb := find(t, objs, "ClusterRoleBinding", "meridian")
			assert.Equal(t, ref{APIGroup: kustomize.RBACGroup, Kind: "ClusterRole", Name: "meridian"}, crb.RoleRef)
			assert.Equal(t, sa, crb.Subjects)
			rb := find(t, objs, "RoleBinding", "meridian")
			assert.Equal(t, ref{APIGroup: kustomize.RBACGroup, Kind: "Role", Name: "meridian"}, rb.RoleRef)
			assert.Equal(t, sa, rb.Subjects)
			find(t, objs, "ServiceAccount", "meridian")
		})
	}
}

// siteConfig is the part of config.yaml read directly (not through
// internal/config), so that this test does not depend on the Go names of
// the kubernetes fields.
type siteConfig struct {
	Ring struct {
		Region   string   `yaml:"region"`
		NodeName string   `yaml:"node_name"`
		Bind     string   `yaml:"bind"`
		Seeds    []string `yaml:"seeds"`
		KeyFile  string   `yaml:"key_file"`
	} `yaml:"ring"`
	Clusters []struct {
		Name       string `yaml:"name"`
		Region     string `yaml:"region"`
		Kubernetes struct {
			InCluster bool `yaml:"in_cluster"`
		} `yaml:"kubernetes"`
	} `yaml:"clusters"`
	Kubernetes struct {
		MemberSecrets struct {
			Namespace string `yaml:"namespace"`
		} `yaml:"member_secrets"`
	} `yaml:"kubernetes"`
}

// The config of each site is accepted by Meridian's own loader (what
// `meridian check-config` runs), and is the config of a site in a
// cross-cluster ring: its pods' node names are covered by the site's
// credential (<site>-*, at most replicas of them), every pod advertises
// its own gossip Service's external address, the site's DNS Service
// announces its nameserver, and the seeds are the ring's own name and the
// site's headless Service.
func TestTheRenderedConfigIsAcceptedByMeridiansValidator(t *testing.T) {
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			objs := render(t, b.path)
			cm := find(t, objs, "ConfigMap", "meridian-config")
			data, ok := cm.Data["config.yaml"]
			require.True(t, ok, "ConfigMap meridian-config has no config.yaml key")

			l, err := serving.Load("config.yaml", []byte(data), "")
			require.NoError(t, err)
			t.Cleanup(func() { l.Locator.Close() })
			f := l.File

			assert.True(t, f.Ring.Enabled)
			assert.Equal(t, b.region, f.Ring.Region)
			assert.Equal(t, keyPath, f.Ring.KeyFile)
			assert.True(t, f.Ring.RequireEncryption)
			assert.Equal(t, []string{caPath}, f.Ring.CA)
			assert.Equal(t, certPath, f.Ring.Credential.CertFile)
			assert.Equal(t, credPath, f.Ring.Credential.KeyFile)
			assert.Empty(t, f.Ring.Peers, "no site lists another: peers come from credentials")
			assert.Equal(t, tokensPath, f.Server.Admin.TokenFile, "changes need a token")
			assert.Equal(t, statePath, f.Server.StateDir, "state lives in the writable emptyDir, not beside the read-only config")

			// The credential a site is issued in the walkthrough
			// (`meridian ring ca issue --name '<site>-*' --max-nodes <replicas>`)
			// covers every pod's node name.
			scope := ringca.Scope{TrustDomain: "gslb.example.com", Role: ringca.RoleProber, Region: b.region, Name: b.site + "-*", MaxNodes: b.replicas}
			require.NoError(t, scope.Validate())
			dep := find(t, objs, "StatefulSet", "meridian")
			assert.Equal(t, b.replicas, dep.Spec.Replicas, "max-nodes is the replica count: a StatefulSet never surges")
			require.NotNil(t, f.Ring.AdvertiseFrom)
			require.NotNil(t, f.Ring.DNSAddressesFrom)
			for i := range dep.Spec.Replicas {
				pod := "meridian-" + strconv.Itoa(i)
				assert.True(t, scope.Matches(f.Ring.NodeNameFor(pod)), "pod %s is ring node %s, covered by %s", pod, f.Ring.NodeNameFor(pod), scope.URI())
				svc := find(t, objs, "Service", strings.ReplaceAll(f.Ring.AdvertiseFrom.Service, model.HostnamePlaceholder, pod))
				assert.Equal(t, "LoadBalancer", svc.Spec.Type)
				assert.Equal(t, pod, svc.Spec.Selector["statefulset.kubernetes.io/pod-name"], "%s selects its one pod", svc.Metadata.Name)
			}
			assert.Equal(t, "LoadBalancer", find(t, objs, "Service", f.Ring.DNSAddressesFrom.Service).Spec.Type)
			require.Len(t, f.Zones, 1)
			require.NotNil(t, f.Zones[0].Ring)
			assert.True(t, f.Zones[0].Ring.Names, "the zone serves ring.<zone>, the seed of every site")
			assert.True(t, f.Zones[0].Ring.Nameservers, "the zone's NS set is the live sites' DNS addresses")

			var c siteConfig
			require.NoError(t, yaml.Unmarshal([]byte(data), &c))
			headless := find(t, objs, "Service", "meridian-gossip")
			assert.Equal(t, "None", headless.Spec.ClusterIP)
			assert.Equal(t, headless.Metadata.Name, dep.Spec.ServiceName)
			assert.Equal(t, []string{"ring.gslb.example.com:7946", "meridian-gossip." + namespace + ".svc.cluster.local:7946"}, c.Ring.Seeds)
			require.Len(t, c.Clusters, 1)
			assert.Equal(t, b.site, c.Clusters[0].Name)
			assert.True(t, c.Clusters[0].Kubernetes.InCluster, "the local cluster is a member through the pod's service account")
			assert.Equal(t, c.Ring.Region, c.Clusters[0].Region)
			assert.Equal(t, namespace, c.Kubernetes.MemberSecrets.Namespace, "member Secrets live where the Role grants secrets")
			assert.True(t, f.Kubernetes.StatusWritebackEnabled(), "Events need only events create, which the base grants")
			assert.False(t, f.Kubernetes.StatusAnnotationEnabled(), "the base RBAC has no patch: the config must not ask for the status annotation")
		})
	}
}

func TestTheStatefulSetServesWhatTheConfigNames(t *testing.T) {
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			objs := render(t, b.path)
			dep := find(t, objs, "StatefulSet", "meridian")
			spec := dep.Spec.Template.Spec
			require.Len(t, spec.Containers, 1)
			c := spec.Containers[0]

			assert.Equal(t, []string{"serve", "--config", configPath}, c.Args)
			assert.Equal(t, "meridian", spec.ServiceAccountName)

			// config.yaml, the gossip key, the credential and the tokens
			// come from one projected volume mounted read-only at the
			// config's directory; the state directory is a writable emptyDir.
			require.Len(t, c.VolumeMounts, 2)
			mounts := map[string]string{}
			for _, m := range c.VolumeMounts {
				mounts[m.Name] = m.MountPath
				assert.Equal(t, m.Name == "config", m.ReadOnly, "only the config volume is read-only")
			}
			assert.Equal(t, map[string]string{"config": filepath.Dir(configPath), "state": statePath}, mounts)
			require.Len(t, spec.Volumes, 2)
			var files []string
			for _, v := range spec.Volumes {
				if v.Name == "state" {
					assert.NotNil(t, v.EmptyDir, "state is an emptyDir")
					continue
				}
				for _, s := range v.Projected.Sources {
					switch {
					case s.ConfigMap != nil:
						for _, it := range s.ConfigMap.Items {
							files = append(files, s.ConfigMap.Name+":"+it.Key+"->"+it.Path)
						}
					case s.Secret != nil:
						for _, it := range s.Secret.Items {
							files = append(files, s.Secret.Name+":"+it.Key+"->"+it.Path)
						}
					}
				}
			}
			rel := func(p string) string { r, _ := filepath.Rel(filepath.Dir(configPath), p); return r }
			assert.ElementsMatch(t, []string{"meridian-config:config.yaml->" + rel(configPath), "meridian-gossip-key:key->" + rel(keyPath),
				"meridian-ring-credential:tls.crt->" + rel(certPath), "meridian-ring-credential:tls.key->" + rel(credPath),
				"meridian-ring-credential:ca.crt->" + rel(caPath), "meridian-admin-tokens:tokens->" + rel(tokensPath)}, files)

			// The container ports are the config's listeners.
			cm := find(t, objs, "ConfigMap", "meridian-config")
			f, err := config.Parse("config.yaml", []byte(cm.Data["config.yaml"]))
			require.NoError(t, err)
			assert.Equal(t, []string{"0.0.0.0:5353"}, f.Server.DNS.Listen)
			assert.Equal(t, "0.0.0.0:8080", f.Server.HTTP.Listen)
			assert.Equal(t, "0.0.0.0:8081", f.Server.HTTP.ProbeListen)
			assert.Equal(t, "0.0.0.0:7946", f.Ring.Bind)
			var ports []string
			for _, p := range c.Ports {
				ports = append(ports, p.Name+"="+p.Protocol+"/"+strconv.Itoa(p.ContainerPort))
			}
			assert.ElementsMatch(t, []string{"dns-udp=UDP/5353", "dns-tcp=TCP/5353", "http=TCP/8080", "probes=TCP/8081", "gossip-udp=UDP/7946", "gossip-tcp=TCP/7946"}, ports)
			for name, p := range map[string]*probe{"readiness": c.ReadinessProbe, "liveness": c.LivenessProbe} {
				require.NotNil(t, p, name)
				assert.Equal(t, "probes", p.HTTPGet.Port, "the %s probe uses the probe listener (server.http.probe_listen), which nothing on 8080 can starve", name)
			}

			// Non-root, read-only, no capabilities.
			assert.True(t, spec.SecurityContext.RunAsNonRoot)
			assert.True(t, c.SecurityContext.ReadOnlyRootFilesystem)
			require.NotNil(t, c.SecurityContext.AllowPrivilegeEscalation)
			assert.False(t, *c.SecurityContext.AllowPrivilegeEscalation)
			assert.Equal(t, []string{"ALL"}, c.SecurityContext.Capabilities.Drop)
			assert.Empty(t, c.SecurityContext.Capabilities.Add)
		})
	}
}

// DNS on port 53 for everyone; the ring for the other sites through one
// LoadBalancer per pod (memberlist reaches each node at its own address),
// ready or not, and for this site's pods through the headless Service.
func TestTheServicesExposeDNSOnPort53AndEachPodsGossipPort(t *testing.T) {
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) {
			objs := render(t, b.path)

			dns := find(t, objs, "Service", "meridian-dns")
			assert.Equal(t, "LoadBalancer", dns.Spec.Type)
			assert.ElementsMatch(t, []port{
				{Name: "dns-udp", Port: 53, TargetPort: "dns-udp", Protocol: "UDP"},
				{Name: "dns-tcp", Port: 53, TargetPort: "dns-tcp", Protocol: "TCP"},
			}, dns.Spec.Ports)

			gossip := find(t, objs, "Service", "meridian-gossip")
			assert.Equal(t, "None", gossip.Spec.ClusterIP)
			assert.True(t, gossip.Spec.PublishNotReadyAddresses)

			var perPod []string
			for _, o := range objs {
				if o.Kind == "Service" && strings.HasSuffix(o.Metadata.Name, "-gossip") && o.Metadata.Name != "meridian-gossip" {
					perPod = append(perPod, o.Metadata.Name)
				}
			}
			assert.ElementsMatch(t, b.gossipServices, perPod, "one gossip Service per pod, no more")
			for i, name := range b.gossipServices {
				svc := find(t, objs, "Service", name)
				assert.Equal(t, "LoadBalancer", svc.Spec.Type)
				assert.Equal(t, "Local", svc.Spec.ExternalTrafficPolicy)
				assert.True(t, svc.Spec.PublishNotReadyAddresses, "a starting node must be reachable to join")
				assert.Equal(t, map[string]any{"app.kubernetes.io/name": "meridian", "statefulset.kubernetes.io/pod-name": "meridian-" + strconv.Itoa(i)}, svc.Spec.Selector, name)
				assert.ElementsMatch(t, []port{
					{Name: "gossip-udp", Port: 7946, TargetPort: "gossip-udp", Protocol: "UDP"},
					{Name: "gossip-tcp", Port: 7946, TargetPort: "gossip-tcp", Protocol: "TCP"},
				}, svc.Spec.Ports)
			}

			httpSvc := find(t, objs, "Service", "meridian-http")
			assert.Equal(t, "true", httpSvc.Metadata.Annotations["prometheus.io/scrape"])
			for _, name := range []string{"meridian-dns", "meridian-http", "meridian-gossip"} {
				assert.Equal(t, map[string]any{"app.kubernetes.io/name": "meridian"}, find(t, objs, "Service", name).Spec.Selector, name)
			}
			for _, o := range objs {
				if o.Kind != "ClusterRole" && o.Kind != "ClusterRoleBinding" {
					assert.Equal(t, namespace, o.Metadata.Namespace, o.Kind+"/"+o.Metadata.Name)
				}
				assert.Equal(t, "meridian", o.Metadata.Labels["app.kubernetes.io/name"], o.Kind+"/"+o.Metadata.Name)
			}
		})
	}
}

// The example overlay is site eu-west with one pod: its name and region in
// the config, one gossip Service, a pinned image, and no
// PodDisruptionBudget (1 of 1 would block every node drain).
func TestTheExampleOverlaySetsTheSitesValues(t *testing.T) {
	base := render(t, "base")
	objs := render(t, "overlays/example")

	assert.Equal(t, 2, find(t, base, "StatefulSet", "meridian").Spec.Replicas)
	dep := find(t, objs, "StatefulSet", "meridian")
	assert.Equal(t, 1, dep.Spec.Replicas)
	assert.Equal(t, image+":latest", find(t, base, "StatefulSet", "meridian").Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, image+":v0.1.0", dep.Spec.Template.Spec.Containers[0].Image)
	assert.Equal(t, 1, find(t, base, "PodDisruptionBudget", "meridian").Spec.MinAvailable)
	for _, o := range objs {
		assert.NotEqual(t, "PodDisruptionBudget", o.Kind)
		assert.NotEqual(t, "meridian-1-gossip", o.Metadata.Name)
	}

	// The ConfigMap keeps its stable name (no hash suffix: hot reload), and
	// the site's config names no other site.
	data := find(t, objs, "ConfigMap", "meridian-config").Data["config.yaml"]
	var c siteConfig
	require.NoError(t, yaml.Unmarshal([]byte(data), &c))
	assert.Equal(t, "eu-west", c.Ring.Region)
	assert.Equal(t, "eu-west-{hostname}", c.Ring.NodeName)
	require.Len(t, c.Clusters, 1)
	assert.Equal(t, "eu-west", c.Clusters[0].Name)
	assert.Equal(t, "eu-west", c.Clusters[0].Region)
	assert.NotContains(t, data, "us-east")
}
