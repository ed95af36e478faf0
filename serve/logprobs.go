package serve

import (
	"math"
	"strings"
	"unicode/utf8"

	"github.com/anepack/anepack/tokenizer"
)

// maxLogprobs bounds top_logprobs (OpenAI's limit) and the legacy logprobs (vLLM's default
// max_logprobs).
const maxLogprobs = 20

// tokenLogprob is the log-probability of one generated token and of the most likely tokens at
// its position.
type tokenLogprob struct {
	id      int
	logprob float32
	top     []idLogprob // most likely first
}

type idLogprob struct {
	id      int
	logprob float32
}

// logprobsOf returns the log-probability of id under the model's raw distribution at this
// step, log_softmax(logits), and the top alternatives. It is what vLLM reports by default
// (its raw_logprobs mode): the model's own probabilities, before temperature, penalties, top-k,
// top-p and a grammar's mask change the draw, so they say how likely the model found a token,
// not how it was sampled. One pass finds the maximum, one sums the exponentials, and the top
// ones are kept in a small sorted list while scanning.
func logprobsOf(logits []float32, id, top int) tokenLogprob {
	m := float32(math.Inf(-1))
	for _, v := range logits {
		m = max(m, v)
	}
	var sum float64
	for _, v := range logits {
		sum += math.Exp(float64(v - m))
	}
	norm := float64(m) + math.Log(sum)
	lp := func(v float32) float32 { return float32(float64(v) - norm) }
	out := tokenLogprob{id: id, logprob: lp(logits[id])}
	if top <= 0 {
		return out
	}
	best := make([]idLogprob, 0, top+1)
	for i, v := range logits {
		if len(best) == top && v <= best[top-1].logprob {
			continue
		}
		// Insert in order (larger first; equal values keep the lower id first).
		j := len(best)
		best = append(best, idLogprob{})
		for j > 0 && best[j-1].logprob < v {
			best[j] = best[j-1]
			j--
		}
		best[j] = idLogprob{i, v}
		if len(best) > top {
			best = best[:top]
		}
	}
	for k := range best {
		best[k].logprob = lp(best[k].logprob)
	}
	out.top = best
	return out
}

// tokenText returns a token's text as the API shows it: its bytes, with bytes that are not
// UTF-8 on their own (a character split across tokens) as U+FFFD; the exact bytes go in "bytes".
func tokenText(tok *tokenizer.Tokenizer, id int) (string, []int) {
	b := tok.TokenBytes(id)
	ints := make([]int, len(b))
	for i, c := range b {
		ints[i] = int(c)
	}
	s := string(b)
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	return s, ints
}

// logprobEntry is one token of a chat completion's logprobs.content.
type logprobEntry struct {
	Token       string       `json:"token"`
	Logprob     float64      `json:"logprob"`
	Bytes       []int        `json:"bytes"`
	TopLogprobs []topLogprob `json:"top_logprobs"`
}

type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

// chatLogprobs is a chat choice's "logprobs" object.
type chatLogprobs struct {
	Content []logprobEntry `json:"content"`
	Refusal []logprobEntry `json:"refusal"`
}

// chatLogprobsOf shapes log-probabilities the way chat completions return them.
func chatLogprobsOf(tok *tokenizer.Tokenizer, lps []tokenLogprob) *chatLogprobs {
	out := &chatLogprobs{Content: make([]logprobEntry, 0, len(lps))}
	for _, lp := range lps {
		text, b := tokenText(tok, lp.id)
		e := logprobEntry{Token: text, Logprob: float64(lp.logprob), Bytes: b, TopLogprobs: make([]topLogprob, 0, len(lp.top))}
		for _, t := range lp.top {
			tt, tb := tokenText(tok, t.id)
			e.TopLogprobs = append(e.TopLogprobs, topLogprob{Token: tt, Logprob: float64(t.logprob), Bytes: tb})
		}
		out.Content = append(out.Content, e)
	}
	return out
}

// textLogprobs is a text completion's legacy "logprobs" object.
type textLogprobs struct {
	Tokens        []string        `json:"tokens"`
	TokenLogprobs []float64       `json:"token_logprobs"`
	TopLogprobs   []orderedFloats `json:"top_logprobs"`
	TextOffset    []int           `json:"text_offset"`
}

// orderedFloats is a JSON object of token -> logprob in the order given (most likely first);
// a token text that occurs twice keeps its first (larger) value.
type orderedFloats struct {
	keys []string
	vals []float64
}

// MarshalJSON writes the object in order.
func (o orderedFloats) MarshalJSON() ([]byte, error) {
	var b strings.Builder
	b.WriteByte('{')
	for i, k := range o.keys {
		if i > 0 {
			b.WriteByte(',')
		}
		kb, err := marshal(k)
		if err != nil {
			return nil, err
		}
		vb, err := marshal(o.vals[i])
		if err != nil {
			return nil, err
		}
		b.Write(kb)
		b.WriteByte(':')
		b.Write(vb)
	}
	b.WriteByte('}')
	return []byte(b.String()), nil
}

// textLogprobsOf shapes log-probabilities the legacy way; offset is the completion text's
// length in characters before the first token (for text_offset), and the new offset is
// returned. Each top_logprobs entry also holds the sampled token, as OpenAI's legacy API and
// vLLM do, so there may be logprobs+1 entries.
func textLogprobsOf(tok *tokenizer.Tokenizer, lps []tokenLogprob, offset int) (*textLogprobs, int) {
	out := &textLogprobs{Tokens: []string{}, TokenLogprobs: []float64{}, TopLogprobs: []orderedFloats{}, TextOffset: []int{}}
	for _, lp := range lps {
		text, _ := tokenText(tok, lp.id)
		out.Tokens = append(out.Tokens, text)
		out.TokenLogprobs = append(out.TokenLogprobs, float64(lp.logprob))
		out.TextOffset = append(out.TextOffset, offset)
		offset += utf8.RuneCountInString(text)
		var top orderedFloats
		add := func(id int, v float32) {
			t, _ := tokenText(tok, id)
			for _, k := range top.keys {
				if k == t {
					return
				}
			}
			top.keys = append(top.keys, t)
			top.vals = append(top.vals, float64(v))
		}
		for _, t := range lp.top {
			add(t.id, t.logprob)
		}
		add(lp.id, lp.logprob)
		out.TopLogprobs = append(out.TopLogprobs, top)
	}
	return out, offset
}
