package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/cli"
)

// newRootCmd builds the anepack command tree. The root itself packs: its one positional argument
// is a Hugging Face repo id or a checkpoint directory.
func newRootCmd() *cobra.Command {
	var opts packFlags
	var hf hubFlags
	root := &cobra.Command{
		Use:   "anepack MODEL [-o out.aneb]",
		Short: "Pack a Hugging Face model into one memory-mappable .aneb bundle",
		Long: `anepack converts a Hugging Face checkpoint (config.json, tokenizer files and safetensors
weights) into one versioned .aneb bundle that anerun memory-maps and runs.

MODEL is a Hugging Face repo id (Org/Name: the files packing needs are downloaded into the
Hugging Face cache, or reused from it) or a local checkpoint directory (use ./name for a
directory called like a subcommand). The bundle is written to -o, by default <model name>.aneb
in the current directory; --store adds it to the local store instead (or as well, with -o),
where anerun runs it by name. Where the bundle goes is checked before anything is downloaded.`,
		Version: versionInfo().String(),
		Example: `  anepack Qwen/Qwen2.5-0.5B-Instruct                 # writes Qwen2.5-0.5B-Instruct.aneb
  anepack Qwen/Qwen2.5-0.5B-Instruct --store         # into the store: anerun Qwen/Qwen2.5-0.5B-Instruct "hi"
  anepack ./Qwen2.5-0.5B-Instruct -o qwen.aneb
  anepack synth --config cfg.json --seed 1 -o ./synth-model
  anepack inspect qwen.aneb
  anepack verify qwen.aneb`,
		Args:          rootArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			return runPack(cmd, args[0], &opts, &hf)
		},
	}
	opts.register(root)
	hf.register(root)
	root.AddCommand(newSynthCmd(), newInspectCmd(), newVerifyCmd(), newDownloadCmd(), newLsCmd(), newPushCmd(), newVersionCmd())
	root.SetVersionTemplate("{{.Version}}")
	root.SetFlagErrorFunc(cli.FlagError)
	return root
}

// rootArgs accepts one model argument; a word that looks like a mistyped subcommand gets a
// suggestion instead of being packed.
func rootArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 1 {
		return fmt.Errorf("expected one model (a repo id or a checkpoint directory), got %d arguments: %s", len(args), strings.Join(args, " "))
	}
	if len(args) == 1 {
		a := args[0]
		if _, err := os.Stat(a); err != nil && !strings.ContainsAny(a, "/.") {
			if s := cmd.SuggestionsFor(a); len(s) > 0 {
				return fmt.Errorf("unknown command %q; did you mean %q?", a, s[0])
			}
		}
	}
	return nil
}
