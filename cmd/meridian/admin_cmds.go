package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/meridian-gslb/meridian/internal/admin"
	"github.com/meridian-gslb/meridian/internal/model"
)

// adminFlags are the flags every admin command shares.
type adminFlags struct {
	addr, tokenFile, reason, expires string
}

func (f *adminFlags) add(cmd *cobra.Command, change bool) {
	cmd.Flags().StringVar(&f.addr, "http", defaultHTTPAddr(), httpFlagHelp)
	if change {
		cmd.Flags().StringVar(&f.tokenFile, "token-file", "", "file holding the admin bearer token (default: $MERIDIAN_ADMIN_TOKEN_FILE, then $MERIDIAN_ADMIN_TOKEN)")
	}
}

// client returns an API client carrying the bearer token.
func (f *adminFlags) client() (*apiClient, error) {
	return newClient(f.addr).withToken(f.tokenFile)
}

// target turns "cluster NAME" or "endpoint SERVICE TARGET" into a request.
func target(args []string) (admin.Request, error) {
	switch {
	case len(args) == 2 && args[0] == "cluster":
		return admin.Request{Cluster: args[1]}, nil
	case len(args) == 3 && args[0] == "endpoint":
		return admin.Request{Service: args[1], Endpoint: args[2]}, nil
	}
	return admin.Request{}, errors.New("give `cluster NAME` or `endpoint SERVICE ADDRESS|TARGET`")
}

// set creates an override and prints it.
func set(cmd *cobra.Command, f *adminFlags, req admin.Request) error {
	c, err := f.client()
	if err != nil {
		return err
	}
	req.Reason, req.ExpiresIn = f.reason, f.expires
	if force, err := cmd.Flags().GetBool("force"); err == nil { // only drain and force have --force
		req.Force = force
	}
	var o admin.Override
	if err := c.do("POST", "/v1/admin/overrides", req, &o); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s %s: %s (id %s)\n", o.Kind, o.Target(), o.Describe(), o.ID)
	return nil
}

// unset removes the overrides of a kind on a target.
func unset(cmd *cobra.Command, f *adminFlags, kinds []string, req admin.Request) error {
	c, err := f.client()
	if err != nil {
		return err
	}
	var ovs []admin.Override
	if err := c.do("GET", "/v1/admin/overrides", nil, &ovs); err != nil {
		return err
	}
	n := 0
	for _, o := range ovs {
		same := o.Cluster == req.Cluster && (req.Cluster != "" ||
			strings.TrimSuffix(o.Service, ".") == strings.TrimSuffix(req.Service, ".") && strings.TrimSuffix(o.Endpoint, ".") == strings.TrimSuffix(req.Endpoint, "."))
		if !same || !slices.Contains(kinds, o.Kind) {
			continue
		}
		if err := c.do("DELETE", "/v1/admin/overrides/"+o.ID, nil, nil); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "removed %s on %s (id %s, set by %s)\n", o.Kind, o.Target(), o.ID, o.Who)
		n++
	}
	if n == 0 {
		return fmt.Errorf("no %s override on that target", strings.Join(kinds, "/"))
	}
	return nil
}

// forceFlag adds --force to a command made by adminCommand.
func forceFlag(cmd *cobra.Command) {
	f := cmd.Flags()
	f.Bool("force", false, "do it even if a service would be left below min_healthy (recorded on the override)")
}

// adminCommands are the operator override commands: drain, force, weight,
// their removals, the override list and shift.
func adminCommands() []*cobra.Command {
	drain := adminCommand("drain (cluster NAME | endpoint SERVICE TARGET)", "Take a cluster or an endpoint out of the answers without deleting anything",
		runDrain, true, true)
	forceFlag(drain)
	undrain := adminCommand("undrain (cluster NAME | endpoint SERVICE TARGET)", "Remove a drain",
		runUndrain, true, false)
	force := adminCommand("force (up|down) (cluster NAME | endpoint SERVICE TARGET)", "Force a cluster or an endpoint up or down whatever the probes say",
		runForce, true, true)
	forceFlag(force)
	unforce := adminCommand("unforce (cluster NAME | endpoint SERVICE TARGET)", "Remove a force up/down",
		runUnforce, true, false)
	weight := adminCommand("weight SERVICE TARGET WEIGHT", "Override an endpoint's weight (0..1000)",
		runWeight, true, true)
	unweight := adminCommand("unweight SERVICE TARGET", "Remove a weight override",
		runUnweight, true, false)
	list := adminCommand("overrides", "List the operator overrides in force",
		listOverrides, false, false)
	return []*cobra.Command{drain, undrain, force, unforce, weight, unweight, list, shiftCommand()}
}

// adminCommand builds one admin command: change adds --token-file,
// needsReason adds (and requires) --reason and --for.
func adminCommand(use, short string, run func(cmd *cobra.Command, f *adminFlags, args []string) error, change, needsReason bool) *cobra.Command {
	f := &adminFlags{}
	cmd := &cobra.Command{Use: use, Short: short, RunE: func(cmd *cobra.Command, args []string) error {
		if needsReason && strings.TrimSpace(f.reason) == "" {
			return errors.New("--reason is required: say why (it is shown with the override)")
		}
		return run(cmd, f, args)
	}}
	f.add(cmd, change)
	if needsReason {
		cmd.Flags().StringVar(&f.reason, "reason", "", "why (required; shown on the status page and in explain)")
		cmd.Flags().StringVar(&f.expires, "for", "", "expire after this long, e.g. 30m (default: until removed)")
	}
	return cmd
}

// runDrain is `meridian drain`.
func runDrain(cmd *cobra.Command, f *adminFlags, args []string) error {
	req, err := target(args)
	if err != nil {
		return err
	}
	req.Kind = admin.KindDrain
	return set(cmd, f, req)
}

// runUndrain is `meridian undrain`.
func runUndrain(cmd *cobra.Command, f *adminFlags, args []string) error {
	req, err := target(args)
	if err != nil {
		return err
	}
	return unset(cmd, f, []string{admin.KindDrain}, req)
}

// runForce is `meridian force up|down`.
func runForce(cmd *cobra.Command, f *adminFlags, args []string) error {
	if len(args) < 1 || (args[0] != "up" && args[0] != "down") {
		return errors.New("first argument: up or down")
	}
	req, err := target(args[1:])
	if err != nil {
		return err
	}
	req.Kind = "force-" + args[0]
	return set(cmd, f, req)
}

// runUnforce is `meridian unforce`.
func runUnforce(cmd *cobra.Command, f *adminFlags, args []string) error {
	req, err := target(args)
	if err != nil {
		return err
	}
	return unset(cmd, f, []string{admin.KindForceUp, admin.KindForceDown}, req)
}

// runWeight is `meridian weight SERVICE TARGET WEIGHT`.
func runWeight(cmd *cobra.Command, f *adminFlags, args []string) error {
	if len(args) != 3 {
		return errors.New("give SERVICE TARGET WEIGHT")
	}
	w, err := strconv.Atoi(args[2])
	if err != nil {
		return fmt.Errorf("weight %q is not an integer (allowed: 0..%d)", args[2], model.MaxWeight)
	}
	if w < 0 || w > model.MaxWeight {
		return fmt.Errorf("weight %d is out of range (allowed: 0..%d)", w, model.MaxWeight)
	}
	return set(cmd, f, admin.Request{Kind: admin.KindWeight, Service: args[0], Endpoint: args[1], Weight: &w})
}

// runUnweight is `meridian unweight SERVICE TARGET`.
func runUnweight(cmd *cobra.Command, f *adminFlags, args []string) error {
	if len(args) != 2 {
		return errors.New("give SERVICE TARGET")
	}
	return unset(cmd, f, []string{admin.KindWeight}, admin.Request{Service: args[0], Endpoint: args[1]})
}

// listOverrides is `meridian overrides`: a table of the overrides in force.
func listOverrides(cmd *cobra.Command, f *adminFlags, _ []string) error {
	var ovs []admin.Override
	if err := newClient(f.addr).do("GET", "/v1/admin/overrides", nil, &ovs); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tKIND\tTARGET\tWHO\tREASON\tSINCE\tEXPIRES")
	for _, o := range ovs {
		exp := "-"
		if o.Expires != nil {
			exp = time.Until(*o.Expires).Round(time.Second).String()
		}
		kind := o.Kind
		if o.Forced != "" {
			kind += " (forced past " + strings.SplitN(o.Forced, ":", 2)[0] + ")"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.ID, kind, o.Target(), o.Who, o.Reason, o.At.Format(time.RFC3339), exp)
	}
	return tw.Flush()
}
