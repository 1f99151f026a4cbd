package cli

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/trovehq/trove"
	"github.com/trovehq/trove/httpapi"
)

func newVersionsCmd(e *env) *cobra.Command {
	c := &clientCmd{e: e}
	cmd := c.group("versions", "Read and redact memory versions",
		"Every write of a memory is an immutable version (memver_…); trove memories history lists them.")
	cmd.AddCommand(c.versionsGetCmd(), c.versionsRedactCmd())
	return cmd
}

func (c *clientCmd) versionsGetCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "get STORE VERSION",
		Short: "Show a version and its content",
		Args:  cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withStore(cmd, args[0], func(k *conn, st *trove.Store) error {
				v, err := getVersion(k, st, args[1])
				if err != nil {
					return err
				}
				return c.showVersion(v)
			})
		},
	}
}

func (c *clientCmd) versionsRedactCmd() *cobra.Command {
	var yes bool
	cmd := &cobra.Command{
		Use:   "redact STORE VERSION --yes",
		Short: "Erase a version's path and content for good, keeping who changed what and when (asks first)",
		Long: `redact erases the content, path, size and hash of a version; the record of
the operation, its actor and time stays. It cannot be undone: without a
terminal it needs --yes. The current version of a live memory cannot be
redacted: write or delete the memory first.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.withStore(cmd, args[0], func(k *conn, st *trove.Store) error {
				v, err := getVersion(k, st, args[1])
				if err != nil {
					return err
				}
				what := fmt.Sprintf("redacting version %s of %s erases its content for good", v.ID, orDash(deref(v.Path)))
				if err := confirm(c.e, cmd, yes, what); err != nil {
					return err
				}
				if v, err = k.svc.RedactVersion(k.ctx, st.ID, v.ID); err != nil {
					return err
				}
				if c.json() {
					return c.printJSON(httpapi.WireVersion(v))
				}
				fmt.Fprintf(c.e.stdout, "redacted %s\n", v.ID)
				return nil
			})
		},
	}
	cmd.Flags().BoolVarP(&yes, "yes", "y", false, "confirm the redaction (needed without a terminal)")
	return cmd
}

// deref is *s, or "" for nil.
func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// showVersion prints a version's fields and then its content, or its JSON.
func (c *clientCmd) showVersion(v *trove.MemoryVersion) error {
	if c.json() {
		return c.printJSON(httpapi.WireVersion(v))
	}
	path, size, sha := "-", "-", "-"
	if v.Path != nil {
		path = *v.Path
	}
	if v.SizeBytes != nil {
		size = sizeText(*v.SizeBytes)
	}
	if v.SHA256 != nil {
		sha = *v.SHA256
	}
	if err := c.fields("id", v.ID, "memory", v.MemoryID, "operation", string(v.Operation), "path", path,
		"size", size, "sha256", sha, "by", actorText(v.CreatedBy), "created", fmtTime(v.CreatedAt),
		"redacted", fmtTimePtr(v.RedactedAt)); err != nil {
		return err
	}
	if v.Content != nil {
		fmt.Fprintln(c.e.stdout)
		_, err := io.WriteString(c.e.stdout, *v.Content)
		return err
	}
	return nil
}
