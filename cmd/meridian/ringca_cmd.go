package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/meridian-gslb/meridian/internal/ringca"
	"github.com/meridian-gslb/meridian/internal/secretfile"
)

// newRingCA is `meridian ring ca`: a ring CA for users without
// cert-manager, Vault or another PKI (ADR 0016).
func newRingCA() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ca",
		Short: "A ring CA for node credentials: init, issue, show (or use cert-manager / your PKI)",
		Long: `Ring credentials are X.509 certificates for a node's Ed25519 key, signed by the
ring CA, whose URI SAN says what the node may speak for:

  spiffe://<ring>/prober/<region>/<name>[/max-nodes/<n>]   (a name ending in * covers a site's replicas)
  spiffe://<ring>/agent/<cluster>/<name>

Every node needs the CA certificate (ring.ca) and its own credential
(ring.credential); no node lists another. cert-manager (a CA Issuer and one
Certificate per site) or any PKI can issue them instead: see docs/security.md.`,
	}
	cmd.AddCommand(newRingCAInit(), newRingCAIssue(), newRingCAShow())
	return cmd
}

func newRingCAInit() *cobra.Command {
	var dir, trustDomain string
	var expires time.Duration
	c := &cobra.Command{
		Use:   "init",
		Short: "Make a ring CA: DIR/ca.crt (give it to every node as ring.ca) and DIR/ca.key (keep it offline)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if trustDomain == "" {
				return errors.New("--ring is required: the ring's name in its credentials, usually the zone (e.g. gslb.example.com; ring.trust_domain defaults to the first zone's apex)")
			}
			crt, key := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
			for _, f := range []string{crt, key} {
				if _, err := os.Stat(f); err == nil {
					return fmt.Errorf("%s exists: a new CA would not be trusted by the nodes that trust the old one (rotate with two CAs in ring.ca, see docs/security.md); choose another --dir", f)
				}
			}
			a, err := ringca.NewAuthority(trustDomain, expires, time.Now())
			if err != nil {
				return fmt.Errorf("--ring %q: %w", trustDomain, err)
			}
			keyPEM, err := ringca.EncodeKey(a.Key)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(dir, 0o700); err != nil {
				return err
			}
			if err := writeNew(key, keyPEM, 0o600); err != nil {
				return err
			}
			if err := writeNew(crt, ringca.EncodeCert(a.Cert.Raw), 0o644); err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "ring CA for %s, valid until %s\n  certificate: %s (ring.ca on every node)\n  key:         %s (keep it offline; only `meridian ring ca issue` needs it)\n",
				trustDomain, a.Cert.NotAfter.UTC().Format(time.RFC3339), crt, key)
			fmt.Fprintf(w, "next: meridian ring ca issue --ca-dir %s --name 'east-*' --role prober --region us-east --max-nodes 2 --out east.pem\n", dir)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&dir, "dir", ".", "directory for ca.crt and ca.key (created; existing files are never overwritten)")
	f.StringVar(&trustDomain, "ring", "", "the ring's name (trust domain), e.g. gslb.example.com (required)")
	f.DurationVar(&expires, "expires", 10*365*24*time.Hour, "validity of the CA")
	return c
}

// issueOptions are the flags of `meridian ring ca issue`.
type issueOptions struct {
	caDir, out, secret, namespace string
	scope                         ringca.Scope
	expires                       time.Duration
	caps                          []string
}

// newRingCAIssue is `meridian ring ca issue`.
func newRingCAIssue() *cobra.Command {
	o := &issueOptions{}
	s := &o.scope
	c := &cobra.Command{
		Use:   "issue",
		Short: "Issue a node (or site) credential: a certificate and its new key, as one PEM file or a Kubernetes Secret",
		Args:  cobra.NoArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return o.run(cmd) },
	}
	f := c.Flags()
	f.StringVar(&o.caDir, "ca-dir", ".", "directory holding ca.crt and ca.key (`meridian ring ca init --dir`)")
	f.StringVar(&s.Name, "name", "", "node name, or a site's prefix ending in * (e.g. 'east-*', with ring.node_name: \"east-{hostname}\") (required)")
	f.StringVar(&s.Role, "role", ringca.RoleProber, "prober (votes from --region) or agent (the heartbeat of --cluster only)")
	f.StringVar(&s.Region, "region", "", "a prober's region: it cannot vote as another")
	f.StringVar(&s.Cluster, "cluster", "", "an agent's cluster: the only heartbeat it may send")
	f.IntVar(&s.MaxNodes, "max-nodes", 0, "with a name ending in *: how many of its nodes may count at once (replicas + maxSurge)")
	f.StringSliceVar(&o.caps, "capability", nil, "admin: the node may change traffic over the ring (its overrides are accepted by its peers; probers only). Default: none")
	f.DurationVar(&o.expires, "expires", 8760*time.Hour, "validity of the credential")
	f.StringVarP(&o.out, "out", "o", "", "write to this file (mode 0600, never overwritten) instead of stdout")
	f.StringVar(&o.secret, "secret", "", "print a Kubernetes Secret of type kubernetes.io/tls with this name (tls.crt, tls.key, ca.crt: cert-manager's layout) instead of a PEM file")
	f.StringVarP(&o.namespace, "namespace", "n", "meridian", "the Secret's namespace (with --secret)")
	return c
}

// run issues the credential and writes it to --out (or stdout) as a PEM
// file or a Secret, then describes it on stderr.
func (o *issueOptions) run(cmd *cobra.Command) error {
	a, err := loadAuthority(o.caDir)
	if err != nil {
		return err
	}
	der, keyPEM, err := o.issue(a)
	if err != nil {
		return err
	}
	certPEM, caPEM := ringca.EncodeCert(der), ringca.EncodeCert(a.Cert.Raw)
	var data []byte
	if o.secret != "" {
		data, err = tlsSecret(o.secret, o.namespace, certPEM, keyPEM, caPEM)
		if err != nil {
			return err
		}
	} else {
		data = append(append(certPEM, keyPEM...), caPEM...)
	}
	if o.out == "" || o.out == "-" {
		if _, err := cmd.OutOrStdout().Write(data); err != nil {
			return err
		}
	} else if err := writeNew(o.out, data, 0o600); err != nil {
		return err
	}
	printIssued(cmd.ErrOrStderr(), der, o.out)
	return nil
}

// issue checks the scope the flags give and has the CA sign a certificate of it
// for a new key: it returns the certificate (DER) and the key (PEM).
func (o *issueOptions) issue(a ringca.Authority) (der, keyPEM []byte, err error) {
	s := &o.scope
	s.TrustDomain = a.TrustDomain()
	for _, c := range o.caps {
		if err := s.SetCapability(c); err != nil {
			return nil, nil, fmt.Errorf("--capability: %w", err)
		}
	}
	if s.TrustDomain == "" {
		return nil, nil, fmt.Errorf("%s names no ring (no spiffe:// URI): make the CA with `meridian ring ca init`", filepath.Join(o.caDir, "ca.crt"))
	}
	if err := s.Validate(); err != nil {
		return nil, nil, fmt.Errorf("credential: %w (flags --name, --role, --region, --cluster, --max-nodes, --capability)", err)
	}
	pub, key, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	der, err = a.Issue(*s, pub, o.expires, time.Now())
	if err != nil {
		return nil, nil, fmt.Errorf("--expires %s: %w", o.expires, err)
	}
	keyPEM, err = ringca.EncodeKey(key)
	if err != nil {
		return nil, nil, err
	}
	return der, keyPEM, nil
}

func newRingCAShow() *cobra.Command {
	return &cobra.Command{
		Use:   "show FILE",
		Short: "Print what a credential (PEM certificate) says: scope, serial, key fingerprint, validity",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			certs, err := ringca.ParseCertificates(b)
			if err != nil {
				return fmt.Errorf("%s: %w", args[0], err)
			}
			for _, c := range certs {
				printIssued(cmd.OutOrStdout(), c.Raw, "")
			}
			return nil
		},
	}
}

// printIssued prints what a certificate says and how to revoke it.
func printIssued(w io.Writer, der []byte, file string) {
	info, err := ringca.Describe(der)
	if err != nil {
		fmt.Fprintf(w, "certificate: %v\n", err)
		return
	}
	if file != "" {
		fmt.Fprintf(w, "wrote %s\n", file)
	}
	fmt.Fprintf(w, "%s\n  serial:      %s\n  key:         %s\n  valid:       %s to %s\n  to revoke:   ring.revoked: [%q]\n",
		info.Subject, info.Serial, info.Fingerprint, info.NotBefore.UTC().Format(time.RFC3339), info.NotAfter.UTC().Format(time.RFC3339), info.Serial)
}

func loadAuthority(dir string) (ringca.Authority, error) {
	crt, key := filepath.Join(dir, "ca.crt"), filepath.Join(dir, "ca.key")
	certPEM, err := os.ReadFile(crt)
	if err != nil {
		return ringca.Authority{}, fmt.Errorf("ring CA: %w (make one with `meridian ring ca init --dir %s`)", err, dir)
	}
	keyPEM, err := secretfile.Read(key)
	if err != nil {
		return ringca.Authority{}, fmt.Errorf("ring CA: %w", err)
	}
	a, err := ringca.ParseAuthority(certPEM, keyPEM)
	if err != nil {
		return ringca.Authority{}, fmt.Errorf("ring CA %s: %w", dir, err)
	}
	return a, nil
}

// tlsSecret is a kubernetes.io/tls Secret in cert-manager's layout.
func tlsSecret(name, namespace string, cert, key, ca []byte) ([]byte, error) {
	sec := corev1.Secret{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Secret"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: map[string]string{"app.kubernetes.io/part-of": "meridian"}},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key, "ca.crt": ca},
	}
	b, err := yaml.Marshal(sec)
	if err != nil {
		return nil, err
	}
	return []byte(strings.Replace(string(b), "  creationTimestamp: null\n", "", 1)), nil
}

// writeNew writes data to a file that must not exist yet.
func writeNew(path string, data []byte, perm fs.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("%s: %w (existing files are never overwritten)", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
