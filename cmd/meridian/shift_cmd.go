package main

import (
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/api"
	"github.com/meridian-gslb/meridian/internal/shift"
)

// shiftCommand is `meridian shift SERVICE --to CLUSTER …` with its
// status, pause, resume and abort subcommands.
func shiftCommand() *cobra.Command {
	f := &adminFlags{}
	var to, steps, every, abortIf string
	var maxFailures int
	cmd := &cobra.Command{
		Use:   "shift SERVICE --to CLUSTER [--steps 1,5,25,50,100] [--every 5m] [--abort-if PROMQL] [--max-failures N]",
		Short: "Move a service's traffic to a cluster step by step, rolling back on a breach",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(f.reason) == "" {
				return errors.New("--reason is required: say why (it is shown with the shift)")
			}
			st, err := shift.ParseSteps(steps)
			if err != nil {
				return err
			}
			req := admin.Request{Kind: admin.KindShift, Service: args[0], To: to, Steps: st, Every: every, AbortIf: abortIf}
			if cmd.Flags().Changed("max-failures") {
				req.MaxFailures = &maxFailures
			}
			return set(cmd, f, req)
		},
	}
	f.add(cmd, true)
	cmd.Flags().StringVar(&to, "to", "", "the cluster that receives the traffic (required)")
	cmd.Flags().StringVar(&steps, "steps", shift.FormatSteps(shift.DefaultSteps), "percentages of the traffic sent to the target, strictly increasing, ending at 100")
	cmd.Flags().StringVar(&every, "every", admin.DefaultShiftEvery.String(), "how long each step must hold healthy before the next (1s..24h)")
	cmd.Flags().StringVar(&abortIf, "abort-if", "", "PromQL instant query against shift.prometheus_url: a non-empty, non-zero result rolls back")
	cmd.Flags().IntVar(&maxFailures, "max-failures", 0, "guard query errors tolerated in a row; the next one rolls back")
	cmd.Flags().StringVar(&f.reason, "reason", "", "why (required; shown on the status page and in explain)")
	cmd.Flags().StringVar(&f.expires, "for", "", "remove the shift after this long, e.g. 24h (default: until aborted)")

	status, _ := shiftSubcommand("status SERVICE", "Where a service's shift stands: step, share, last rollback", false, showShift)
	pause, pf := shiftSubcommand("pause SERVICE", "Pause a service's shift where it stands", true, operateShift("pause"))
	pause.Flags().StringVar(&pf.reason, "reason", "", "why (recorded with the pause)")
	resume, _ := shiftSubcommand("resume SERVICE", "Resume a paused (or rolled-back) shift", true, operateShift("resume"))
	abort, _ := shiftSubcommand("abort SERVICE", "End a service's shift: its traffic goes back to the configured weights", true, abortShift)
	cmd.AddCommand(status, pause, resume, abort)
	return cmd
}

// shiftAction is what a shift subcommand does for one service.
type shiftAction func(cmd *cobra.Command, f *adminFlags, service string) error

// shiftSubcommand builds a shift subcommand that takes one SERVICE argument
// and the admin flags (the changing ones when change is set).
func shiftSubcommand(use, short string, change bool, run shiftAction) (*cobra.Command, *adminFlags) {
	sf := &adminFlags{}
	c := &cobra.Command{Use: use, Short: short, Args: cobra.ExactArgs(1), RunE: func(cmd *cobra.Command, args []string) error {
		return run(cmd, sf, args[0])
	}}
	sf.add(c, change)
	return c, sf
}

// findShift returns the shift override in force for service.
func findShift(f *adminFlags, service string) (admin.Override, error) {
	var ovs []admin.Override
	if err := newClient(f.addr).do("GET", "/v1/admin/overrides", nil, &ovs); err != nil {
		return admin.Override{}, err
	}
	want := strings.TrimSuffix(service, ".")
	for _, o := range ovs {
		if o.Kind == admin.KindShift && strings.TrimSuffix(o.Service, ".") == want && o.Shift != nil {
			return o, nil
		}
	}
	return admin.Override{}, fmt.Errorf("no shift in force for %s", want)
}

// showShift is `meridian shift status SERVICE`.
func showShift(cmd *cobra.Command, f *adminFlags, service string) error {
	o, err := findShift(f, service)
	if err != nil {
		return err
	}
	printShift(cmd.OutOrStdout(), o)
	return nil
}

// operateShift returns the action that POSTs action (pause, resume) to a
// service's shift and prints the shift it gets back.
func operateShift(action string) shiftAction {
	return func(cmd *cobra.Command, f *adminFlags, service string) error {
		c, err := f.client()
		if err != nil {
			return err
		}
		var o admin.Override
		if err := c.do("POST", "/v1/admin/shifts/"+url.PathEscape(strings.TrimSuffix(service, "."))+"/"+action, api.ShiftRequest{Reason: f.reason}, &o); err != nil {
			return err
		}
		printShift(cmd.OutOrStdout(), o)
		return nil
	}
}

// abortShift is `meridian shift abort SERVICE`: it deletes the shift override.
func abortShift(cmd *cobra.Command, f *adminFlags, service string) error {
	o, err := findShift(f, service)
	if err != nil {
		return err
	}
	c, err := f.client()
	if err != nil {
		return err
	}
	if err := c.do("DELETE", "/v1/admin/overrides/"+o.ID, nil, nil); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "aborted the shift of %s to %s at %d%% (id %s); the configured weights apply again\n",
		strings.TrimSuffix(o.Service, "."), o.Shift.Spec.To, o.Shift.Percent(), o.ID)
	return nil
}

// printShift prints where a shift stands.
func printShift(w io.Writer, o admin.Override) {
	if o.Shift == nil {
		fmt.Fprintf(w, "%s %s: %s (id %s)\n", o.Kind, o.Target(), o.Describe(), o.ID)
		return
	}
	s, p := o.Shift.Spec, o.Shift.Progress
	state := "advancing"
	switch {
	case p.Done:
		state = "complete"
	case p.Paused:
		state = "paused"
	}
	fmt.Fprintf(w, "shift of %s to %s (id %s, by %s: %s)\n", strings.TrimSuffix(o.Service, "."), s.To, o.ID, o.Who, o.Reason)
	fmt.Fprintf(w, "  now:       %d%% (%s)\n", o.Shift.Percent(), state)
	fmt.Fprintf(w, "  steps:     %s every %s", shift.FormatSteps(s.Steps), s.Every)
	if p.Step >= 0 {
		fmt.Fprintf(w, " (step %d of %d since %s)", p.Step+1, len(s.Steps), p.Since.UTC().Format(time.RFC3339))
	}
	fmt.Fprintln(w)
	if s.AbortIf != "" {
		fmt.Fprintf(w, "  abort if:  %s (max failures %d)\n", s.AbortIf, s.MaxFailures)
	}
	if p.Rollbacks > 0 || p.Reason != "" {
		fmt.Fprintf(w, "  rollbacks: %d; %s\n", p.Rollbacks, p.Reason)
	}
}
