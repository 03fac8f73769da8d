package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/meridian-gslb/meridian/internal/kube"
	"github.com/meridian-gslb/meridian/internal/kube/grants"
	"github.com/meridian-gslb/meridian/internal/kube/join"
	"github.com/meridian-gslb/meridian/internal/kube/merge"
)

// clusterTimeout bounds each cluster command's API calls together.
const clusterTimeout = 2 * time.Minute

func newCluster() *cobra.Command {
	c := &cobra.Command{Use: "cluster", Short: "Join member clusters to the hub, list them, remove them"}
	c.AddCommand(newClusterJoin(), newClusterUnjoin(), newClusterList())
	return c
}

// kubeFlags are the operator's kubeconfig and contexts.
type kubeFlags struct {
	kubeconfig, hubContext, memberContext string
	raw                                   *clientcmdapi.Config
	rules                                 *clientcmd.ClientConfigLoadingRules
}

func (k *kubeFlags) add(cmd *cobra.Command, member bool) {
	f := cmd.Flags()
	f.StringVar(&k.kubeconfig, "kubeconfig", "", "the operator's kubeconfig (default: $KUBECONFIG, else ~/.kube/config)")
	f.StringVar(&k.hubContext, "hub-context", "", "kubeconfig context of the hub, where Meridian reads member Secrets (default: the current context)")
	if member {
		f.StringVar(&k.memberContext, "member-context", "", "kubeconfig context of the member cluster (required)")
	}
}

// load reads the kubeconfig (the operator's own: exec plugins and files are
// fine here) and checks the contexts.
func (k *kubeFlags) load(member bool) error {
	k.rules = clientcmd.NewDefaultClientConfigLoadingRules()
	k.rules.ExplicitPath = k.kubeconfig
	raw, err := k.rules.Load()
	if err != nil {
		return fmt.Errorf("--kubeconfig: %w", err)
	}
	k.raw = raw
	if k.hubContext == "" {
		if raw.CurrentContext == "" {
			return fmt.Errorf("--hub-context is required: the kubeconfig has no current context (contexts: %s)", strings.Join(contexts(raw), ", "))
		}
		k.hubContext = raw.CurrentContext
	}
	check := map[string]string{"--hub-context": k.hubContext}
	if member {
		if k.memberContext == "" {
			return fmt.Errorf("--member-context is required (contexts: %s)", strings.Join(contexts(raw), ", "))
		}
		check["--member-context"] = k.memberContext
	}
	for flag, name := range check {
		if _, ok := raw.Contexts[name]; !ok {
			return fmt.Errorf("%s %q: no such context in the kubeconfig (contexts: %s)", flag, name, strings.Join(contexts(raw), ", "))
		}
	}
	return nil
}

func contexts(raw *clientcmdapi.Config) []string {
	var out []string
	for n := range raw.Contexts {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

func (k *kubeFlags) restConfig(flag, context string) (*rest.Config, error) {
	// The operator's own kubeconfig: exec plugins may run, and may ask on
	// the terminal (a cloud login).
	cfg, err := clientcmd.NewInteractiveClientConfig(*k.raw, context, &clientcmd.ConfigOverrides{}, os.Stdin, k.rules).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("%s %q: %w", flag, context, err)
	}
	cfg.UserAgent = "meridian-cluster"
	// unjoin lists every kind in a namespace, deprecated ones too: their
	// warnings say nothing to the operator.
	cfg.WarningHandler = rest.NoWarnings{}
	cfg.Timeout = 30 * time.Second
	// unjoin lists each kind of a namespace once: client-go's default 5
	// requests/s would make that seconds.
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

// clients returns the hub's client and, with member, the member's.
func (k *kubeFlags) clients(member bool) (join.Clusters, error) {
	var c join.Clusters
	hub, err := k.restConfig("--hub-context", k.hubContext)
	if err != nil {
		return c, err
	}
	if c.Hub, err = kubernetes.NewForConfig(hub); err != nil {
		return c, fmt.Errorf("--hub-context %q: %w", k.hubContext, err)
	}
	if !member {
		return c, nil
	}
	mem, err := k.restConfig("--member-context", k.memberContext)
	if err != nil {
		return c, err
	}
	if c.Member, err = kubernetes.NewForConfig(mem); err != nil {
		return c, fmt.Errorf("--member-context %q: %w", k.memberContext, err)
	}
	dyn, err := dynamic.NewForConfig(mem)
	if err != nil {
		return c, fmt.Errorf("--member-context %q: %w", k.memberContext, err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(mem)
	if err != nil {
		return c, fmt.Errorf("--member-context %q: %w", k.memberContext, err)
	}
	c.Contents = join.NamespaceContents(disc, dyn)
	return c, nil
}

// newClusterJoin is `meridian cluster join`.
func newClusterJoin() *cobra.Command {
	var k kubeFlags
	var o join.Options
	var dryRun bool
	cmd := &cobra.Command{
		Use:   "join --member-context CTX --name NAME --region REGION",
		Short: "Register a member cluster with the hub: its ServiceAccount and RBAC, a bound token, the hub's member Secret",
		Long: `join makes, in the member cluster: namespace --namespace (unless it exists),
ServiceAccount ` + join.ServiceAccount + ` and least-privilege ClusterRoles bound to it (the base's
member rules, plus those of each --components entry, exactly as
deploy/kustomize grants them); mints a bound token for the ServiceAccount
(TokenRequest API); and writes Secret ` + join.SecretPrefix + `NAME into the hub's
--hub-namespace, holding an inline kubeconfig (https server, CA data, token)
that the hub's kubernetes.member_secrets accepts.

Every object carries the labels ` + join.Selector("NAME") + `;
objects of the same names without them are refused, and nothing is changed.
Running join again updates the objects and mints a new token: that is how to
renew it. The token is never printed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runClusterJoin(cmd, &k, o, dryRun) },
	}
	k.add(cmd, true)
	f := cmd.Flags()
	f.StringVar(&o.Name, "name", "", "the member's cluster name in the hub (annotation meridian.io/cluster; Secret "+join.SecretPrefix+"NAME)")
	f.StringVar(&o.Region, "region", "", "the member's region (annotation meridian.io/region)")
	f.StringVar(&o.Namespace, "namespace", join.DefaultNamespace, "namespace of the hub's ServiceAccount in the member")
	f.StringVar(&o.HubNamespace, "hub-namespace", join.DefaultNamespace, "the hub's kubernetes.member_secrets namespace")
	f.StringSliceVar(&o.Components, "components", nil, "opt-in rights beside the base's: "+strings.Join(grants.ComponentNames(), ", ")+" (the kustomize components of those names)")
	f.StringVar(&o.Server, "server", "", "the member's API server URL as the hub reaches it (default: the member context's server)")
	f.DurationVar(&o.TokenExpiry, "token-expiry", join.DefaultTokenExpiry, "lifetime asked for the token (at least 10m; the apiserver may grant less)")
	f.BoolVar(&dryRun, "dry-run", false, "print the objects join would make (the token is a placeholder) and contact no cluster")
	return cmd
}

// runClusterJoin is `meridian cluster join`: it prints the plan's manifests
// with --dry-run, else joins the member and prints what it did.
func runClusterJoin(cmd *cobra.Command, k *kubeFlags, o join.Options, dryRun bool) error {
	p, err := join.NewPlan(o)
	if err != nil {
		return err
	}
	if err := k.load(true); err != nil {
		return err
	}
	ep, err := join.EndpointFor(k.raw, k.memberContext, p.Options.Server, os.ReadFile)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if dryRun {
		y, err := p.Manifests(ep)
		if err != nil {
			return err
		}
		_, err = out.Write(y)
		return err
	}
	c, err := k.clients(true)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(cmd.Context(), clusterTimeout)
	defer cancel()
	minted := time.Now()
	res, err := join.Join(ctx, c, p, ep)
	printActions(out, res.Actions)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "member %s joined (hub context %s, member context %s); token valid until %s\n",
		p.Options.Name, k.hubContext, k.memberContext, res.TokenExpires.UTC().Format(time.RFC3339))
	if res.Shortened(minted) {
		fmt.Fprintf(out, "note: --token-expiry %s was asked; the member's apiserver granted %s (its --service-account-max-token-expiration). Run join again before then to renew it.\n",
			res.TokenAsked, res.TokenExpires.Sub(minted).Round(time.Minute))
	}
	return nil
}

func newClusterUnjoin() *cobra.Command {
	var k kubeFlags
	var o join.UnjoinOptions
	cmd := &cobra.Command{
		Use:   "unjoin --member-context CTX --name NAME",
		Short: "Remove what `meridian cluster join` made for a member, in the member and in the hub",
		Long: `unjoin deletes the objects labelled ` + join.Selector("NAME") + `:
in the member the ClusterRoleBindings, ClusterRoles and ServiceAccount
(every token minted for it stops working) and the namespace if join made it
and it holds nothing else; then the Secret in the hub. Objects of join's
names that lack the labels are left and reported.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := join.CheckName(o.Name); err != nil {
				return err
			}
			if err := k.load(true); err != nil {
				return err
			}
			c, err := k.clients(true)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), clusterTimeout)
			defer cancel()
			acts, err := join.Unjoin(ctx, c, o)
			out := cmd.OutOrStdout()
			printActions(out, acts)
			if err != nil {
				return err
			}
			if len(acts) == 0 {
				fmt.Fprintf(out, "nothing to remove: no object in either cluster carries %s\n", join.Selector(o.Name))
			}
			return nil
		},
	}
	k.add(cmd, true)
	f := cmd.Flags()
	f.StringVar(&o.Name, "name", "", "the member's name, as given to join (required)")
	f.StringVar(&o.Namespace, "namespace", join.DefaultNamespace, "member namespace join was given (to report a ServiceAccount there that join did not make)")
	f.StringVar(&o.HubNamespace, "hub-namespace", join.DefaultNamespace, "hub namespace join was given (to report a Secret there that join did not make)")
	f.BoolVar(&o.DryRun, "dry-run", false, "print what would be deleted; delete nothing")
	return cmd
}

// clusterList is `meridian cluster list -o json`.
type clusterList struct {
	Members []join.Row `json:"members"`
	Hub     struct {
		HTTP  string `json:"http"`            // the running hub asked for readiness
		Error string `json:"error,omitempty"` // why it could not be asked
	} `json:"hub"`
}

func newClusterList() *cobra.Command {
	var k kubeFlags
	var ns, output, addr string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List the hub's member Secrets: cluster, region, server, credential expiry, and readiness as the running hub sees it",
		Long: `list reads the Secrets labelled meridian.io/member=true in --hub-namespace
and asks the running hub Meridian (--http, e.g. through kubectl
port-forward service/meridian-http 8080) for each member's state
(GET /v1/kube). When the hub cannot be asked, the state is Unknown and the
reason is printed; a Secret the hub refuses is Refused, with the reason.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if output != "table" && output != "json" {
				return fmt.Errorf("-o %q: not an output format (allowed: table, json)", output)
			}
			if err := k.load(false); err != nil {
				return err
			}
			c, err := k.clients(false)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), clusterTimeout)
			defer cancel()
			secrets, err := join.List(ctx, c.Hub, ns)
			if err != nil {
				return err
			}
			var res clusterList
			res.Hub.HTTP = addr
			var rep merge.KubeReport
			var members []kube.MemberStatus
			if err := newClient(addr).do("GET", "/v1/kube", nil, &rep); err != nil {
				res.Hub.Error = err.Error()
			} else {
				members = rep.Members
				if members == nil {
					members = []kube.MemberStatus{}
				}
			}
			res.Members = join.Rows(secrets, members)
			out := cmd.OutOrStdout()
			if output == "json" {
				e := json.NewEncoder(out)
				e.SetIndent("", "  ")
				return e.Encode(res)
			}
			printRows(out, res)
			return nil
		},
	}
	k.add(cmd, false)
	f := cmd.Flags()
	f.StringVar(&ns, "hub-namespace", join.DefaultNamespace, "the hub's kubernetes.member_secrets namespace")
	f.StringVarP(&output, "output", "o", "table", "table or json")
	f.StringVar(&addr, "http", defaultHTTPAddr(), httpFlagHelp)
	return cmd
}

func printActions(w io.Writer, acts []join.Action) {
	for _, a := range acts {
		fmt.Fprintln(w, a)
	}
}

func printRows(w io.Writer, l clusterList) {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tREGION\tSTATE\tSERVER\tEXPIRES\tJOINED\tSECRET\tREASON")
	for _, r := range l.Members {
		exp := "-"
		if r.Expires != nil {
			exp = r.Expires.UTC().Format(time.RFC3339)
		}
		joined := "no"
		if r.Joined {
			joined = "yes"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", r.Cluster, dash(r.Region), r.State, dash(r.Server), exp, joined, r.Secret, r.Reason)
	}
	tw.Flush()
	if len(l.Members) == 0 {
		fmt.Fprintln(w, "no member Secrets")
	}
	if l.Hub.Error != "" {
		fmt.Fprintf(w, "readiness unknown: the hub at %s could not be asked: %s\n", l.Hub.HTTP, l.Hub.Error)
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
