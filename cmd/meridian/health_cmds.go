package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/meridian-gslb/meridian/internal/api"
	"github.com/meridian-gslb/meridian/internal/app"
	"github.com/meridian-gslb/meridian/internal/model"
	"github.com/meridian-gslb/meridian/internal/propagation"
	"github.com/meridian-gslb/meridian/internal/ring"
)

const (
	defaultHTTP  = "127.0.0.1:8080"
	httpFlagHelp = "address of the running meridian serve: HOST:PORT or http://HOST:PORT, https://HOST:PORT with server.http.tls (see --ca-file); default $MERIDIAN_HTTP, else 127.0.0.1:8080"
	tokenHelp    = "file holding the admin bearer token (default: $MERIDIAN_ADMIN_TOKEN_FILE, then $MERIDIAN_ADMIN_TOKEN)"
)

// defaultHTTPAddr is the default of every --http flag: $MERIDIAN_HTTP, else
// the address `make run` serves on.
func defaultHTTPAddr() string {
	if a := os.Getenv("MERIDIAN_HTTP"); a != "" {
		return a
	}
	return defaultHTTP
}

func newStatus() *cobra.Command {
	var addr string
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Print decided health of endpoints and clusters, votes and probers (GET /v1/health)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var rep api.HealthReport
			if err := newClient(addr).do("GET", "/v1/health", nil, &rep); err != nil {
				return err
			}
			printStatus(cmd, rep)
			// Propagated workloads, when the propagation controller runs.
			var place []propagation.Status
			if err := newClient(addr).do("GET", "/v1/placement", nil, &place); err == nil && len(place) > 0 {
				printPlacement(cmd, place)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "http", defaultHTTPAddr(), httpFlagHelp)
	return cmd
}

func age(t time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return time.Since(t).Round(time.Second).String()
}

// printStatus prints the health report: endpoints, clusters, probers,
// untrusted members and the recent changes.
func printStatus(cmd *cobra.Command, rep api.HealthReport) {
	out := cmd.OutOrStdout()
	if rep.Probing {
		fmt.Fprintf(out, "node %s (region %s), decided %s ago\n\n", rep.Node, rep.Region, age(rep.DecidedAt))
	} else {
		fmt.Fprintf(out, "probing is off: health comes from the config only\n\n")
	}
	printEndpointStates(out, rep.Endpoints)
	if len(rep.Clusters) > 0 {
		fmt.Fprintln(out)
		printClusterStates(out, rep.Clusters)
	}
	if len(rep.Probers) > 0 {
		fmt.Fprintln(out)
		printProbers(out, rep.Probers)
	}
	if len(rep.Untrusted) > 0 {
		fmt.Fprintln(out, "\nUNTRUSTED MEMBERS (count for nothing: not in ring.peers, not signed by the listed key, beyond max_nodes, or no recent signed summary)")
		for _, u := range rep.Untrusted {
			fmt.Fprintf(out, "  %s\t%s\t%s\n", u.Name, u.Addr, u.Role)
		}
	}
	if len(rep.Changes) > 0 {
		fmt.Fprintln(out, "\nRECENT CHANGES")
		for i, c := range rep.Changes {
			if i == 10 {
				break
			}
			fmt.Fprintf(out, "  %s  %s: %s -> %s (%s) %s\n", c.At.Format(time.TimeOnly), c.Subject, c.From, c.To, c.Reason, strings.Join(c.Voters, ","))
		}
	}
}

// printEndpointStates prints the table of endpoint states with their
// hold-downs, brakes and votes.
func printEndpointStates(out io.Writer, endpoints []api.EndpointHealth) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVICE\tENDPOINT\tCLUSTER\tSTATE\tSINCE\tREASON\tVOTES")
	for _, e := range endpoints {
		state := e.State
		if e.Admin != "" {
			state += " [" + e.Admin + " in config]"
		}
		hold := time.Duration(e.HoldDownSeconds * float64(time.Second))
		switch {
		case e.HeldUntil != nil:
			state += fmt.Sprintf(" (held %s of %s)", time.Until(*e.HeldUntil).Round(time.Second), hold)
		case e.Failures > 0 && hold > 0:
			state += fmt.Sprintf(" (next hold-down %s)", hold) // it flapped within the flap window
		}
		if e.Braked {
			state += " (brake)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", strings.TrimSuffix(e.Service, "."), e.Target, e.Cluster, state, age(e.Since), e.Reason, votes(e.Votes))
	}
	tw.Flush()
}

// printClusterStates prints the table of cluster states.
func printClusterStates(out io.Writer, clusters []api.ClusterHealth) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tSTATE\tHEARTBEAT\tSINCE\tREASON\tVOTES")
	for _, c := range clusters {
		hb := "not monitored"
		if c.Monitored {
			hb = "monitored"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", c.Name, c.State, hb, age(c.Since), c.Reason, votes(c.Votes))
	}
	tw.Flush()
}

// printProbers prints the table of ring members that probe.
func printProbers(out io.Writer, probers []api.ProberHealth) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "MEMBER\tREGION\tROLE\tADDR\tLAST VOTE\tOUTLIER")
	for _, p := range probers {
		last := "-"
		if p.LastVoteAgeSecond != nil {
			last = (time.Duration(*p.LastVoteAgeSecond * float64(time.Second))).Round(time.Second).String() + " ago"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\n", p.Name, p.Region, p.Role, p.Addr, last, p.Outlier)
	}
	tw.Flush()
}

func printPlacement(cmd *cobra.Command, ps []propagation.Status) {
	out := cmd.OutOrStdout()
	fmt.Fprintln(out, "\nPROPAGATED WORKLOADS")
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TEMPLATE\tMODE\tCLUSTER\tDESIRED\tREADY\tGENERATION\tSTATE")
	for _, p := range ps {
		names := make([]string, 0, len(p.Clusters))
		for c := range p.Clusters {
			names = append(names, c)
		}
		slices.Sort(names)
		for _, c := range names {
			cs := p.Clusters[c]
			state := "healthy"
			switch {
			case cs.Error != "":
				state = "error: " + cs.Error
			case cs.Waiting != "":
				state = cs.Waiting
			case !cs.Healthy:
				state = "not ready"
			}
			if len(cs.Conditions) > 0 && cs.Error == "" {
				state += " (" + strings.Join(cs.Conditions, " ") + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%d/%d\t%s\n", p.Template, p.Mode, c, cs.Desired, cs.Ready, cs.Observed, cs.Generation, state)
		}
		for _, e := range p.Errors {
			fmt.Fprintf(tw, "%s\t%s\t-\t-\t-\t-\terror: %s\n", p.Template, p.Mode, e)
		}
	}
	tw.Flush()
}

func votes(vs []api.VoteInfo) string {
	if len(vs) == 0 {
		return "-"
	}
	parts := make([]string, len(vs))
	for i, v := range vs {
		stale := ""
		if !v.Fresh {
			stale = ",stale"
		}
		parts[i] = fmt.Sprintf("%s:%s(%.0fs%s)", v.Prober, v.Status, v.AgeSeconds, stale)
	}
	return strings.Join(parts, " ")
}

func newDemo() *cobra.Command {
	var addr, tokenFile string
	cmd := &cobra.Command{Use: "demo", Short: "Control the demo's local backends (make run)"}
	cmd.PersistentFlags().StringVar(&addr, "http", defaultHTTPAddr(), httpFlagHelp)
	for _, action := range []string{"stop", "start"} {
		sub := &cobra.Command{
			Use:   action + " ADDR",
			Short: strings.ToUpper(action[:1]) + action[1:] + " the demo backend at ADDR (an IP like 127.0.0.11, or ip:port)",
			Args:  cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := newClient(addr).withToken(tokenFile)
				if err != nil {
					return err
				}
				var list []map[string]any
				if err := c.do("POST", "/v1/demo/backends/"+url.PathEscape(args[0])+"/"+action, nil, &list); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s %s\n", map[string]string{"stop": "stopped", "start": "started"}[action], args[0])
				return nil
			},
		}
		sub.Flags().StringVar(&tokenFile, "token-file", "", tokenHelp)
		cmd.AddCommand(sub)
	}
	cmd.AddCommand(&cobra.Command{
		Use: "list", Short: "List the demo backends", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var list []struct {
				Addr    string `json:"addr"`
				Running bool   `json:"running"`
			}
			if err := newClient(addr).do("GET", "/v1/demo/backends", nil, &list); err != nil {
				return err
			}
			for _, b := range list {
				st := "running"
				if !b.Running {
					st = "stopped"
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s\t%s\n", b.Addr, st)
			}
			return nil
		},
	})
	return cmd
}

func newRing() *cobra.Command {
	var addr, tokenFile string
	cmd := &cobra.Command{Use: "ring", Short: "Prober ring tools: gossip keys, identities, the ring CA"}
	cmd.AddCommand(&cobra.Command{
		Use: "keygen", Short: "Print a new random 32-byte gossip key (base64) for ring.key_file", Args: cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) { fmt.Fprintln(cmd.OutOrStdout(), ring.GenerateKey()) },
	})
	keys := &cobra.Command{
		Use:   "keys",
		Short: "Rotate the gossip keyring of the whole ring: install NEW, use NEW, remove OLD",
		Long: `Key rotation, on any one node (it spreads to every node over the ring and
each node rewrites its ring.key_file):
  meridian ring keys install NEW   # every node accepts NEW
  meridian ring keys use NEW       # every node encrypts with NEW
  meridian ring keys remove OLD    # OLD is no longer accepted
  meridian ring keys list          # fingerprints of the installed keys`,
	}
	keys.PersistentFlags().StringVar(&addr, "http", defaultHTTPAddr(), httpFlagHelp)
	keys.AddCommand(&cobra.Command{
		Use: "list", Short: "List key fingerprints (the primary first)", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var out map[string]any
			if err := newClient(addr).do("GET", "/v1/ring/keys", nil, &out); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "primary: %v\nkeys:    %v\n", out["primary"], out["keys"])
			return nil
		},
	})
	for _, op := range []string{ring.KeyInstall, ring.KeyUse, ring.KeyRemove} {
		sub := &cobra.Command{
			Use: op + " KEY", Short: op + " a base64 gossip key on every node", Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				if _, err := ring.ParseKey(args[0]); err != nil {
					return err
				}
				c, err := newClient(addr).withToken(tokenFile)
				if err != nil {
					return err
				}
				var out map[string]any
				if err := c.do("POST", "/v1/ring/keys", api.KeyRequest{Op: op, Key: args[0]}, &out); err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s done; primary: %v, keys: %v\n", op, out["primary"], out["keys"])
				return nil
			},
		}
		sub.Flags().StringVar(&tokenFile, "token-file", "", tokenHelp)
		keys.AddCommand(sub)
	}
	cmd.AddCommand(keys)
	cmd.AddCommand(newRingIdentity(), newRingCA())
	return cmd
}

func newRingIdentity() *cobra.Command {
	var file string
	var p model.RingPeer
	c := &cobra.Command{
		Use:   "identity",
		Short: "Create (if missing) a node's ring identity key and print its ring.peers entry",
		Long: `identity reads the Ed25519 key at --file, creating it (mode 0600) when it does
not exist, and prints the node's public key as a ring.peers entry to paste
into every node's config. A node signs every message with this key; the
others accept it only for the name, role, region (probers) or cluster
(agents) listed with it.

  meridian ring identity --file /var/lib/meridian/ring-identity.pem --name eu-1 --role prober --region eu-west
  meridian ring identity --file agent.pem --name agent-east --role agent --cluster east
  meridian ring identity --file site.pem --name 'east-*' --max-nodes 4 --region us-east   # a Deployment's replicas`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return fmt.Errorf("--file is required (where the key is kept; serve's default is ring-identity.pem in its state directory)")
			}
			id, created, err := ring.LoadOrCreateIdentity(file)
			if err != nil {
				return err
			}
			p.PublicKey = model.FormatPeerKey(id.Public())
			out := cmd.OutOrStdout()
			if created {
				fmt.Fprintf(out, "# created %s (keep it secret: it speaks for the node)\n", file)
			}
			if p.Name == "" {
				fmt.Fprintln(out, p.PublicKey)
				return nil
			}
			entry := fmt.Sprintf("- {name: %s, role: %s", p.Name, p.Role)
			if p.Region != "" {
				entry += ", region: " + p.Region
			}
			if p.Cluster != "" {
				entry += ", cluster: " + p.Cluster
			}
			if p.IsPrefix() {
				if p.MaxNodes < 1 {
					return fmt.Errorf("--max-nodes is required with a name ending in * (how many of its nodes may be live at once, e.g. replicas + maxSurge)")
				}
				entry += fmt.Sprintf(", max_nodes: %d", p.MaxNodes)
			}
			fmt.Fprintf(out, "%s, public_key: %q}\n", entry, p.PublicKey)
			return nil
		},
	}
	f := c.Flags()
	f.StringVar(&file, "file", "", "identity key file (PKCS#8 PEM); created when missing")
	f.StringVar(&p.Name, "name", "", "node name for the printed ring.peers entry (without it only the key is printed)")
	f.StringVar(&p.Role, "role", model.PeerProber, "role for the entry: prober or agent")
	f.StringVar(&p.Region, "region", "", "region of a prober")
	f.StringVar(&p.Cluster, "cluster", "", "cluster of an agent")
	f.IntVar(&p.MaxNodes, "max-nodes", 0, "with a name ending in *: how many of its nodes may be live at once (replicas + maxSurge)")
	return c
}

// agentOptions are the flags of `meridian agent`.
type agentOptions struct {
	ring                                              ring.Config
	cluster, identity, credCert, credKey, trustDomain string
	cas, revoked                                      []string
	interval                                          time.Duration
}

// newAgent is `meridian agent`: a ring member that sends a cluster's heartbeat.
func newAgent() *cobra.Command {
	o := &agentOptions{}
	cmd := &cobra.Command{
		Use:   "agent",
		Short: "Join the prober ring next to a cluster and send its heartbeat",
		Long: `agent runs in or next to a member cluster and broadcasts a heartbeat for it
every --interval over the prober ring. Configure the cluster with
heartbeat: {agent: true} so that probers fail it over when the heartbeat
stops for longer than its grace.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return o.run() },
	}
	o.addFlags(cmd)
	return cmd
}

// addFlags registers the agent's flags on cmd.
func (o *agentOptions) addFlags(cmd *cobra.Command) {
	c := &o.ring
	f := cmd.Flags()
	f.StringVar(&o.cluster, "cluster", "", "cluster this agent speaks for (required)")
	f.StringVar(&c.NodeName, "node-name", "", "ring node name (default agent-CLUSTER)")
	f.StringVar(&o.identity, "identity-file", "", "Ed25519 identity key, created when missing (default ring-identity.pem in the state directory; see `meridian ring identity`); not used with --credential")
	f.StringSliceVar(&o.cas, "ca", nil, "PEM file of ring CA certificates (repeatable; the probers' ring.ca)")
	f.StringVar(&o.credCert, "credential", "", "this agent's credential from the ring CA: its certificate (PEM; with the key in it unless --credential-key); see `meridian ring ca issue --role agent`")
	f.StringVar(&o.credKey, "credential-key", "", "the credential's key (PKCS#8 PEM), when not in --credential's file")
	f.StringVar(&o.trustDomain, "ring", "", "the ring's trust domain (the probers' ring.trust_domain; required with --ca)")
	f.StringSliceVar(&o.revoked, "revoked", nil, "revoked credentials, serial:HEX or sha256:HEX (repeatable)")
	f.StringVar(&c.Region, "region", "agent", "region label of this agent")
	f.StringVar(&c.Bind, "bind", "127.0.0.1:7947", "gossip bind address")
	f.StringVar(&c.Advertise, "advertise", "", "gossip advertise address (default: bind)")
	f.StringSliceVar(&c.Seeds, "seed", nil, "prober address to join (repeatable)")
	f.StringVar(&c.KeyFile, "key-file", "", "gossip keyring file (same as the probers' ring.key_file)")
	f.StringVar(&c.Label, "label", "", "gossip label (same as the probers' ring.label)")
	f.BoolVar(&c.RequireEncryption, "require-encryption", false, "refuse to start without --key-file")
	f.DurationVar(&o.interval, "interval", model.DefaultHeartbeatPeriod, "heartbeat period")
}

// run joins the ring and sends the heartbeat every interval until the
// process is interrupted.
func (o *agentOptions) run() error {
	if o.cluster == "" {
		return fmt.Errorf("--cluster is required (the cluster name in the config)")
	}
	if o.ring.NodeName == "" {
		o.ring.NodeName = "agent-" + o.cluster
	}
	o.ring.Role, o.ring.Cluster = ring.RoleAgent, o.cluster
	mr := model.Ring{CA: o.cas, Revoked: o.revoked, Credential: model.RingCredential{CertFile: o.credCert, KeyFile: o.credKey}}
	if err := ringCAFlags(mr, o.trustDomain); err != nil {
		return err
	}
	r, err := o.startRing(mr)
	if err != nil {
		return err
	}
	ctxKeep, stopKeep := context.WithCancel(context.Background())
	defer stopKeep()
	keeper := &ring.Keeper{Ring: r, Logger: slog.Default()}
	keeper.Started(o.trustDomain, mr)
	go keeper.Run(ctxKeep, ring.DefaultTrustCheck) // a credential renewed on disk is taken without a restart
	defer r.Shutdown()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	t := time.NewTicker(o.interval)
	defer t.Stop()
	r.SendHeartbeat(o.cluster, time.Now())
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			r.SendHeartbeat(o.cluster, now)
		}
	}
}

// startRing loads the agent's identity (or credential) and trust, joins the
// ring and logs how the probers are to accept this agent.
func (o *agentOptions) startRing(mr model.Ring) (*ring.Ring, error) {
	c := &o.ring
	var created bool
	if o.credCert == "" {
		if o.identity == "" {
			o.identity = filepath.Join(app.StateDir("", c.NodeName), "ring-identity.pem")
		}
		id, made, err := ring.LoadOrCreateIdentity(o.identity)
		if err != nil {
			return nil, err
		}
		c.Identity, created = id, made
	}
	var err error
	if c.Trust, err = ring.LoadTrust(o.trustDomain, mr); err != nil {
		return nil, err
	}
	if c.Credential, err = ring.LoadCredential(mr); err != nil {
		return nil, err
	}
	r, err := ring.Start(*c)
	if err != nil {
		return nil, err
	}
	entry := fmt.Sprintf("{name: %s, role: agent, cluster: %s, public_key: %q}", c.NodeName, o.cluster, r.PublicKey())
	switch {
	case c.Credential != nil:
		slog.Info("agent started with its ring credential", "credential", r.Credential())
	case created:
		slog.Warn("agent identity created: list it in the probers' ring.peers, or its heartbeats are refused", "file", o.identity, "peer", entry)
	default:
		slog.Info("agent started: the probers must list it in ring.peers", "identity", o.identity, "peer", entry)
	}
	return r, nil
}

// ringCAFlags checks the agent's CA flags as the config's ring section is
// checked.
func ringCAFlags(mr model.Ring, trustDomain string) error {
	switch {
	case mr.Credential.CertFile != "" && len(mr.CA) == 0:
		return errors.New("--credential needs --ca: the ring CA certificates the probers trust")
	case len(mr.CA) > 0 && trustDomain == "":
		return errors.New("--ring is required with --ca: the ring's trust domain (the probers' ring.trust_domain, by default their first zone's apex)")
	}
	for _, e := range mr.Revoked {
		if _, err := model.ParseRevoked(e); err != nil {
			return fmt.Errorf("--revoked: %w", err)
		}
	}
	return nil
}
