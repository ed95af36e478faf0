package clidoc

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestLint finds backticks pflag would take for a type name and defaults stated twice, on a
// subcommand's and on a persistent flag, and nothing in usages that are right.
func TestLint(t *testing.T) {
	root := &cobra.Command{Use: "tool"}
	root.PersistentFlags().String("mode", "auto", "auto (what `tool probe` found)")
	sub := &cobra.Command{Use: "sub", Run: func(*cobra.Command, []string) {}}
	f := sub.Flags()
	f.Int("n", 4, "`N` items")
	f.Float64("top-p", 1, "nucleus mass (default: the model's)")
	f.String("rev", "main", "revision; default main")
	// Right: no backticks; a stated default where pflag prints none (zero values).
	f.Float64("min-p", 0, "drop unlikely tokens (default: the model's)")
	f.String("host", "", "host to listen on (default 127.0.0.1)")
	f.Int("port", 0, "port (0: any)")
	f.Bool("json", false, "print JSON")
	f.String("cache", "f32", "f16 halves the memory, as llama.cpp's default")
	root.AddCommand(sub)

	got := Lint(root)
	want := []string{
		`tool --mode: the backticks in its usage make --help show "tool probe" where the type "string" belongs`,
		`tool sub --n: the backticks in its usage make --help show "N" where the type "int" belongs`,
		`tool sub --rev: its usage states a default and pflag prints (default "main") too`,
		`tool sub --top-p: its usage states a default and pflag prints (default 1) too`,
	}
	if len(got) != len(want) {
		t.Fatalf("Lint found %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if !strings.HasPrefix(got[i], want[i]) {
			t.Errorf("problem %d:\n%s\nwant it to start\n%s", i, got[i], want[i])
		}
	}
}
