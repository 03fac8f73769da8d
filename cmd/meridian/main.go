// Command meridian is the Meridian global traffic manager: an authoritative
// GSLB DNS server with weighted, failover and geo answers.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/meridian-gslb/meridian/internal/api"
	"github.com/meridian-gslb/meridian/internal/app"
	"github.com/meridian-gslb/meridian/internal/config"
	"github.com/meridian-gslb/meridian/internal/geo"
	"github.com/meridian-gslb/meridian/internal/secretfile"
	"github.com/meridian-gslb/meridian/internal/serving"
)

func main() {
	root := newRoot()
	root.SetArgs(negativeNumbersAsArgs(root, os.Args[1:]))
	if err := root.ExecuteContext(context.Background()); err != nil {
		var ce *checkError
		if !errors.As(err, &ce) {
			fmt.Fprintln(os.Stderr, "meridian:", err)
		}
		os.Exit(1)
	}
}

// negativeNumbersAsArgs lets a negative number be a positional argument
// (meridian weight SERVICE TARGET -1), which pflag would read as the
// shorthand flag "1": when args hold one and no "--", the command's flags
// (with their values) go before a "--" and its positional arguments after
// it, in their order. A negative number that is a flag's value (--for -1)
// stays the flag's.
func negativeNumbersAsArgs(root *cobra.Command, args []string) []string {
	if slices.Contains(args, "--") || !slices.ContainsFunc(args, isNegativeNumber) {
		return args
	}
	cmd, rest, err := root.Find(args)
	if err != nil || cmd == root {
		return args
	}
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	fs.AddFlagSet(cmd.Flags())
	fs.AddFlagSet(cmd.InheritedFlags())
	var flags, pos []string
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		switch {
		case isNegativeNumber(a) || a == "-" || !strings.HasPrefix(a, "-"):
			pos = append(pos, a)
		default:
			flags = append(flags, a)
			if takesValue(fs, a) && i+1 < len(rest) {
				i++
				flags = append(flags, rest[i])
			}
		}
	}
	return slices.Concat(strings.Fields(cmd.CommandPath())[1:], flags, []string{"--"}, pos)
}

// isNegativeNumber reports whether a is a negative integer or decimal.
func isNegativeNumber(a string) bool {
	if len(a) < 2 || a[0] != '-' {
		return false
	}
	_, err := strconv.ParseFloat(a, 64)
	return err == nil
}

// takesValue reports whether the flag token a (--name or -n, without
// "=value") is a flag of fs that needs a value (the next argument).
func takesValue(fs *pflag.FlagSet, a string) bool {
	if strings.Contains(a, "=") {
		return false
	}
	var f *pflag.Flag
	if name, ok := strings.CutPrefix(a, "--"); ok {
		f = fs.Lookup(name)
	} else if len(a) == 2 {
		f = fs.ShorthandLookup(a[1:])
	}
	return f != nil && f.NoOptDefVal == ""
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "meridian",
		Short:         "Global traffic manager and failover controller (GSLB DNS)",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.PersistentFlags().StringVar(&caFile, "ca-file", "", "PEM CA certificate(s) to trust for an https:// --http address, e.g. a self-signed server.http.tls certificate (default: $"+envCAFile+", else the system roots)")
	root.AddCommand(newServe(), newCheckConfig(), newVersion(), newGeo(), newStatus(), newDemo(), newRing(), newAgent(), newPush())
	root.AddCommand(adminCommands()...)
	root.AddCommand(newExplain(), newSimulate())
	root.AddCommand(newDNSSEC())
	root.AddCommand(newCluster())
	return root
}

func newServe() *cobra.Command {
	var o app.Options
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve DNS and the HTTP endpoints from a config file (default: the embedded demo)",
		Long: `Serve answers DNS for the configured zones and serves /metrics, /healthz,
/readyz and a status page over HTTP. SIGHUP or a change of the config file
reloads it; an invalid file is logged and the previous config keeps serving.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return app.Run(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.ConfigPath, "config", "c", "", "config file (YAML); empty serves the embedded demo config")
	f.StringSliceVar(&o.DNSListen, "dns-listen", nil, "DNS listen address(es), overrides server.dns.listen (e.g. 127.0.0.1:5353)")
	f.StringVar(&o.HTTPListen, "http-listen", "", "HTTP listen address or \"off\", overrides server.http.listen")
	f.StringVar(&o.LogFormat, "log-format", "", "text or json, overrides server.log.format")
	f.StringVar(&o.LogLevel, "log-level", "", "debug, info, warn or error, overrides server.log.level")
	f.BoolVar(&o.RequireEncryption, "require-encryption", false, "refuse to start the prober ring without a gossip key (ring.key_file)")
	f.BoolVar(&o.AllowReadableSecretFiles, secretfile.FlagAllow, false, "read secret files (token, TLS key, TSIG, Cloudflare, ring key) that group or other may access, with a warning, instead of refusing to start (also $"+secretfile.EnvAllow+"=1)")
	f.BoolVar(&o.DemoBackends, "demo-backends", false, "start local HTTP backends for the loopback endpoints with http checks (the demo; on by default without --config)")
	return cmd
}

// checkError marks an error check-config has already printed.
type checkError struct{ error }

func newCheckConfig() *cobra.Command {
	var allowReadable bool
	cmd := &cobra.Command{
		Use:   "check-config FILE",
		Short: "Validate a config file exactly as serve would load it, secret files' modes included",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			l, err := serving.Load(args[0], nil, "")
			if err != nil {
				fmt.Fprintln(cmd.ErrOrStderr(), err)
				return &checkError{err}
			}
			defer l.Locator.Close()
			f := l.File
			if allowReadable {
				secretfile.SetPolicy(secretfile.Warn, slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil)))
			}
			data, err := os.ReadFile(args[0])
			if err != nil {
				return err
			}
			if errs := config.CheckSecretFiles(args[0], data, f); len(errs) > 0 {
				err := &config.LoadError{Errors: errs}
				fmt.Fprintln(cmd.ErrOrStderr(), err)
				return &checkError{err}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: ok (%d zones, %d clusters, %d services)\n", args[0], len(f.Zones), len(f.Clusters), len(f.Services))
			return nil
		},
	}
	cmd.Flags().BoolVar(&allowReadable, secretfile.FlagAllow, false, "as serve's flag: secret files that group or other may access are warned about, not refused (also $"+secretfile.EnvAllow+"=1)")
	return cmd
}

func newVersion() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		Run: func(cmd *cobra.Command, _ []string) {
			fmt.Fprintf(cmd.OutOrStdout(), "meridian %s (%s %s/%s)\n", app.Version, runtime.Version(), runtime.GOOS, runtime.GOARCH)
		},
	}
}

func newGeo() *cobra.Command {
	g := &cobra.Command{Use: "geo", Short: "Geo database tools"}
	build := &cobra.Command{
		Use:   "build CSV MMDB",
		Short: "Build a MaxMind-format .mmdb from a CSV of cidr,country,continent[,region]",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			in, err := os.Open(args[0])
			if err != nil {
				return err
			}
			defer in.Close()
			tmp := args[1] + ".tmp"
			out, err := os.Create(tmp)
			if err != nil {
				return err
			}
			n, err := geo.BuildMMDB(in, out)
			if cerr := out.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				os.Remove(tmp)
				return fmt.Errorf("%s: %w", args[0], err)
			}
			if err := os.Rename(tmp, args[1]); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "wrote %s (%d networks)\n", args[1], n)
			return nil
		},
	}
	g.AddCommand(build)
	return g
}

func newPush() *cobra.Command {
	var o app.PushOptions
	var from string
	cmd := &cobra.Command{
		Use:   "push --config FILE [--dry-run]",
		Short: "Sync the configured Route53, Cloudflare and RFC 2136 zones and delegations once, or print the plan with --dry-run",
		Long: `push computes, for every zone under providers, the changes that make the
provider equal to Meridian's decisions and applies them (or, with --dry-run,
prints them and writes nothing). Health comes from the config, or from a
running node's decisions with --from-http ADDR. A running 'meridian serve'
with providers keeps zones in sync by itself; push is for previews and
one-off syncs.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.ConfigPath == "" {
				return fmt.Errorf("--config is required")
			}
			if from != "" {
				var rep api.HealthReport
				if err := newClient(from).do("GET", "/v1/health", nil, &rep); err != nil {
					return err
				}
				o.Health = &rep
			}
			o.Out = cmd.OutOrStdout()
			o.Logger = slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: slog.LevelWarn}))
			return app.Push(cmd.Context(), o)
		},
	}
	f := cmd.Flags()
	f.StringVarP(&o.ConfigPath, "config", "c", "", "config file with a providers section")
	f.BoolVar(&o.DryRun, "dry-run", false, "print the plan for each zone and write nothing")
	f.StringVar(&from, "from-http", "", "take decided health from a running meridian serve at this HTTP address")
	return cmd
}
