package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/tokenizer"
)

func newPerplexityCmd() *cobra.Command {
	var (
		mf        modelFlags
		file      string
		chunks    int
		reference string
		asJSON    bool
	)
	cmd := &cobra.Command{
		Use:   "perplexity MODEL --file TEXT [--ctx 512] [--chunks N] [--reference REF.aneb] [--json]",
		Short: "Measure perplexity on a text file, and the divergence from a reference bundle",
		Long: `perplexity computes what llama.cpp's llama-perplexity computes: the text, tokenized, is cut
into consecutive chunks of --ctx tokens (default 512), each run from an empty cache, and the
second half of every chunk is scored: perplexity is exp of the mean negative log-likelihood of
those tokens. With --reference (the same model at another precision, e.g. the f16 bundle of a
quantized one), the same positions also give the mean KL divergence KL(reference || model), its
99th percentile and how often both pick the same most likely token.`,
		Example: `  anerun perplexity qwen-int4.aneb --file wiki.txt --reference qwen-f16.aneb --json`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if file == "" {
				return fmt.Errorf("--file: give the text to score, e.g. --file wiki.txt")
			}
			if chunks < 0 {
				return fmt.Errorf("--chunks %d: expected 0 (all) or a positive number", chunks)
			}
			text, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			ctxLen := mf.ctx
			if ctxLen == 0 {
				ctxLen = 512
			}
			mf.ctx = 0 // the session is sized from the chunk length below
			l, err := load(args[0], &mf)
			if err != nil {
				return err
			}
			defer l.Close()
			tok, err := l.model.Tokenizer()
			if err != nil {
				return err
			}
			tokens, bos := tokenizeForPerplexity(tok, string(text))
			opts := runtime.PerplexityOptions{Context: ctxLen, Chunks: chunks, BOS: bos}
			if reference != "" {
				r, err := load(reference, &mf)
				if err != nil {
					return fmt.Errorf("--reference: %w", err)
				}
				defer r.Close()
				opts.Reference, opts.ReferenceBackend = r.model, r.backend
			}
			ctx, cancel := cli.SignalContext(cmd.Context())
			defer cancel()
			res, err := runtime.Perplexity(ctx, l.model, l.backend, tokens, opts)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(cmd.OutOrStdout()).Encode(res)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "perplexity  %.4f over %d tokens (%d chunks of %d, second halves scored)\n", res.Perplexity, res.Tokens, res.Chunks, ctxLen)
			if opts.Reference != nil {
				fmt.Fprintf(out, "KL divergence from %s: mean %.6f, 99th percentile %.6f\n", reference, res.KLDivergence, res.KLDivergenceP99)
				fmt.Fprintf(out, "same top-1 token: %.2f%%\n", 100*res.Top1Agreement)
			}
			return nil
		},
	}
	mf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&file, "file", "", "the text file to score")
	f.IntVar(&chunks, "chunks", 0, "score at most this many chunks (0: every whole chunk)")
	f.StringVar(&reference, "reference", "", "a bundle of the same model to compare distributions with (KL divergence, top-1 agreement)")
	f.BoolVar(&asJSON, "json", false, `print {"perplexity", "kl_divergence", "kl_divergence_p99", "top1_agreement", "tokens", "chunks"}`)
	return cmd
}

// tokenizeForPerplexity tokenizes text without special tokens and returns the id the
// tokenizer's post-processor puts first (the BOS of Llama 3 and Gemma), or -1: like
// llama-perplexity, every chunk then starts with it.
func tokenizeForPerplexity(tok *tokenizer.Tokenizer, text string) ([]int, int) {
	plain := tok.Encode(text)
	with := tok.EncodeWithSpecials(text, tokenizer.EncodeOptions{AddSpecialTokens: true})
	if len(with) > len(plain) && len(with) > 0 && (len(plain) == 0 || with[0] != plain[0]) {
		return plain, with[0]
	}
	return plain, -1
}
