package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/meridian-gslb/meridian/internal/engine"
)

func newExplain() *cobra.Command {
	var addr, qtype, client, subnet string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "explain NAME [--type A] [--client IP | --subnet CIDR]",
		Short: "Show the answer a running meridian gives for a name now, and why (GET /v1/explain)",
		Long: `explain asks a running 'meridian serve' what it answers for NAME and why:
the zone and service, the strategy, where the client is and how it was
located, every candidate endpoint with its weight, share, decided health and
why it was kept or dropped, fail-open and administrative notes, and the
Extended DNS Error (RFC 8914) the reply carries, if any. --subnet
explains the answer to a query carrying that EDNS Client Subnet, --client the
answer to a query from that source address; without either the client is
not located (geo services then answer their default).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			q := url.Values{"name": {args[0]}, "type": {qtype}}
			if client != "" {
				q.Set("client", client)
			}
			if subnet != "" {
				q.Set("subnet", subnet)
			}
			var raw json.RawMessage
			if err := newClient(addr).do("GET", "/v1/explain?"+q.Encode(), nil, &raw); err != nil {
				return err
			}
			if asJSON {
				_, err := fmt.Fprintln(cmd.OutOrStdout(), string(raw))
				return err
			}
			var e engine.Explanation
			if err := json.Unmarshal(raw, &e); err != nil {
				return fmt.Errorf("GET /v1/explain: bad response: %w", err)
			}
			printExplanation(cmd.OutOrStdout(), e, "")
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&addr, "http", defaultHTTPAddr(), httpFlagHelp)
	f.StringVarP(&qtype, "type", "t", "A", "query type (A, AAAA, CNAME, ... or a number)")
	f.StringVar(&client, "client", "", "explain for a query from this source address (no ECS)")
	f.StringVar(&subnet, "subnet", "", "explain for a query with this EDNS Client Subnet (CIDR)")
	f.BoolVar(&asJSON, "json", false, "print the raw JSON of /v1/explain")
	cmd.MarkFlagsMutuallyExclusive("client", "subnet")
	return cmd
}

// printExplanation prints one explanation, and the explanations of the
// CNAME chain it follows, as indented text.
func printExplanation(out io.Writer, e engine.Explanation, indent string) {
	p := explainPrinter(out, indent)
	p("%s %s: %s", e.Name, e.Type, e.Rcode)
	if e.Zone == "" {
		p("  zone:     (none: not served here)")
	} else {
		p("  zone:     %s", e.Zone)
	}
	if e.Service != "" {
		p("  service:  %s", e.Service)
		p("  strategy: %s", e.Strategy)
	}
	if c := e.Client; c != nil {
		printExplainClient(p, c)
	}
	if e.Bucket != "" {
		p("  bucket:   %s", e.Bucket)
	}
	if st := e.Sticky; st != nil {
		network := st.Network
		if network == "" {
			network = "none (no client address given)"
		}
		p("  sticky:   subnet %s gets %s", network, strings.Join(stickyTargets(st.Answer), ", "))
	}
	if l := e.Latency; l != nil {
		printRTTTable(out, l, indent)
	}
	if e.FailOpen {
		p("  FAIL-OPEN: every endpoint is down")
	}
	if d := e.EDE; d != nil {
		p("  EDE:      %d (%s): %s (in replies to queries with EDNS)", d.Code, d.Name, d.Text)
	}
	if len(e.Candidates) > 0 {
		fmt.Fprintln(out)
		printCandidates(out, e, indent)
	}
	fmt.Fprintln(out)
	printExplainAnswer(p, e)
	for _, next := range e.Chain {
		fmt.Fprintln(out)
		p("  then, following the CNAME:")
		printExplanation(out, next, indent+"    ")
	}
}

// explainPrinter returns a printf that writes one indented line to out.
func explainPrinter(out io.Writer, indent string) func(format string, args ...any) {
	return func(format string, args ...any) { fmt.Fprintf(out, indent+format+"\n", args...) }
}

// printExplainClient prints who the client is and where it was located.
func printExplainClient(p func(format string, args ...any), c *engine.ExplainClient) {
	who := "none given"
	switch c.Source {
	case "ecs":
		who = fmt.Sprintf("%s/%d (ECS subnet)", c.Addr, c.Bits)
	case "client":
		who = c.Addr + " (source address)"
	}
	p("  client:   %s", who)
	switch {
	case c.Located:
		by := c.LocatedBy
		if by == "" {
			by = "locator"
		}
		where := fmt.Sprintf("located by %s: %s", by, explainPlace(c.Region, c.Country, c.Continent))
		if c.Network != "" {
			where += " (network " + c.Network + ")"
		}
		p("  location: %s", where)
	case c.Source != "none":
		p("  location: not located")
	}
	if c.Source == "ecs" && (c.UsedForAnswer || c.Scope > 0) {
		p("  scope:    /%d", c.Scope)
	}
}

// printCandidates prints the table of candidate endpoints; sticky answers
// get the extra SCORE and RANK columns.
func printCandidates(out io.Writer, e engine.Explanation, indent string) {
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	if e.Sticky != nil {
		fmt.Fprintln(tw, indent+"  TARGET\tCLUSTER\tWEIGHT\tSHARE\tSCORE\tRANK\tSTATE\tKEPT\tWHY\tNOTE")
	} else {
		fmt.Fprintln(tw, indent+"  TARGET\tCLUSTER\tWEIGHT\tSHARE\tSTATE\tKEPT\tWHY\tNOTE")
	}
	for _, c := range e.Candidates {
		share, state, kept, note := "-", c.State, "no", c.Note
		if c.Kept {
			kept = "yes"
			share = strings.TrimSuffix(fmt.Sprintf("%.1f", c.Share), ".0") + "%"
		}
		if c.Drained {
			state += ",drained"
		}
		if note == "" {
			note = "-"
		}
		weight := candidateWeight(c)
		if e.Sticky != nil {
			score, rank := "-", "-"
			if c.Rank > 0 {
				score, rank = fmt.Sprintf("%.1f", c.Score), fmt.Sprint(c.Rank)
			}
			fmt.Fprintf(tw, "%s  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", indent, c.Target, c.Cluster, weight, share, score, rank, state, kept, c.Why, note)
			continue
		}
		fmt.Fprintf(tw, "%s  %s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", indent, c.Target, c.Cluster, weight, share, state, kept, c.Why, note)
	}
	tw.Flush()
}

// candidateWeight is the WEIGHT cell of a candidate: the configured weight,
// and for capacity-aware services the ready fraction and effective weight.
func candidateWeight(c engine.ExplainCandidate) string {
	weight := strconv.Itoa(c.Weight)
	if c.Capacity != nil && c.EffectiveWeight != nil {
		// configured × ready fraction = effective (capacity-aware services)
		weight += fmt.Sprintf("×%d%%=%s", c.Capacity.Percent, strconv.FormatFloat(*c.EffectiveWeight, 'f', -1, 64))
	}
	return weight
}

// printExplainAnswer prints the answer and authority records and the notes.
func printExplainAnswer(p func(format string, args ...any), e engine.Explanation) {
	switch {
	case len(e.Answer) == 0:
		p("  answer: (empty)")
	case e.Sticky != nil:
		p("  answer (sticky: each network gets its highest-ranked %s of these):", pickCount(e.Picks, len(e.Answer)))
	case e.Picks > 0:
		p("  answer (each query gets %d of these, drawn by weight):", e.Picks)
	default:
		p("  answer:")
	}
	for _, a := range e.Answer {
		p("    %s", a)
	}
	for _, a := range e.Authority {
		p("  authority: %s", a)
	}
	if len(e.Notes) > 0 {
		p("  notes:")
		for _, n := range e.Notes {
			p("    - %s", n)
		}
	}
}

// stickyTargets are the targets of a sticky answer's records.
func stickyTargets(rrs []string) []string {
	out := make([]string, 0, len(rrs))
	for _, rr := range rrs {
		f := strings.Fields(rr)
		out = append(out, f[len(f)-1])
	}
	return out
}

func pickCount(picks, n int) string {
	if picks == 0 {
		picks = n
	}
	if picks == 1 {
		return "one"
	}
	return fmt.Sprint(picks)
}

func explainPlace(region, country, continent string) string {
	var parts []string
	for _, kv := range [][2]string{{"region", region}, {"country", country}, {"continent", continent}} {
		if kv[1] != "" {
			parts = append(parts, kv[0]+" "+kv[1])
		}
	}
	return strings.Join(parts, ", ")
}

// printRTTTable prints the RTT table behind a latency answer: one row per
// endpoint, one column per prober region, the RTT used and whether the
// endpoint is in tolerance.
func printRTTTable(out io.Writer, l *engine.ExplainLatency, indent string) {
	from := "region " + l.Region
	if l.Region == "" {
		from = "the median over the regions"
	}
	line := fmt.Sprintf("%s  rtt:      from %s (matched by %s); tolerance %s%%", indent, from, l.MatchedBy, ms(l.TolerancePercent))
	if l.BestMs > 0 {
		line += fmt.Sprintf("; best %s ms, bound %s ms", ms(l.BestMs), ms(l.BoundMs))
	}
	fmt.Fprintln(out, line)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	head := indent + "    TARGET\tCLUSTER\tRTT"
	for _, r := range l.Regions {
		head += "\t" + r
	}
	fmt.Fprintln(tw, head+"\tIN TOLERANCE")
	for _, r := range l.RTTs {
		row := fmt.Sprintf("%s    %s\t%s\t%s", indent, r.Target, r.Cluster, msOrDash(r.RTTMs, r.Measured))
		for _, reg := range l.Regions {
			v, ok := r.ByRegionMs[reg]
			row += "\t" + msOrDash(v, ok)
		}
		in := "no"
		if r.InTolerance {
			in = "yes"
		}
		fmt.Fprintln(tw, row+"\t"+in)
	}
	tw.Flush()
}

func ms(v float64) string {
	return strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.3f", v), "0"), ".")
}

func msOrDash(v float64, ok bool) string {
	if !ok {
		return "-"
	}
	return ms(v) + " ms"
}
