// Command clidoc prints the oamflow CLI reference as Markdown, generated from
// the cobra command tree, and with -readme FILE replaces the part of FILE
// between the markers "<!-- cli-reference:start -->" and
// "<!-- cli-reference:end -->" with it. `make docs` runs it on README.md.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/oamflow/oamflow/pkg/cli"
)

const (
	startMarker = "<!-- cli-reference:start -->"
	endMarker   = "<!-- cli-reference:end -->"
)

func main() {
	readme := flag.String("readme", "", "README file whose CLI reference section is replaced")
	flag.Parse()
	var buf bytes.Buffer
	root := cli.NewRootCommand(io.Discard, io.Discard)
	fmt.Fprintf(&buf, "Global flags: `%s`.\n\n", strings.Join(flagNames(root.PersistentFlags().FlagUsages()), "`, `"))
	fmt.Fprintln(&buf, "| command | what it does |")
	fmt.Fprintln(&buf, "|---|---|")
	walk(&buf, root)
	if *readme == "" {
		_, _ = os.Stdout.Write(buf.Bytes())
		return
	}
	data, err := os.ReadFile(*readme)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	s := string(data)
	i, j := strings.Index(s, startMarker), strings.Index(s, endMarker)
	if i < 0 || j < i {
		fmt.Fprintf(os.Stderr, "%s: markers %s … %s not found\n", *readme, startMarker, endMarker)
		os.Exit(1)
	}
	out := s[:i+len(startMarker)] + "\n" + buf.String() + s[j:]
	if err := os.WriteFile(*readme, []byte(out), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// walk prints one table row per runnable command, depth first, in the
// order cobra sorts them.
func walk(w io.Writer, c *cobra.Command) {
	if c.Runnable() && c.HasParent() && !c.Hidden {
		fmt.Fprintf(w, "| `%s` | %s |\n", strings.ReplaceAll(c.UseLine(), "|", `\|`), strings.ReplaceAll(c.Short, "|", `\|`))
	}
	for _, sub := range c.Commands() {
		if sub.Name() == "help" {
			continue
		}
		walk(w, sub)
	}
}

// flagNames extracts "--name" (and "-n, --name") from pflag's usage text.
func flagNames(usages string) []string {
	var names []string
	for _, line := range strings.Split(usages, "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		if strings.HasSuffix(f[0], ",") && len(f) > 1 {
			names = append(names, f[0]+" "+f[1])
			continue
		}
		names = append(names, f[0])
	}
	return names
}
