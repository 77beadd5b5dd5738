package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/cmdutil"
	"github.com/orchestrator-zero/oz0/cmd/oz0/internal/iostreams"
	"github.com/orchestrator-zero/oz0/internal/atomicfile"
	"github.com/orchestrator-zero/oz0/schemas"
)

type schemaOptions struct {
	IO  *iostreams.IOStreams
	Ref string // the git ref this build's schemas are served at
	cmdutil.JSONFlags

	Name     string // a schema file name; "" is every schema
	WriteDir string // a directory to write into
}

// schemaJSON is a schema as `oz0 schema --json` lists it.
type schemaJSON struct {
	Name  string `json:"name"`
	Title string `json:"title"`
	URL   string `json:"url"`
}

func newCmdSchema(f *cmdutil.Factory, runF func(*schemaOptions) error) *cobra.Command {
	opts := &schemaOptions{IO: f.IOStreams, Ref: f.Build.Ref}
	cmd := &cobra.Command{
		Use:   "schema [NAME] [--write DIR]",
		Short: "Print or write the JSON Schemas of the files oz0 reads, for editors and CI",
		Long: `Without NAME, list the JSON Schemas embedded in oz0 with the URL each is served at; with NAME
(agent, or agent.schema.json), print that schema. --write DIR writes them (or NAME) into DIR
instead, for an editor or a validator that works offline.

The URLs are the repository's files at this build's ref: a release's tag, so they serve exactly
the schemas this oz0 checks against (a build that is not a release says main). The
yaml-language-server lines oz0 plugin new writes point at the same URLs, and each schema's $id
is its URL.`,
		Example: `  oz0 schema
  oz0 schema agent > agent.schema.json
  oz0 schema --write .schemas
  oz0 schema --jq '.[].url'`,
		Args: argsBetween(0, 1, "at most one schema NAME"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				name, ok := schemas.Lookup(args[0])
				if !ok {
					return cmdutil.Usagef("no schema %s; oz0 schema lists them: %s", cmdutil.Quote(args[0]), strings.Join(schemaShortNames(), ", "))
				}
				opts.Name = name
			}
			if opts.Enabled() && (opts.Name != "" || opts.WriteDir != "") {
				return cmdutil.Usagef("--json, --jq and --template list the schemas; give no NAME or --write with them")
			}
			if err := opts.Check(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return schemaRun(opts)
		},
		ValidArgsFunction: func(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var out []cobra.Completion
			for _, n := range schemas.Names() {
				out = append(out, cobra.CompletionWithDesc(strings.TrimSuffix(n, ".schema.json"), schemas.Title(n)))
			}
			return out, cobra.ShellCompDirectiveNoFileComp
		},
	}
	cmd.Flags().StringVarP(&opts.WriteDir, "write", "w", "", "write the schema files into this directory (made if missing)")
	_ = cmd.MarkFlagDirname("write")
	cmdutil.AddJSONFlags(cmd, &opts.JSONFlags, "the list of schemas")
	return cmd
}

// schemaShortNames are the schemas' names without .schema.json, as NAME takes them.
func schemaShortNames() []string {
	var names []string
	for _, n := range schemas.Names() {
		names = append(names, strings.TrimSuffix(n, ".schema.json"))
	}
	return names
}

func schemaRun(opts *schemaOptions) error {
	names := schemas.Names()
	if opts.Name != "" {
		names = []string{opts.Name}
	}
	switch {
	case opts.WriteDir != "":
		return writeSchemas(opts, names)
	case opts.Name != "":
		data, err := schemas.Export(opts.Name, opts.Ref)
		if err != nil {
			return err
		}
		_, err = opts.IO.Out.Write(data)
		return err
	}
	var list []schemaJSON
	for _, n := range names {
		list = append(list, schemaJSON{Name: n, Title: schemas.Title(n), URL: schemas.URLAt(opts.Ref, n)})
	}
	if opts.Enabled() {
		return opts.Write(opts.IO, list)
	}
	t := newTable(opts.IO, "SCHEMA", "TITLE", "URL")
	for _, s := range list {
		t.row(s.Name, s.Title, s.URL)
	}
	return t.Render()
}

// writeSchemas writes each schema into opts.WriteDir through a temporary file renamed into place,
// so that a file is never left half-written.
func writeSchemas(opts *schemaOptions, names []string) error {
	dir := opts.WriteDir
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return cmdutil.Usagef("--write %s: it is a file; give a directory", dir)
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot use %s: %w", dir, err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("cannot create %s: %w", dir, err)
	}
	for _, n := range names {
		data, err := schemas.Export(n, opts.Ref)
		if err != nil {
			return err
		}
		if err := writeFileAtomic(filepath.Join(dir, n), data); err != nil {
			return err
		}
	}
	what := fmt.Sprintf("%d schemas", len(names))
	if len(names) == 1 {
		what = names[0]
	}
	fmt.Fprintf(opts.IO.ErrOut, "oz0: wrote %s to %s\n", what, dir)
	return nil
}

func writeFileAtomic(path string, data []byte) error {
	if err := atomicfile.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("cannot write %s: %w", path, err)
	}
	return nil
}
