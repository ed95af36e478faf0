package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Aliases makes each key of aliases another spelling of the flag it maps to, for the flags of
// cmd that exist: "--temp" for "--temperature" as llama.cpp and mlx-lm spell it. Only the
// canonical name appears in the help (its usage should mention the alias).
func Aliases(cmd *cobra.Command, aliases map[string]string) {
	fs := cmd.Flags()
	have := map[string]string{}
	for alias, name := range aliases {
		if fs.Lookup(name) != nil {
			have[alias] = name
		}
	}
	if len(have) == 0 {
		return
	}
	fs.SetNormalizeFunc(func(_ *pflag.FlagSet, name string) pflag.NormalizedName {
		if n, ok := have[name]; ok {
			return pflag.NormalizedName(n)
		}
		return pflag.NormalizedName(name)
	})
	cmd.Annotations = withAliases(cmd.Annotations, have)
}

// aliasAnnotation records a command's aliases for FlagError's suggestions.
const aliasAnnotation = "cli.flag-aliases"

func withAliases(a map[string]string, aliases map[string]string) map[string]string {
	if a == nil {
		a = map[string]string{}
	}
	var names []string
	for k := range aliases {
		names = append(names, k)
	}
	sort.Strings(names)
	a[aliasAnnotation] = strings.Join(names, ",")
	return a
}

// FlagError is a cobra FlagErrorFunc: an unknown flag gets the nearest known one suggested
// ("unknown flag --tempreature; did you mean --temperature?"), and every flag error says
// where the flags are listed.
func FlagError(cmd *cobra.Command, err error) error {
	msg := err.Error()
	if name, ok := strings.CutPrefix(msg, "unknown flag: --"); ok {
		if s := nearestFlag(cmd, name); s != "" {
			return fmt.Errorf("unknown flag --%s; did you mean --%s?", name, s)
		}
		return fmt.Errorf("unknown flag --%s (%s --help lists the flags)", name, cmd.CommandPath())
	}
	return fmt.Errorf("%s (%s --help lists the flags)", msg, cmd.CommandPath())
}

// nearestFlag returns the flag name of cmd (aliases included) closest to name: one that starts
// with it (--max is --max-tokens cut short, not --amx misspelt), else the one at the smallest
// edit distance if that is small for the name's length; "" when none is near.
func nearestFlag(cmd *cobra.Command, name string) string {
	var names []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden {
			names = append(names, f.Name)
		}
	})
	sort.Strings(names)
	// Aliases come last, so that a flag's own name wins a tie with an alias.
	if a := cmd.Annotations[aliasAnnotation]; a != "" {
		names = append(names, strings.Split(a, ",")...)
	}
	// Distances in half steps: a prefix counts half a step, nearer than any one edit.
	best, bestD := "", 2*(len(name)/3+2)
	for _, n := range names {
		d := 2 * editDistance(name, n)
		if len(name) >= 3 && strings.HasPrefix(n, name) {
			d = min(d, 1) // the start of a flag's name
		}
		if d < bestD {
			best, bestD = n, d
		}
	}
	return best
}

// editDistance is the Damerau-Levenshtein distance (optimal string alignment: insertions,
// deletions, substitutions and transpositions of neighbours each cost 1).
func editDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
}
