package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/cli"
)

func newTemplateCmd() *cobra.Command {
	var ids bool
	cmd := &cobra.Command{
		Use:   "template MODEL < request.json",
		Short: "Render the model's chat template for a JSON request read from stdin",
		Long: `template reads one JSON object from stdin and prints the prompt the model's chat template
renders for it, byte for byte as transformers' apply_chat_template(..., tokenize=False):

  {"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": true,
   "tools": [...], "enable_thinking": false, ...}

"messages", "tools", "documents", "add_generation_prompt", "continue_final_message" and
"chat_template" (a template name) have their transformers meaning; any other key becomes a
template variable. With --ids the prompt's token ids are printed instead, as anerun would run them.`,
		Example: `  echo '{"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": true}' | anerun template qwen.aneb`,
		Args:    cli.Args(0, "MODEL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req, err := io.ReadAll(cmd.InOrStdin())
			if err != nil {
				return fmt.Errorf("reading the request from stdin: %w", err)
			}
			tok, closeModel, err := openTokenizer(args[0])
			if err != nil {
				return err
			}
			defer closeModel()
			text, err := tok.ApplyChatTemplateJSON(req)
			if err != nil {
				return err
			}
			if ids {
				_, err = fmt.Fprintln(cmd.OutOrStdout(), formatIDs(tok.Encode(text)))
				return err
			}
			_, err = io.WriteString(cmd.OutOrStdout(), text)
			return err
		},
	}
	cmd.Flags().BoolVar(&ids, "ids", false, "print the token ids of the rendered prompt")
	return cmd
}
