package main

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/api/apiv1"
	"github.com/orchestrator-zero/oz0/api/client"
	"github.com/orchestrator-zero/oz0/api/discovery"
	"github.com/orchestrator-zero/oz0/api/tenantfile"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
)

func newCmdTenant(f *cmdutil.Factory) *cobra.Command {
	return groupCmd("tenant <command>", "The tenant's quotas, usage and kill switches on the dev server",
		`The tenant's quotas cap what all of its jobs' model calls use together, of every model record or
of one: tokens and cost a rolling day and a calendar month, requests and tokens a minute. The
gateway refuses a call past one as the provider would (a 429 naming the quota and when it
resets). The kill switch stops every model call of the tenant, or of one record, at once, and
refuses new ones until resumed.`,
		`  oz0 tenant quota set tokens_per_day 2000000
  oz0 tenant quota set requests_per_minute 50 --record anthropic
  oz0 tenant usage --by agent
  oz0 tenant kill --record openai      # a key leaked: stop its calls now
  oz0 tenant resume --record openai`,
		newCmdTenantQuota(f), newCmdTenantUsage(f, nil), newCmdTenantKill(f, nil, true), newCmdTenantKill(f, nil, false))
}

func newCmdTenantQuota(f *cmdutil.Factory) *cobra.Command {
	return groupCmd("quota <command>", "Set, list and remove the tenant's quotas",
		`The quotas are kept in tenant.json in oz0 dev's state directory. With oz0 dev running they are
set through it and hold at once; with none running, the file is written and oz0 dev reads it at
its start. Names: `+strings.Join(apiv1.QuotaNames, ", ")+`.`,
		`  oz0 tenant quota set cost_usd_per_month 50
  oz0 tenant quota set tokens_per_minute 40000 --record anthropic
  oz0 tenant quota list
  oz0 tenant quota rm cost_usd_per_month`,
		newCmdTenantQuotaSet(f, nil), newCmdTenantQuotaList(f, nil), newCmdTenantQuotaRm(f, nil))
}

// quotaTarget is where a quota command works: the running oz0 dev, else the tenant file of a
// state directory.
type quotaTarget struct {
	clientOptions
	Record   string
	StateDir string
	Getwd    func() (string, error)
}

func newQuotaTarget(f *cmdutil.Factory) quotaTarget {
	return quotaTarget{clientOptions: newClientOptions(f), Getwd: f.Getwd}
}

func (o *quotaTarget) flags(cmd *cobra.Command, record bool) {
	if record {
		cmd.Flags().StringVar(&o.Record, "record", "", "the quota of one model record (anthropic, openai, fake, …) rather than of the whole tenant")
	}
	cmd.Flags().StringVar(&o.StateDir, "state-dir", "", "write the tenant file of this state directory, whether oz0 dev runs or not (default: the running oz0 dev, else .oz0/dev of the plugin)")
	_ = cmd.MarkFlagDirname("state-dir")
}

// resolve returns the running oz0 dev's client, or, when none runs (or --state-dir is given),
// the state directory whose file to work on.
func (o *quotaTarget) resolve() (*client.Client, string, error) {
	if o.StateDir != "" {
		return nil, o.StateDir, nil
	}
	c, err := o.Client()
	var stale *discovery.StaleError
	switch {
	case err == nil:
		return c, "", nil
	case errors.Is(err, client.ErrNoServer), errors.As(err, &stale):
	default:
		return nil, "", err
	}
	dir := "."
	if o.Getwd != nil {
		if wd, err := o.Getwd(); err == nil {
			dir = wd
		}
	}
	root, ok := discovery.PluginRoot(dir)
	if !ok {
		return nil, "", cmdutil.Usagef("no oz0 dev runs and this folder is in no plugin, so there is no state directory to keep the quotas in; run this in the plugin, or give --state-dir DIR")
	}
	return nil, discovery.StateDir(root), nil
}

type tenantQuotaSetOptions struct {
	quotaTarget
	Quota apiv1.Quota
}

func newCmdTenantQuotaSet(f *cmdutil.Factory, runF func(*tenantQuotaSetOptions) error) *cobra.Command {
	opts := &tenantQuotaSetOptions{quotaTarget: newQuotaTarget(f)}
	cmd := &cobra.Command{
		Use:   "set NAME LIMIT",
		Short: "Set a quota of the tenant, or of one model record with --record",
		Long: `Set a quota, in place of the one of the same name (and record). NAME is one of
` + strings.Join(apiv1.QuotaNames, ", ") + `. LIMIT is a whole number of
tokens or requests, or US dollars for cost_usd_* (5, 0.25 or $5).`,
		Example: `  oz0 tenant quota set tokens_per_day 2000000
  oz0 tenant quota set requests_per_minute 50 --record anthropic
  oz0 tenant quota set cost_usd_per_month '$20'`,
		Args: argsBetween(2, 2, "a quota's NAME and its LIMIT"),
		RunE: func(cmd *cobra.Command, args []string) error {
			q, err := parseQuota(opts.Record, args[0], args[1])
			if err != nil {
				return err
			}
			opts.Quota = q
			if runF != nil {
				return runF(opts)
			}
			return tenantQuotaSetRun(cmd.Context(), opts)
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) == 0 {
				return apiv1.QuotaNames, cobra.ShellCompDirectiveNoFileComp
			}
			return nil, cobra.ShellCompDirectiveNoFileComp
		},
	}
	opts.flags(cmd, true)
	return cmd
}

// parseQuota reads a quota's NAME and LIMIT as the user gave them; what is wrong is one line.
func parseQuota(record, name, limit string) (apiv1.Quota, error) {
	if !slices.Contains(apiv1.QuotaNames, name) {
		return apiv1.Quota{}, cmdutil.Usagef("%s is not a quota; use one of %s", cmdutil.Quote(name), strings.Join(apiv1.QuotaNames, ", "))
	}
	s := strings.ReplaceAll(strings.TrimPrefix(strings.TrimSpace(limit), "$"), "_", "")
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return apiv1.Quota{}, cmdutil.Usagef("the limit %s is not a number; give one like 2000000 (tokens, requests) or 5 (US dollars)", cmdutil.Quote(limit))
	}
	if err := checkRecordFlag(record); err != nil {
		return apiv1.Quota{}, err
	}
	q := apiv1.Quota{Record: record, Name: name, Limit: v}
	if err := q.Check(); err != nil {
		return apiv1.Quota{}, cmdutil.Usagef("%s", err)
	}
	return q, nil
}

// checkRecordFlag refuses a --record that cannot be a model record's name.
func checkRecordFlag(record string) error {
	if record != "" && !apiv1.ValidRecordName(record) {
		return cmdutil.Usagef("--record %s is not a model record's name; use lowercase letters, digits, - and _, like anthropic", cmdutil.Quote(record))
	}
	return nil
}

func tenantQuotaSetRun(ctx context.Context, opts *tenantQuotaSetOptions) error {
	c, dir, err := opts.resolve()
	if err != nil {
		return err
	}
	q := opts.Quota
	if c != nil {
		if _, err := c.SetQuota(ctx, q); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.ErrOut, "oz0: quota %s set to %s; it holds now\n", q.Label(), quotaLimit(q))
		return nil
	}
	if _, err := tenantfile.Update(dir, func(cfg *tenantfile.Config) error {
		if err := cfg.Set(q); err != nil {
			return cmdutil.Usagef("%s", err)
		}
		return nil
	}); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "oz0: quota %s set to %s in %s; oz0 dev holds to it from its start\n", q.Label(), quotaLimit(q), tenantfile.Path(dir))
	return nil
}

type tenantQuotaListOptions struct {
	quotaTarget
	cmdutil.JSONFlags
}

func newCmdTenantQuotaList(f *cmdutil.Factory, runF func(*tenantQuotaListOptions) error) *cobra.Command {
	opts := &tenantQuotaListOptions{quotaTarget: newQuotaTarget(f)}
	cmd := &cobra.Command{
		Use:     "list",
		Short:   "List the tenant's quotas, with what is used of each when oz0 dev runs",
		Example: "  oz0 tenant quota list\n  oz0 tenant quota list --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := opts.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return tenantQuotaListRun(cmd.Context(), opts)
		},
	}
	opts.flags(cmd, false)
	cmdutil.AddJSONFlags(cmd, &opts.JSONFlags, "the quotas")
	return cmd
}

func tenantQuotaListRun(ctx context.Context, opts *tenantQuotaListOptions) error {
	c, dir, err := opts.resolve()
	if err != nil {
		return err
	}
	var use []apiv1.QuotaUse
	running := c != nil
	if running {
		t, err := c.Tenant(ctx)
		if err != nil {
			return err
		}
		use = t.Quotas
	} else {
		cfg, err := tenantfile.Load(dir)
		if err != nil {
			return err
		}
		for _, q := range cfg.Quotas {
			use = append(use, apiv1.QuotaUse{Quota: q})
		}
	}
	if use == nil {
		use = []apiv1.QuotaUse{}
	}
	if opts.Enabled() {
		return opts.Write(opts.IO, use)
	}
	if len(use) == 0 {
		fmt.Fprintln(opts.IO.ErrOut, "no quotas; set one with: oz0 tenant quota set NAME LIMIT")
		return nil
	}
	return quotaTable(opts.clientOptions, use, running)
}

// quotaTable prints quotas with their use (when known: oz0 dev runs).
func quotaTable(opts clientOptions, use []apiv1.QuotaUse, known bool) error {
	t := newTable(opts.IO, "QUOTA", "LIMIT", "USED", "IN FLIGHT", "RESETS")
	for _, u := range use {
		used, flight, resets := "", "", ""
		if known {
			used, flight = quotaAmount(u.Quota, u.Used), quotaAmount(u.Quota, u.InFlight)
			if u.InFlight == 0 {
				flight = ""
			}
			if !u.Resets.IsZero() {
				resets = u.Resets.UTC().Format(time.RFC3339)
			}
		}
		t.row(u.Label(), quotaLimit(u.Quota), used, flight, resets)
	}
	return t.Render()
}

func quotaLimit(q apiv1.Quota) string { return quotaAmount(q, q.Limit) }

func quotaAmount(q apiv1.Quota, v float64) string {
	if q.Whole() {
		return strconv.FormatFloat(math.Ceil(v), 'f', 0, 64)
	}
	return "$" + strconv.FormatFloat(v, 'f', -1, 64)
}

type tenantQuotaRmOptions struct {
	quotaTarget
	Name string
}

func newCmdTenantQuotaRm(f *cmdutil.Factory, runF func(*tenantQuotaRmOptions) error) *cobra.Command {
	opts := &tenantQuotaRmOptions{quotaTarget: newQuotaTarget(f)}
	cmd := &cobra.Command{
		Use:     "rm NAME",
		Short:   "Remove a quota of the tenant, or of one model record with --record",
		Example: "  oz0 tenant quota rm tokens_per_day\n  oz0 tenant quota rm requests_per_minute --record anthropic",
		Args:    argsBetween(1, 1, "a quota's NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			// Checked as a quota of limit 1: its name and record.
			if _, err := parseQuota(opts.Record, args[0], "1"); err != nil {
				return err
			}
			opts.Name = args[0]
			if runF != nil {
				return runF(opts)
			}
			return tenantQuotaRmRun(cmd.Context(), opts)
		},
	}
	opts.flags(cmd, true)
	return cmd
}

func tenantQuotaRmRun(ctx context.Context, opts *tenantQuotaRmOptions) error {
	c, dir, err := opts.resolve()
	if err != nil {
		return err
	}
	label := apiv1.Quota{Record: opts.Record, Name: opts.Name}.Label()
	if c != nil {
		if _, err := c.RemoveQuota(ctx, opts.Record, opts.Name); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.ErrOut, "oz0: quota %s removed\n", label)
		return nil
	}
	if _, err := os.Stat(tenantfile.Path(dir)); errors.Is(err, os.ErrNotExist) {
		return cmdutil.Usagef("the tenant has no quota %s (%s has no %s); oz0 tenant quota list shows them", label, dir, filepath.Base(tenantfile.Path(dir)))
	}
	_, err = tenantfile.Update(dir, func(cfg *tenantfile.Config) error {
		if !cfg.Remove(opts.Record, opts.Name) {
			return cmdutil.Usagef("the tenant has no quota %s; oz0 tenant quota list shows them", label)
		}
		return nil
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "oz0: quota %s removed from %s\n", label, tenantfile.Path(dir))
	return nil
}

type tenantUsageOptions struct {
	clientOptions
	cmdutil.JSONFlags
	By string
}

func newCmdTenantUsage(f *cmdutil.Factory, runF func(*tenantUsageOptions) error) *cobra.Command {
	opts := &tenantUsageOptions{clientOptions: newClientOptions(f)}
	cmd := &cobra.Command{
		Use:   "usage",
		Short: "Show the month's model calls by record, agent or day, and each quota's use",
		Long: `Show the calendar month's (UTC) model calls of every job, summed by model record (--by record,
the default), agent or day, then each quota with what is used of it.`,
		Example: "  oz0 tenant usage\n  oz0 tenant usage --by day --json",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if !slices.Contains(apiv1.TenantUsageBy, opts.By) {
				return cmdutil.Usagef("--by %s is not a way to sum the usage; use one of %s", cmdutil.Quote(opts.By), strings.Join(apiv1.TenantUsageBy, ", "))
			}
			if err := opts.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return tenantUsageRun(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.By, "by", "record", "sum by "+strings.Join(apiv1.TenantUsageBy, ", "))
	_ = cmd.RegisterFlagCompletionFunc("by", cobra.FixedCompletions(apiv1.TenantUsageBy, cobra.ShellCompDirectiveNoFileComp))
	cmdutil.AddJSONFlags(cmd, &opts.JSONFlags, "the usage and the quotas")
	return cmd
}

func tenantUsageRun(ctx context.Context, opts *tenantUsageOptions) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	u, err := c.TenantUsage(ctx, opts.By)
	if err != nil {
		return err
	}
	if opts.Enabled() {
		return opts.Write(opts.IO, u)
	}
	t := newTable(opts.IO, strings.ToUpper(opts.By), "CALLS", "INPUT", "OUTPUT", "CACHE READ", "CACHE WRITE", "COST")
	for _, r := range u.Rows {
		t.row(r.Key, strconv.FormatInt(r.ModelCalls, 10), strconv.FormatInt(r.InputTokens, 10), strconv.FormatInt(r.OutputTokens, 10),
			strconv.FormatInt(r.CacheReadTokens, 10), strconv.FormatInt(r.CacheCreationTokens, 10), "$"+strconv.FormatFloat(r.CostUSD, 'f', -1, 64))
	}
	if len(u.Rows) == 0 {
		fmt.Fprintf(opts.IO.ErrOut, "no model calls since %s\n", u.Since.Format(time.DateOnly))
	} else if err := t.Render(); err != nil {
		return err
	}
	if len(u.Quotas) > 0 {
		fmt.Fprintln(opts.IO.Out)
		return quotaTable(opts.clientOptions, u.Quotas, true)
	}
	return nil
}

type tenantKillOptions struct {
	clientOptions
	Record string
}

// newCmdTenantKill is oz0 tenant kill, or with kill false oz0 tenant resume.
func newCmdTenantKill(f *cmdutil.Factory, runF func(*tenantKillOptions) error, kill bool) *cobra.Command {
	opts := &tenantKillOptions{clientOptions: newClientOptions(f)}
	cmd := &cobra.Command{
		Use:   "kill",
		Short: "Stop every model call of the tenant, or of one record, at once, and refuse new ones",
		Long: `Stop every model call of the tenant (or of one model record with --record) at once: streams in
flight end with an error in the provider's shape, and every later call is refused, until oz0
tenant resume. It is kept in oz0 dev's state: a restart does not resume.`,
		Example: "  oz0 tenant kill\n  oz0 tenant kill --record anthropic",
		Args:    noArgs,
	}
	if !kill {
		cmd.Use, cmd.Short, cmd.Long = "resume", "Let the model calls through again after oz0 tenant kill", ""
		cmd.Example = "  oz0 tenant resume\n  oz0 tenant resume --record anthropic"
	}
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if err := checkRecordFlag(opts.Record); err != nil {
			return err
		}
		if runF != nil {
			return runF(opts)
		}
		return tenantKillRun(cmd.Context(), opts, kill)
	}
	cmd.Flags().StringVar(&opts.Record, "record", "", "only the calls of this model record (anthropic, openai, fake, …)")
	return cmd
}

func tenantKillRun(ctx context.Context, opts *tenantKillOptions, kill bool) error {
	c, err := opts.Client()
	if err != nil {
		return err
	}
	whose, flag := "the tenant", ""
	if opts.Record != "" {
		whose, flag = "record "+opts.Record, " --record "+opts.Record
	}
	if !kill {
		a, err := c.ResumeTenant(ctx, opts.Record)
		if err != nil {
			return err
		}
		if !a.Changed {
			fmt.Fprintf(opts.IO.ErrOut, "oz0: the model calls of %s were not stopped; nothing to resume\n", whose)
			return nil
		}
		fmt.Fprintf(opts.IO.ErrOut, "oz0: the model calls of %s go through again\n", whose)
		return nil
	}
	a, err := c.KillTenant(ctx, opts.Record)
	if err != nil {
		return err
	}
	already := ""
	if !a.Changed {
		already = ", as since " + a.Kill.At.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(opts.IO.ErrOut, "oz0: every model call of %s is stopped%s (%s in flight ended); oz0 tenant resume%s lets them through\n",
		whose, already, callsCount(a.Stopped), flag)
	return nil
}

func callsCount(n int) string {
	if n == 1 {
		return "1 call"
	}
	return strconv.Itoa(n) + " calls"
}
