package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/meridian-gslb/meridian/internal/dnssec"
	"github.com/meridian-gslb/meridian/internal/model"
)

// newDNSSEC is `meridian dnssec` with its keygen and ds subcommands.
func newDNSSEC() *cobra.Command {
	d := &cobra.Command{Use: "dnssec", Short: "DNSSEC key tools (online signing of zones)"}
	d.AddCommand(newDNSSECKeygen(), newDNSSECDS())
	return d
}

// newDNSSECKeygen is `meridian dnssec keygen`: it writes a new CSK as BIND
// files and prints its config lines and DS record.
func newDNSSECKeygen() *cobra.Command {
	var zone, alg, out, base string
	var ttl uint32
	keygen := &cobra.Command{
		Use:   "keygen --zone ZONE [--algorithm ecdsap256|ed25519] [--out DIR] [--name NAME]",
		Short: "Generate a combined signing key (CSK, flags 257) as BIND .key/.private files",
		Long: `keygen writes K<zone>+<alg>+<tag>.key and .private into DIR (the private
file with mode 0600) and prints the config lines for the zone and the DS
record to publish at the parent.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if zone == "" {
				return errors.New("--zone is required")
			}
			a, err := dnssec.ParseAlgorithm(alg)
			if err != nil {
				return err
			}
			if err := os.MkdirAll(out, 0o755); err != nil {
				return err
			}
			k, err := dnssec.Generate(model.CanonicalName(zone), a, ttl)
			if err != nil {
				return err
			}
			name := k.BaseName()
			if base != "" {
				name = base
			}
			keyPath, privPath, err := k.WriteAs(out, name)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "wrote %s\nwrote %s\n\n", keyPath, privPath)
			fmt.Fprintf(w, "# config, under the zone %s:\ndnssec:\n  key_files: [%s]\n\n", k.DNSKEY.Hdr.Name, privPath)
			fmt.Fprintf(w, "# DS record for the parent zone:\n%s\n", k.DS())
			return nil
		},
	}
	f := keygen.Flags()
	f.StringVar(&zone, "zone", "", "zone apex the key signs (required)")
	f.StringVar(&alg, "algorithm", "ecdsap256", "ecdsap256 (13, ECDSAP256SHA256) or ed25519 (15)")
	f.StringVar(&out, "out", ".", "directory for the key files (created)")
	f.StringVar(&base, "name", "", "base name of the files, NAME.key and NAME.private (default K<zone>+<alg>+<tag>; a Kubernetes Secret's keys cannot contain '+': zones[].dnssec.key_directory finds the zone's keys whatever their names)")
	f.Uint32Var(&ttl, "ttl", 3600, "TTL written into the .key file (the served DNSKEY TTL is the zone's ns_ttl)")
	return keygen
}

// newDNSSECDS is `meridian dnssec ds`: it prints the DS records of keys.
func newDNSSECDS() *cobra.Command {
	var dsZone string
	ds := &cobra.Command{
		Use:   "ds --zone ZONE KEYFILE...",
		Short: "Print the DS records (SHA-256) of keys for the parent zone",
		Long:  "ds reads the public keys (KEYFILE: the .key, the .private or their base name) and prints one DS record (digest type 2, SHA-256) per secure entry point key.",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dsZone == "" {
				return errors.New("--zone is required")
			}
			apex := model.CanonicalName(dsZone)
			for _, p := range args {
				k, err := dnssec.ReadPublicKey(p)
				if err != nil {
					return err
				}
				if k.DNSKEY.Hdr.Name != apex {
					return fmt.Errorf("%s: key of zone %s, not %s", p, k.DNSKEY.Hdr.Name, apex)
				}
				if k.DNSKEY.Flags&dnssec.FlagsCSK != dnssec.FlagsCSK {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: key %d has no SEP flag (not a KSK/CSK): skipped\n", p, k.Tag())
					continue
				}
				fmt.Fprintln(cmd.OutOrStdout(), k.DS())
			}
			return nil
		},
	}
	ds.Flags().StringVar(&dsZone, "zone", "", "zone apex of the keys (required)")
	return ds
}
