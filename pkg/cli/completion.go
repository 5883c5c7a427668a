package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/oamflow/oamflow/apis/core.oam.dev/v1beta1"
)

func newCompletionCommand(_ *GlobalOptions) *cobra.Command {
	// The shells a script can be written for.
	completionShells := []string{"bash", "zsh", "fish"}
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print the shell completion script",
		Long: `Print a completion script for bash, zsh or fish. Commands, flags and
Application names (read from the cluster) complete.

  bash:  source <(oamflow completion bash)       # needs bash-completion v2
         oamflow completion bash > /etc/bash_completion.d/oamflow
  zsh:   oamflow completion zsh > "${fpath[1]}/_oamflow"   # then restart zsh
  fish:  oamflow completion fish > ~/.config/fish/completions/oamflow.fish`,
		ValidArgs: completionShells,
		Args: func(_ *cobra.Command, args []string) error {
			if len(args) != 1 {
				return userErrorf("give one shell: %s", strings.Join(completionShells, ", "))
			}
			for _, s := range completionShells {
				if args[0] == s {
					return nil
				}
			}
			return userErrorf("unsupported shell %q: use one of %s", args[0], strings.Join(completionShells, ", "))
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			out, root := cmd.OutOrStdout(), cmd.Root()
			var err error
			switch args[0] {
			case "bash":
				err = root.GenBashCompletionV2(out, true)
			case "zsh":
				err = root.GenZshCompletion(out)
			case "fish":
				err = root.GenFishCompletion(out, true)
			}
			if err != nil {
				return fmt.Errorf("writing the %s completion script: %w", args[0], err)
			}
			return nil
		},
	}
}

// completeApps completes the first argument with the names of the
// Applications in the namespace of the flags; nothing when the cluster
// cannot be read.
func completeApps(g *GlobalOptions) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		c, err := g.appClient()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		list := &v1beta1.ApplicationList{}
		if err := c.List(cmd.Context(), list, client.InNamespace(g.ResolvedNamespace())); err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, a := range list.Items {
			if strings.HasPrefix(a.Name, prefix) {
				names = append(names, a.Name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
