package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/anepack/anepack/runtime/kernels"
)

// PerplexityOptions controls Perplexity.
type PerplexityOptions struct {
	// Context is the tokens per chunk (llama-perplexity's -c); 0 means 512.
	Context int
	// Chunks bounds the chunks scored; 0 means every whole chunk of the text.
	Chunks int
	// BOS, when >= 0, replaces the first token of every chunk, as llama-perplexity does for
	// models whose tokenizer adds a beginning-of-sequence token.
	BOS int
	// Reference, when set, is run on the same chunks, and the result compares the two
	// distributions position by position (the quantized model against its f16 original).
	Reference *Model
	// ReferenceBackend runs Reference.
	ReferenceBackend Backend
}

// PerplexityResult is what Perplexity measured. The KL fields are set only with a reference.
type PerplexityResult struct {
	Perplexity float64 `json:"perplexity"`
	// KLDivergence is the mean over scored positions of KL(reference || model), in nats;
	// KLDivergenceP99 its 99th percentile.
	KLDivergence    float64 `json:"kl_divergence"`
	KLDivergenceP99 float64 `json:"kl_divergence_p99"`
	// Top1Agreement is the share of scored positions where both models' most likely next
	// token is the same.
	Top1Agreement float64 `json:"top1_agreement"`
	// Tokens is the number of tokens scored.
	Tokens int `json:"tokens"`
	Chunks int `json:"chunks"`
}

// perplexityRows is how many positions' logits are held at once (per model).
const perplexityRows = 32

// Perplexity scores tokens the way llama.cpp's llama-perplexity does: the text is cut into
// consecutive chunks of Context tokens, each run from an empty cache, and the second half of
// each chunk is scored: the negative log-likelihood of every token after position Context/2
// given the tokens before it in its chunk. Perplexity is exp of their mean. With a reference
// model, the same positions also give KL(reference || model), its 99th percentile and the
// top-1 agreement (llama-perplexity's --kl-divergence).
func Perplexity(ctx context.Context, m *Model, b Backend, tokens []int, opts PerplexityOptions) (*PerplexityResult, error) {
	n := opts.Context
	if n == 0 {
		n = 512
	}
	if n < 4 {
		return nil, fmt.Errorf("a context of %d tokens is too short to score; expected 4 or more", n)
	}
	chunks := len(tokens) / n
	if opts.Chunks > 0 {
		chunks = min(chunks, opts.Chunks)
	}
	if chunks == 0 {
		return nil, fmt.Errorf("the text has %d tokens; one chunk needs %d (shorten --ctx or give a longer text)", len(tokens), n)
	}
	ref := opts.Reference
	if ref != nil && ref.Config.VocabSize != m.Config.VocabSize {
		return nil, fmt.Errorf("the reference model has a vocabulary of %d tokens; the model has %d", ref.Config.VocabSize, m.Config.VocabSize)
	}
	sess, err := NewSession(m, b, n)
	if err != nil {
		return nil, err
	}
	defer sess.Close()
	var rsess *Session
	if ref != nil {
		if rsess, err = NewSession(ref, opts.ReferenceBackend, n); err != nil {
			return nil, err
		}
		defer rsess.Close()
	}
	vocab := m.Config.VocabSize
	first := n / 2
	logits := make([]float32, perplexityRows*vocab)
	var rlogits []float32
	if ref != nil {
		rlogits = make([]float32, perplexityRows*vocab)
	}
	var nll float64
	var kls []float64
	res := &PerplexityResult{Chunks: chunks}
	same := 0
	chunk := make([]int, n)
	for c := 0; c < chunks; c++ {
		copy(chunk, tokens[c*n:(c+1)*n])
		if opts.BOS >= 0 {
			chunk[0] = opts.BOS
		}
		for _, s := range []*Session{sess, rsess} {
			if s == nil {
				continue
			}
			s.Reset()
			if err := s.Extend(chunk[:first], nil); err != nil {
				return nil, err
			}
		}
		// Positions first .. n-2 predict tokens first+1 .. n-1.
		for lo := first; lo < n-1; lo += perplexityRows {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			hi := min(n-1, lo+perplexityRows)
			rows := logits[:(hi-lo)*vocab]
			if err := sess.Extend(chunk[lo:hi], rows); err != nil {
				return nil, err
			}
			var rrows []float32
			if rsess != nil {
				rrows = rlogits[:(hi-lo)*vocab]
				if err := rsess.Extend(chunk[lo:hi], rrows); err != nil {
					return nil, err
				}
			}
			for j := 0; j < hi-lo; j++ {
				row := rows[j*vocab : (j+1)*vocab]
				lse := logSumExp(row)
				nll += lse - float64(row[chunk[lo+j+1]])
				res.Tokens++
				if rrows != nil {
					rrow := rrows[j*vocab : (j+1)*vocab]
					kls = append(kls, klDivergence(rrow, row, logSumExp(rrow), lse))
					if kernels.Argmax(rrow) == kernels.Argmax(row) {
						same++
					}
				}
			}
		}
	}
	res.Perplexity = math.Exp(nll / float64(res.Tokens))
	if math.IsNaN(res.Perplexity) || math.IsInf(res.Perplexity, 0) {
		return res, errors.New("the log-likelihood is not finite: the model produced NaN or infinite logits")
	}
	if ref != nil {
		var sum float64
		for _, k := range kls {
			sum += k
		}
		res.KLDivergence = sum / float64(len(kls))
		slices.Sort(kls)
		res.KLDivergenceP99 = kls[min(len(kls)-1, int(math.Ceil(0.99*float64(len(kls))))-1)]
		res.Top1Agreement = float64(same) / float64(len(kls))
	}
	return res, nil
}

// logSumExp returns log(Σ exp(x)) in float64.
func logSumExp(x []float32) float64 {
	m := float64(x[0])
	for _, v := range x {
		m = max(m, float64(v))
	}
	var s float64
	for _, v := range x {
		s += math.Exp(float64(v) - m)
	}
	return m + math.Log(s)
}

// klDivergence returns KL(p || q) = Σ p·(log p − log q) of the softmaxes of logits p and q
// (whose log-sum-exps are lp and lq).
func klDivergence(p, q []float32, lp, lq float64) float64 {
	var kl float64
	for i := range p {
		logP := float64(p[i]) - lp
		kl += math.Exp(logP) * (logP - (float64(q[i]) - lq))
	}
	return max(kl, 0)
}
