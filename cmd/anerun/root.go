package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/runtime"
)

// genFlags are the flags of the root command: running a model on a prompt or as a chat.
type genFlags struct {
	model       modelFlags
	sampling    samplingFlags
	system      string
	raw         bool
	interactive bool
	verbose     bool
	special     bool
	http        string
}

// newRootCmd builds the anerun command tree. Every subcommand is registered here.
func newRootCmd() *cobra.Command {
	var g genFlags
	root := &cobra.Command{
		Use:   "anerun MODEL [PROMPT]",
		Short: "Run a language model on a prompt or as a chat",
		Long: `anerun memory-maps a bundle made by anepack and generates text with it.

MODEL is a Hugging Face model id (Org/Name, optionally with a tag :f16, :f32, :int8 or :int4),
a name the local store holds (anerun list), a .aneb bundle file, or a reference (oci://,
hf://, https://). A Hugging Face model the store does not hold yet is fetched, packed and
stored the first time; later runs start from the store at once, offline too.

By default PROMPT is sent as a user message through the model's chat template (with --system as
the system message); --raw continues PROMPT as plain text instead. A PROMPT of "-" is read from
stdin. Text streams to stdout as it is generated; --verbose adds timings on stderr.
With -i, anerun is an interactive chat that keeps the conversation (and its cached keys and
values) between turns, with line editing, history, """ for multi-line messages and /help for
its commands: Ctrl-C stops the current answer, Ctrl-D or /bye exits.

Flags also take the spellings of llama.cpp and mlx-lm: --temp, --ctx-size, --n-predict,
--cache-type-k and --cache-type-v.`,
		Example: `  anerun Qwen/Qwen2.5-0.5B-Instruct "Why is the sky blue?"
  anerun -i Qwen/Qwen2.5-0.5B-Instruct --system "You are terse."
  anerun Qwen2.5-0.5B-Instruct.aneb --raw "Once upon a time" -n 64 --temp 0.8 --seed 1
  anerun serve Qwen/Qwen2.5-0.5B-Instruct --port 8000
  anerun bench Qwen/Qwen2.5-0.5B-Instruct --prompt-tokens 128 --gen-tokens 64`,
		Version:       versionInfo().String(),
		Args:          rootArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return cmd.Help()
			}
			if g.http != "" {
				return serveShortcut(cmd, args, g.http, &g.model)
			}
			if g.interactive {
				return runChat(cmd, args, &g)
			}
			if len(args) < 2 {
				return fmt.Errorf("expected a prompt after %s (or -i for a chat)", args[0])
			}
			return runGenerate(cmd, args[0], args[1], &g)
		},
	}
	g.model.register(root)
	g.sampling.register(root)
	f := root.Flags()
	f.StringVar(&g.system, "system", "", "system message for the chat template")
	f.BoolVar(&g.raw, "raw", false, "continue the prompt as plain text, without the chat template")
	f.BoolVarP(&g.interactive, "interactive", "i", false, "interactive chat")
	f.BoolVarP(&g.verbose, "verbose", "v", false, "print prompt tokens, tokens/s and time to first token on stderr")
	f.BoolVar(&g.special, "special", false, "print special tokens (<|im_start|>, ...) in the output")
	f.StringVar(&g.http, "http", "", "serve the OpenAI API on this port (loopback) or host:port instead of answering a prompt (see anerun serve)")

	root.AddCommand(newBenchCmd(), newPerplexityCmd(), newLogitsCmd(), newTokenizeCmd(), newTemplateCmd(),
		newPullCmd(), newImportCmd(), newListCmd(), newRmCmd(), newServeCmd(), newDoctorCmd(), newVersionCmd())
	registerCPUFlags(root)
	root.SetVersionTemplate("{{.Version}}")
	root.SetFlagErrorFunc(cli.FlagError)
	cli.Aliases(root, flagAliases)
	for _, c := range root.Commands() {
		cli.Aliases(c, flagAliases)
	}
	return root
}

// flagAliases are the other spellings of anerun's flags that people type from llama.cpp and
// mlx-lm; each command accepts those of its flags.
var flagAliases = map[string]string{
	"temp":      "temperature",
	"ctx-size":  "ctx",
	"n-predict": "max-tokens",
	// llama.cpp types keys and values apart; anerun keeps them in one type, which either sets
	// (the last given wins).
	"cache-type-k": "cache-type",
	"cache-type-v": "cache-type",
}

// rootArgs accepts MODEL and an optional PROMPT; a first word that looks like a mistyped
// subcommand (and is neither a file nor a name in the store) gets a suggestion instead of "no
// such file".
func rootArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 2 {
		return fmt.Errorf("expected a model and one prompt, got %d arguments (quote the prompt)", len(args))
	}
	if len(args) >= 1 {
		a := args[0]
		if _, err := os.Stat(a); err != nil && !strings.ContainsAny(a, "/.:") && !inStore(a) {
			if s := cmd.SuggestionsFor(a); len(s) > 0 {
				return fmt.Errorf("unknown command %q; did you mean %q?", a, s[0])
			}
		}
	}
	return nil
}

// runGenerate answers one prompt.
func runGenerate(cmd *cobra.Command, path, text string, g *genFlags) error {
	if text == "-" {
		b, err := io.ReadAll(cmd.InOrStdin())
		if err != nil {
			return fmt.Errorf("reading the prompt from stdin: %w", err)
		}
		text = string(b)
	}
	if strings.TrimSpace(text) == "" {
		return errors.New("the prompt is empty")
	}
	l, err := load(path, &g.model)
	if err != nil {
		return err
	}
	defer l.Close()
	opts, err := g.generateOptions(l.model)
	if err != nil {
		return err
	}
	tok, err := l.model.Tokenizer()
	if err != nil {
		return err
	}
	if err := g.rawIfNoTemplate(tok, cmd.ErrOrStderr()); err != nil {
		return err
	}
	var msgs []chatMessage
	if g.system != "" {
		msgs = append(msgs, chatMessage{Role: "system", Content: g.system})
	}
	prompt, err := g.encode(l.model, append(msgs, chatMessage{Role: "user", Content: text}), text)
	if err != nil {
		return err
	}
	sess, err := runtime.NewSession(l.model, l.backend, g.model.ctx)
	if err != nil {
		return err
	}
	defer sess.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	out := cmd.OutOrStdout()
	opts.OnText = func(s string) error {
		_, err := io.WriteString(out, s)
		return err
	}
	res, err := sess.Generate(ctx, prompt, opts)
	if res != nil && res.Text != "" && !strings.HasSuffix(res.Text, "\n") {
		fmt.Fprintln(out)
	}
	if g.verbose && res != nil {
		printStats(cmd.ErrOrStderr(), prompt, res, l, true)
	}
	if res != nil && res.Reason == runtime.StopCancelled {
		fmt.Fprintln(cmd.ErrOrStderr(), "anerun: interrupted")
		return &cli.ExitError{Code: exitInterrupted}
	}
	return err
}

// maxShownIDs bounds the prompt ids --verbose prints.
const maxShownIDs = 64

// generateOptions turns the flags into runtime options for model m.
func (g *genFlags) generateOptions(m *runtime.Model) (runtime.GenerateOptions, error) {
	s, err := g.sampling.resolve(m)
	if err != nil {
		return runtime.GenerateOptions{}, err
	}
	maxTokens := g.sampling.maxNewTokens(m)
	if maxTokens < 0 {
		return runtime.GenerateOptions{}, fmt.Errorf("--max-tokens %d: expected 0 (no limit) or more", maxTokens)
	}
	return runtime.GenerateOptions{MaxTokens: maxTokens, Sampling: s, Stop: g.sampling.stop, Special: g.special}, nil
}

// encode returns the prompt ids: the conversation through the chat template, or with --raw
// the plain text (with the tokenizer's own BOS/EOS handling, as transformers' tokenizer(text)).
func (g *genFlags) encode(m *runtime.Model, msgs []chatMessage, raw string) ([]int, error) {
	tok, err := m.Tokenizer()
	if err != nil {
		return nil, err
	}
	if g.raw {
		return encodeRaw(tok, raw), nil
	}
	return encodeChat(tok, msgs)
}

// printStats reports one generation on w: the prompt (its ids, at most maxShownIDs of them),
// the speeds and the time to first token (also counted from the start of the process for the
// first generation of a run).
func printStats(w io.Writer, prompt []int, r *runtime.Result, l *loaded, first bool) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	fmt.Fprintf(w, "\nprompt: %d tokens (%d reused from the cache)\n", r.PromptTokens, r.Reused)
	shown := prompt[:min(len(prompt), maxShownIDs)]
	fmt.Fprintf(w, "prompt ids: %s", formatIDs(shown))
	if len(prompt) > len(shown) {
		fmt.Fprintf(w, " ... (%d more)", len(prompt)-len(shown))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "prefill: %d tokens in %.1f ms, %.1f tokens/s\n", r.PromptTokens-r.Reused, ms(r.Prefill), r.PrefillTokensPerSecond())
	fmt.Fprintf(w, "decode: %d tokens in %.1f ms, %.2f tokens/s\n", r.DecodeSteps, ms(r.Decode), r.DecodeTokensPerSecond())
	fmt.Fprintf(w, "time to first token: %.1f ms", ms(r.TTFT))
	if first {
		fmt.Fprintf(w, " (%.1f ms since anerun started)", ms(r.FirstTokenAt.Sub(processStart)))
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "generated: %d tokens, stopped by %s; backend %s", len(r.Tokens), r.Reason, l.backend.Name())
	if l.threads > 0 {
		fmt.Fprintf(w, ", %d threads", l.threads)
	}
	if l.amx {
		fmt.Fprint(w, ", prefill on AMX")
	}
	fmt.Fprintln(w)
}
