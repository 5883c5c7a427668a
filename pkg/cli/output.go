package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/yaml"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

// Output formats of -o/--output.
const (
	outputTable = "table"
	outputYAML  = "yaml"
	outputJSON  = "json"
)

// addOutputFlag registers -o/--output on cmd with default def; its help
// and shell completion offer allowed.
func addOutputFlag(cmd *cobra.Command, p *string, def string, allowed ...string) {
	cmd.Flags().StringVarP(p, "output", "o", def, "output format: "+strings.Join(allowed, ", "))
	_ = cmd.RegisterFlagCompletionFunc("output", cobra.FixedCompletions(allowed, cobra.ShellCompDirectiveNoFileComp))
}

// checkOutput returns a *UserError unless format is one of allowed.
func checkOutput(format string, allowed ...string) error {
	for _, a := range allowed {
		if format == a {
			return nil
		}
	}
	return userErrorf("--output must be one of %s, not %q", strings.Join(allowed, ", "), format)
}

// printStructured writes v as YAML or as indented JSON, ending with a
// newline. format must be outputYAML or outputJSON.
func printStructured(w io.Writer, v any, format string) error {
	var b []byte
	var err error
	if format == outputJSON {
		b, err = json.MarshalIndent(v, "", "  ")
		b = append(b, '\n')
	} else {
		b, err = yaml.Marshal(v)
	}
	if err != nil {
		return fmt.Errorf("encoding the output as %s: %w", format, err)
	}
	_, err = w.Write(b)
	return err
}

// table aligns tab-separated cells into columns two spaces apart, like
// every table of the CLI, and drops the spaces that padding leaves at the
// end of lines. Write rows to it, then call Flush.
type table struct {
	out io.Writer
	buf bytes.Buffer
	tw  *tabwriter.Writer
}

// newTable returns a table writing to w on Flush.
func newTable(w io.Writer) *table {
	t := &table{out: w}
	t.tw = tabwriter.NewWriter(&t.buf, 0, 4, 2, ' ', 0)
	return t
}

// Write adds cells; "\t" ends a cell, "\n" a row.
func (t *table) Write(p []byte) (int, error) { return t.tw.Write(p) }

// Flush aligns what was written and writes it to the output.
func (t *table) Flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	lines := strings.SplitAfter(t.buf.String(), "\n")
	t.buf.Reset()
	var b strings.Builder
	for _, l := range lines {
		nl := strings.HasSuffix(l, "\n")
		b.WriteString(strings.TrimRight(l, " \n"))
		if nl {
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(t.out, b.String())
	return err
}

// humanAge is the kubectl-style age of t at now ("5m", "3h12m", "2d"), or
// "-" for a zero time.
func humanAge(t metav1.Time, now time.Time) string {
	if t.IsZero() {
		return "-"
	}
	return duration.HumanDuration(now.Sub(t.Time))
}

// humanSpan is a short duration for step timings: "850ms", "12s",
// "3m4s", "2h5m".
func humanSpan(d time.Duration) string {
	switch {
	case d < 0:
		return "0s"
	case d < time.Second:
		return d.Round(time.Millisecond).String()
	case d < time.Minute:
		return d.Round(time.Second).String()
	case d < time.Hour:
		d = d.Round(time.Second)
		return fmt.Sprintf("%dm%ds", int(d.Minutes()), int(d.Seconds())%60)
	default:
		d = d.Round(time.Minute)
		return fmt.Sprintf("%dh%dm", int(d.Hours()), int(d.Minutes())%60)
	}
}

// clusterLabel names a cluster for display: the hub ("" or "local") is
// "local".
func clusterLabel(cluster string) string {
	if cluster == "" {
		return v1beta1.ClusterLocal
	}
	return cluster
}

// clip shortens s (already on one line) to at most n runes, ending with
// "…" when cut; n <= 0 keeps s whole.
func clip(s string, n int) string {
	if n <= 0 || utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

// orDash is s, or "-" when s is empty (so table cells are never blank).
func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// yesNo renders a health flag.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
