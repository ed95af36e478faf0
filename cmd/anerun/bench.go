package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/arch"
	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/kernels"
)

// benchResult is the --json output; the keys are fixed (bench/compare_llama.sh reads them).
type benchResult struct {
	PrefillTokensPerS float64 `json:"prefill_tokens_per_s"`
	DecodeTokensPerS  float64 `json:"decode_tokens_per_s"`
	TTFTMs            float64 `json:"ttft_ms"`
	PeakRSSBytes      int64   `json:"peak_rss_bytes"`
	// StateBytes is the session's KV cache (and recurrent state) as allocated for the context;
	// FullKVBytes what a cache holding every position of every attention layer would take
	// (sliding-window layers keep only their window, so StateBytes can be far less).
	StateBytes  int64  `json:"state_bytes"`
	FullKVBytes int64  `json:"full_kv_bytes"`
	CacheType   string `json:"cache_type"` // the KV cache's element type (--cache-type)
	Context     int    `json:"context"`
	Backend     string `json:"backend"`
	Threads     int    `json:"threads"`
	AMXPrefill  bool   `json:"amx_prefill"` // fp16 and q8 prefill products on AMX tiles (--amx)
	ISA         string `json:"isa"`         // the CPU kernels' instruction-set level (--isa)
	CPUList     string `json:"cpu_list"`    // the CPUs the process ran on (--cpus, taskset)
	// Each repetition's rates, in order, for medians and spreads (bench/compare_llama.sh).
	PrefillRuns []float64 `json:"prefill_runs"`
	DecodeRuns  []float64 `json:"decode_runs"`
}

func newBenchCmd() *cobra.Command {
	var (
		mf           modelFlags
		promptTokens int
		genTokens    int
		reps         int
		asJSON       bool
		cpuProfile   string
	)
	cmd := &cobra.Command{
		Use:   "bench MODEL [--prompt-tokens 128] [--gen-tokens 64] [--json]",
		Short: "Measure prefill and decode speed, time to first token and peak memory",
		Long: `bench runs a prompt of --prompt-tokens synthetic token ids as one batched prefill, then
generates --gen-tokens tokens one at a time (greedy, never stopping early), after a warm-up of
the whole prompt and one generated token, as llama-bench does: it maps the weights in and
touches the session's buffers at their full size. It repeats this --repetitions times and reports the mean, and the
median and range of the repetitions:

  prefill tokens/s   prompt tokens / prefill time
  decode tokens/s    generated tokens / decode time
  time to first token  prefill plus choosing the first token, in ms
  peak RSS           the process's peak resident memory (getrusage), mapped weights included
  KV cache           the session's cache as allocated for --ctx (default: prompt + generated
                     tokens), against a cache holding every position in every attention layer

--json prints {"prefill_tokens_per_s", "decode_tokens_per_s", "ttft_ms", "peak_rss_bytes",
"backend", "threads", "amx_prefill", "isa", "cpu_list", "prefill_runs", "decode_runs",
"state_bytes", "full_kv_bytes", "cache_type", "context"} (the runs: each repetition's tokens/s; amx_prefill:
whether prefill ran on AMX tiles, see --amx; isa: the CPU kernels' level, see --isa;
cpu_list: the CPUs the process ran on, see --cpus).
Compare with llama-bench -p 128 -n 64 -t THREADS (bench/compare_llama.sh alternates the two).`,
		Example: `  anerun bench qwen.aneb --prompt-tokens 128 --gen-tokens 64 --threads 2 --json`,
		Args:    cli.Args(0, "MODEL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if promptTokens < 1 || genTokens < 1 || reps < 1 {
				return fmt.Errorf("--prompt-tokens, --gen-tokens and --repetitions must be positive (got %d, %d, %d)", promptTokens, genTokens, reps)
			}
			l, err := load(args[0], &mf)
			if err != nil {
				return err
			}
			defer l.Close()
			ctxLen := mf.ctx
			if ctxLen == 0 {
				ctxLen = promptTokens + genTokens
			}
			if need := promptTokens + genTokens; need > ctxLen {
				return &runtime.ContextError{Tokens: need, Context: ctxLen, Max: l.model.Config.MaxPositionEmbeddings}
			}
			sess, err := runtime.NewSession(l.model, l.backend, ctxLen)
			if err != nil {
				return err
			}
			defer sess.Close()
			prompt := benchPrompt(promptTokens, l.model.Config.VocabSize)
			// Warm up on the measured shape, as llama-bench does: fault the mapped weights in,
			// start the worker threads and touch the prompt-sized scratch and cache (with an
			// 8-token warm-up, the first measured prefill of 128 tokens ran 5-10% slower than
			// the next ones, on the page faults of its first use of that memory).
			if err := benchRun(sess, prompt, 1, nil); err != nil {
				return err
			}
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return err
				}
				defer stop()
			}
			var prefill, decode, ttft []float64
			for range reps {
				var r benchRep
				if err := benchRun(sess, prompt, genTokens, &r); err != nil {
					return err
				}
				prefill = append(prefill, float64(promptTokens)/r.prefill.Seconds())
				decode = append(decode, float64(genTokens)/r.decode.Seconds())
				ttft = append(ttft, float64(r.ttft.Microseconds())/1000)
			}
			res := benchResult{
				PrefillTokensPerS: mean(prefill), DecodeTokensPerS: mean(decode), TTFTMs: mean(ttft),
				PeakRSSBytes: peakRSS(), Backend: l.backend.Name(), Threads: l.threads, AMXPrefill: l.amx,
				ISA: kernels.ISA(), CPUList: cpuList(),
				PrefillRuns: prefill, DecodeRuns: decode,
				StateBytes: sess.StateBytes(), FullKVBytes: fullKVBytes(l.model.Config, ctxLen, mf.cacheType), CacheType: mf.cacheType.String(), Context: ctxLen,
			}
			out := cmd.OutOrStdout()
			if asJSON {
				enc := json.NewEncoder(out)
				return enc.Encode(res)
			}
			c := l.model.Config
			fmt.Fprintf(out, "model: %s (%s, %s, %d layers, hidden %d, vocab %d)\n", args[0], c.Architecture, l.model.DType, c.NumHiddenLayers, c.HiddenSize, c.VocabSize)
			amx := ""
			if res.AMXPrefill {
				amx = ", prefill on AMX"
			}
			fmt.Fprintf(out, "backend: %s, %d threads%s; CPU kernels up to %s, on CPUs %s; %d repetitions\n", res.Backend, res.Threads, amx, res.ISA, res.CPUList, reps)
			fmt.Fprintf(out, "prefill: %d tokens, %.2f ± %.2f tokens/s (median %.2f, range %.2f-%.2f)\n", promptTokens, res.PrefillTokensPerS, stddev(prefill), median(prefill), slices.Min(prefill), slices.Max(prefill))
			fmt.Fprintf(out, "decode: %d tokens, %.2f ± %.2f tokens/s (median %.2f, range %.2f-%.2f)\n", genTokens, res.DecodeTokensPerS, stddev(decode), median(decode), slices.Min(decode), slices.Max(decode))
			fmt.Fprintf(out, "time to first token: %.1f ms\n", res.TTFTMs)
			fmt.Fprintf(out, "peak RSS: %.1f MiB\n", float64(res.PeakRSSBytes)/(1<<20))
			fmt.Fprintf(out, "KV cache: %.1f MiB of %s for %d tokens (every position of every attention layer: %.1f MiB)\n",
				float64(res.StateBytes)/(1<<20), res.CacheType, ctxLen, float64(res.FullKVBytes)/(1<<20))
			return nil
		},
	}
	mf.register(cmd)
	f := cmd.Flags()
	f.IntVarP(&promptTokens, "prompt-tokens", "p", 128, "prompt length in tokens")
	f.IntVarP(&genTokens, "gen-tokens", "n", 64, "tokens to generate")
	f.IntVarP(&reps, "repetitions", "r", 3, "runs to average")
	f.BoolVar(&asJSON, "json", false, "print the result as one JSON object")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the measured repetitions (not the warm-up) to this file, for go tool pprof")
	return cmd
}

// benchPrompt returns n token ids spread over the vocabulary (deterministic, like llama-bench's
// random prompt but reproducible).
func benchPrompt(n, vocab int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = (i*7919 + 13) % vocab
	}
	return p
}

type benchRep struct{ prefill, ttft, decode time.Duration }

// benchRun prefills prompt from an empty cache and generates gen tokens greedily.
func benchRun(s *runtime.Session, prompt []int, gen int, r *benchRep) error {
	sampler, err := runtime.NewSampler(runtime.Sampling{}, s.Model().Config.VocabSize)
	if err != nil {
		return err
	}
	s.Reset()
	start := time.Now()
	if _, err := s.Prefill(context.Background(), prompt); err != nil {
		return err
	}
	prefilled := time.Now()
	id := sampler.Sample(s.Logits(), s.Tokens())
	first := time.Now()
	for i := 0; i < gen; i++ {
		if err := s.Append(id); err != nil {
			return err
		}
		id = sampler.Sample(s.Logits(), s.Tokens())
	}
	if r != nil {
		r.prefill, r.ttft, r.decode = prefilled.Sub(start), first.Sub(start), time.Since(first)
	}
	return nil
}

// startCPUProfile starts a pprof CPU profile into path and returns the func that stops it.
func startCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}

func mean(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x
	}
	return s / float64(len(v))
}

// median returns the middle value of v (the mean of the two middle ones for an even count).
func median(v []float64) float64 {
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func stddev(v []float64) float64 {
	if len(v) < 2 {
		return 0
	}
	m, s := mean(v), 0.0
	for _, x := range v {
		s += (x - m) * (x - m)
	}
	return math.Sqrt(s / float64(len(v)-1))
}

// fullKVBytes is the KV cache of ctx positions of type ct in every attention layer (Gated
// DeltaNet layers have none): what the session's cache would take if no layer were a sliding
// window.
func fullKVBytes(c *arch.Config, ctx int, ct runtime.CacheType) int64 {
	var n int64
	for l := range c.NumHiddenLayers {
		if !c.LinearLayer(l) {
			n += 2 * int64(c.KVDim()) * int64(ctx) * ct.ValueBytes()
		}
	}
	return n
}
