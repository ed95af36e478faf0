package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// Args returns a check of a command's positional arguments that names what is missing:
// names are the required arguments in order (as the command's usage line spells them, e.g.
// "BUNDLE"), optional the number of optional arguments allowed after them. Cobra's own
// checks say only "accepts 1 arg(s), received 0".
func Args(optional int, names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) < len(names) {
			missing := names[len(args):]
			what := "argument"
			if len(missing) > 1 {
				what = "arguments"
			}
			return fmt.Errorf("missing %s %s (usage: %s)", what, strings.Join(missing, " "), cmd.UseLine())
		}
		if max := len(names) + optional; len(args) > max {
			return fmt.Errorf("too many arguments: %q is one more than %s takes (usage: %s; quote text that has spaces)", args[max], cmd.CommandPath(), cmd.UseLine())
		}
		return nil
	}
}
