package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/meridian-gslb/meridian/internal/whatif"
)

func newSimulate() *cobra.Command {
	var addr string
	var fails, drains, weights []string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "simulate --fail cluster=NAME|endpoint=SERVICE/TARGET [--drain ...] [--weight SERVICE/TARGET=N]",
		Short: "Show what a failure, drain or weight change would do to the answers, changing nothing (GET /v1/simulate)",
		Long: `simulate asks a running 'meridian serve' to compile its current inputs
(config, decided health, capacity, overrides in force) plus the given
changes, as the overrides they stand for (--fail: force-down, --drain,
--weight), beside what it serves, and prints each affected service's shares
per cluster before and after, its answers per geo place, and the load each
cluster would get relative to its ready capacity. Nothing is changed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q := url.Values{}
			for _, v := range fails {
				q.Add(whatif.Fail, v)
			}
			for _, v := range drains {
				q.Add(whatif.Drain, v)
			}
			for _, v := range weights {
				q.Add(whatif.Weight, v)
			}
			if len(q) == 0 {
				return fmt.Errorf("give at least one --fail, --drain or --weight")
			}
			var raw json.RawMessage
			if err := newClient(addr).do("GET", "/v1/simulate?"+q.Encode(), nil, &raw); err != nil {
				return err
			}
			if asJSON {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), string(raw))
				return err
			}
			var r whatif.Report
			if err := json.Unmarshal(raw, &r); err != nil {
				return fmt.Errorf("GET /v1/simulate: bad response: %w", err)
			}
			return printSimulation(cmd.OutOrStdout(), r)
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "http", defaultHTTPAddr(), httpFlagHelp)
	f.StringArrayVar(&fails, "fail", nil, "cluster=NAME or endpoint=SERVICE/TARGET taken down (repeatable)")
	f.StringArrayVar(&drains, "drain", nil, "cluster=NAME or endpoint=SERVICE/TARGET drained (repeatable)")
	f.StringArrayVar(&weights, "weight", nil, "SERVICE/TARGET=N: an endpoint's weight replaced, 0..1000 (repeatable)")
	f.BoolVar(&asJSON, "json", false, "print the raw JSON of /v1/simulate")
	return cmd
}

func shares(ss []whatif.Share) string {
	if len(ss) == 0 {
		return "(none)"
	}
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = s.Cluster + " " + strconv.FormatFloat(s.Percent, 'f', -1, 64) + "%"
	}
	return strings.Join(parts, ", ")
}

func printSimulation(out io.Writer, r whatif.Report) error {
	fmt.Fprintf(out, "simulated (nothing changed): %s\n", strings.Join(r.Changes, " "))
	if len(r.Services) == 0 {
		fmt.Fprintf(out, "no service's answers would change (%d unchanged)\n", r.Same)
		return nil
	}
	for _, s := range r.Services {
		fmt.Fprintf(out, "\n%s (%s)\n", s.Service, s.Strategy)
		for _, p := range s.Places {
			if slices.Equal(p.Before, p.After) && slices.Equal(p.AnswerBefore, p.AnswerAfter) && p.FailOpenBefore == p.FailOpenAfter {
				fmt.Fprintf(out, "  %s: %s (unchanged)\n", p.Place, shares(p.Before))
				continue
			}
			fmt.Fprintf(out, "  %s: %s -> %s\n", p.Place, shares(p.Before), shares(p.After))
			fmt.Fprintf(out, "    answers now:   %s%s\n", strings.Join(p.AnswerBefore, " | "), failOpen(p.FailOpenBefore))
			fmt.Fprintf(out, "    answers after: %s%s\n", strings.Join(p.AnswerAfter, " | "), failOpen(p.FailOpenAfter))
		}
		tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  CLUSTER\tNOW\tAFTER\tREADY\tREADY SHARE\tLOAD VS READY")
		for _, l := range s.Load {
			ready := "-"
			if l.Ready != nil {
				ready = strconv.FormatFloat(*l.Ready, 'f', -1, 64) + "%"
			}
			vs := "-"
			if l.VsReady > 0 {
				vs = strconv.FormatFloat(l.VsReady, 'f', 2, 64) + "x"
			}
			fmt.Fprintf(tw, "  %s\t%.1f%%\t%.1f%%\t%s\t%.1f%%\t%s\n", l.Cluster, l.Before, l.After, ready, l.ReadyShare, vs)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "\n%d service(s) unchanged\n", r.Same)
	return nil
}

func failOpen(b bool) string {
	if b {
		return " (fail-open: every endpoint down)"
	}
	return ""
}
