package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/mil"
	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/runtime/ane"
)

// logitsChunk bounds the prompt positions whose logits are held at once during the batched
// prefill (each is a vocabulary-sized row: 0.6 MB for Qwen).
const logitsChunk = 64

func newLogitsCmd() *cobra.Command {
	var (
		mf      modelFlags
		idsFlag string
		top     int
		prefill int
	)
	cmd := &cobra.Command{
		Use:   "logits MODEL --ids ID,ID,... [--top K] [--prefill N]",
		Short: "Print the top-K logits at every position of a token sequence, as JSON",
		Long: `logits runs the given token ids through the model and prints, as JSON, the K largest
(id, logit) pairs of the prediction at every position:

  {"positions": [{"pos": 0, "top": [[id, logit], ...]}, ...]}

The first --prefill ids (default: all but the last) run as one batched prefill; the rest run one
at a time with the KV cache, exactly as generation does. Compare with transformers'
model(input_ids).logits[0, pos].topk(K).`,
		Example: `  anerun logits qwen.aneb --ids 151644,8948,198 --top 8`,
		Args:    cli.Args(0, "MODEL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			ids, err := parseIDs(idsFlag)
			if err != nil {
				return fmt.Errorf("--ids: %w", err)
			}
			if len(ids) == 0 {
				return fmt.Errorf("--ids: give at least one token id, e.g. --ids 151644,8948,198")
			}
			if top < 1 {
				return fmt.Errorf("--top %d: expected a positive number", top)
			}
			if !cmd.Flags().Changed("prefill") {
				prefill = len(ids) - 1
			}
			if prefill < 0 || prefill > len(ids) {
				return fmt.Errorf("--prefill %d: expected 0 to %d (the number of ids)", prefill, len(ids))
			}
			l, err := load(args[0], &mf)
			if err != nil {
				return err
			}
			defer l.Close()
			ctx := mf.ctx
			if ctx == 0 {
				ctx = len(ids)
			}
			sess, err := runtime.NewSession(l.model, l.backend, ctx)
			if err != nil {
				return err
			}
			defer sess.Close()
			if len(ids) > sess.Context() {
				return &runtime.ContextError{Tokens: len(ids), Context: sess.Context(), Max: l.model.Config.MaxPositionEmbeddings}
			}
			vocab := l.model.Config.VocabSize
			top = min(top, vocab)
			w := bufio.NewWriter(cmd.OutOrStdout())
			w.WriteString(`{"positions": [`)
			pos := 0
			emit := func(row []float32) {
				if pos > 0 {
					w.WriteString(", ")
				}
				fmt.Fprintf(w, `{"pos": %d, "top": [`, pos)
				for j, id := range topIDs(row, top) {
					if j > 0 {
						w.WriteString(", ")
					}
					fmt.Fprintf(w, "[%d, %s]", id, strconv.FormatFloat(float64(row[id]), 'g', -1, 32))
				}
				w.WriteString("]}")
				pos++
			}
			// Batched prefill, in chunks so that the rows of logits stay bounded.
			buf := make([]float32, min(prefill, logitsChunk)*vocab)
			for lo := 0; lo < prefill; lo += logitsChunk {
				hi := min(prefill, lo+logitsChunk)
				rows := buf[:(hi-lo)*vocab]
				if err := sess.Extend(ids[lo:hi], rows); err != nil {
					return err
				}
				for r := 0; r < hi-lo; r++ {
					emit(rows[r*vocab : (r+1)*vocab])
				}
			}
			// Then one token at a time.
			for _, id := range ids[prefill:] {
				if err := sess.Append(id); err != nil {
					return err
				}
				emit(sess.Logits())
			}
			w.WriteString("]}\n")
			if err := w.Flush(); err != nil {
				return err
			}
			if h, ok := l.backend.(headroomer); ok && mf.aneCheck {
				printHeadroom(cmd.ErrOrStderr(), h)
			}
			return nil
		},
	}
	mf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&idsFlag, "ids", "", "comma-separated token ids")
	f.IntVar(&top, "top", 8, "how many of the largest logits to print per position")
	f.IntVar(&prefill, "prefill", 0, "how many ids to run as one batched prefill (default: all but the last)")
	return cmd
}

// headroomer is implemented by the ane and sim backends (ane.Backend.Headroom).
type headroomer interface {
	Headroom() ([]ane.ProgramRange, string)
}

// printHeadroom writes each program's largest activation against fp16's limit, the programs
// with the least room first (--ane-check): a model that would overflow on the ANE is found
// in the simulator.
func printHeadroom(w io.Writer, h headroomer) {
	ranges, covers := h.Headroom()
	fmt.Fprintf(w, "fp16 headroom (%s): largest |activation| of each program against fp16's %d\n", covers, mil.MaxFP16)
	for _, r := range ranges {
		note := fmt.Sprintf("%.0fx room", r.Headroom())
		switch {
		case r.Overflow != "":
			note = "OVERFLOWS fp16 at " + r.Overflow + ": the ANE would produce infinities here"
		case r.NaN != "":
			note = "NaN at " + r.NaN
		}
		fmt.Fprintf(w, "  %-28s %12.4g  %-16s %s\n", r.Program, r.Max, r.Var, note)
	}
}

// parseIDs reads "1,2,3" (spaces allowed, or a JSON-style [1, 2, 3]).
func parseIDs(s string) ([]int, error) {
	s = strings.TrimSpace(s)
	s = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]")
	var ids []int
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' }) {
		id, err := strconv.Atoi(f)
		if err != nil || id < 0 {
			return nil, fmt.Errorf("%q is not a token id (a non-negative integer)", f)
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// topIDs returns the ids of the k largest values of row, largest first, the lower id first
// among equal values.
func topIDs(row []float32, k int) []int {
	ids := make([]int, 0, k+1)
	for id, v := range row {
		if len(ids) == k && v <= row[ids[k-1]] {
			continue
		}
		i, _ := slices.BinarySearchFunc(ids, v, func(a int, v float32) int {
			if row[a] >= v {
				return -1
			}
			return 1
		})
		ids = slices.Insert(ids, i, id)
		if len(ids) > k {
			ids = ids[:k]
		}
	}
	return ids
}
