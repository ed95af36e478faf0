package clidoc

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// statesDefault matches a usage that states the flag's default itself: "(default main)",
// "(default: the model's)", "; default 8000".
var statesDefault = regexp.MustCompile(`\(default\b|\bdefault:|; default\b`)

// Lint returns one line for each flag of root's tree (every command, local and persistent
// flags) whose usage --help renders wrongly:
//   - a pair of backticks, which pflag takes as the name of the flag's value
//     (pflag.UnquoteUsage): "--ane-constexpr anerun doctor --probe" where "--ane-constexpr
//     string" was meant;
//   - a default stated in the usage of a flag whose default pflag prints as well, so that help
//     shows two ("(default: the model's) (default 1)").
func Lint(root *cobra.Command) []string {
	var problems []string
	seen := map[*pflag.Flag]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.PersistentFlags(), c.LocalFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if seen[f] {
					return
				}
				seen[f] = true
				for _, p := range flagProblems(f) {
					problems = append(problems, fmt.Sprintf("%s --%s: %s", c.CommandPath(), f.Name, p))
				}
			})
		}
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	return problems
}

// flagProblems says what is wrong with f's usage, if anything.
func flagProblems(f *pflag.Flag) []string {
	var problems []string
	shown, _ := pflag.UnquoteUsage(f)
	plain := *f
	plain.Usage = strings.ReplaceAll(f.Usage, "`", "")
	if want, _ := pflag.UnquoteUsage(&plain); shown != want {
		problems = append(problems, fmt.Sprintf("the backticks in its usage make --help show %q where the type %q belongs; write the text without backticks", shown, want))
	}
	if printed := printedDefault(f); printed != "" && statesDefault.MatchString(f.Usage) {
		problems = append(problems, fmt.Sprintf("its usage states a default and pflag prints %s too; state one (usage %q)", printed, f.Usage))
	}
	return problems
}

// printedDefault is the "(default ...)" pflag appends to f's line in --help, or "" when its
// default is the zero value, which pflag does not print.
func printedDefault(f *pflag.Flag) string {
	fs := pflag.NewFlagSet("", pflag.ContinueOnError)
	bare := *f
	bare.Usage = ""
	fs.AddFlag(&bare)
	line := fs.FlagUsages()
	if i := strings.Index(line, "(default "); i >= 0 {
		return strings.TrimSpace(line[i:])
	}
	return ""
}
