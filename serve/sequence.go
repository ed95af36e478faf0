package serve

import (
	"crypto/rand"
	"strings"
	"sync/atomic"
	"time"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/serve/grammar"
	"github.com/anepack/anepack/serve/toolcall"
)

// sequence is what belongs to one generated choice apart from the model's state: choosing each
// token from the logits (the grammar's mask, the sampler with its penalties over this choice's
// own tokens, log-probabilities) and reading the text it makes (content and tool calls). It
// never computes logits: pick takes them from whoever ran the model, so a scheduler that runs
// many sequences in one batched step can call pick for each.
type sequence struct {
	sampler *runtime.Sampler
	matcher *grammar.Matcher // nil: unconstrained
	mask    grammar.Mask
	// The mask of the next pick is computed on a goroutine of its own (startMask), never on
	// the engine's, which runs every generation's passes: maskDone is closed once it is ready,
	// and wake (the engine's poke) is called then.
	maskDone chan struct{}
	wake     func()
	param    string // the request field the grammar came from
	eos      []int
	// err ends the generation: the grammar needed more work for one token than it may have.
	err     error
	topN    int // log-probabilities: -1 none; else alternatives per token (0 to 20)
	lps     []tokenLogprob
	sentLP  int // lps[:sentLP] went out with an event
	parser  *toolcall.Parser
	calls   []toolCallOut
	content strings.Builder
	// For the inter-token latency histogram.
	metrics  *metrics
	lastPick time.Time
}

// event is one increment of a choice: content text or a piece of a tool call, with the
// log-probabilities of the tokens generated since the previous event.
type event struct {
	text string
	tool *toolCallDelta
	lp   []tokenLogprob
}

// newSequence prepares choice i of a request.
func (s *Server) newSequence(pl *plan, i int) (*sequence, error) {
	smp := pl.opts.Sampling
	smp.Seed = pl.seed(i)
	sampler, err := runtime.NewSampler(smp, s.model.Config.VocabSize)
	if err != nil {
		return nil, err
	}
	q := &sequence{sampler: sampler, topN: pl.logprobs, metrics: s.metrics}
	if pl.grammar != nil {
		v := s.grammarVocab()
		q.eos, q.param = s.eosIDs(pl), pl.grammarParam
		q.matcher = grammar.NewMatcher(pl.grammar, v, q.eos)
		q.matcher.SetBudget(s.grammarWork)
		q.mask = grammar.NewMask(v.Size())
	}
	if pl.tools.parses() {
		q.parser = toolcall.NewParser(s.toolFormat)
	}
	return q, nil
}

// begin starts computing the first mask, while the prompt runs; wake is called whenever a
// mask is ready.
func (q *sequence) begin(wake func()) {
	q.wake = wake
	if q.matcher != nil {
		q.startMask(-1)
	}
}

// startMask advances the grammar by the token just picked (none when accept < 0) and computes
// the next mask on a goroutine of its own: the work a grammar takes per token is its own
// request's time, not the engine's (which would hold every other generation's next token).
// The Matcher bounds that work (grammar.MaxTokenWork).
func (q *sequence) startMask(accept int) {
	done := make(chan struct{})
	q.maskDone = done
	go func() {
		if h := holdMask.Load(); h != nil {
			(*h)()
		}
		if accept >= 0 {
			q.matcher.Accept(accept)
		}
		q.matcher.Mask(q.mask)
		close(done)
		if q.wake != nil {
			q.wake()
		}
	}()
}

// holdMask, when set, runs before each mask is computed: tests hold a mask with it to show
// that the other generations go on meanwhile.
var holdMask atomic.Pointer[func()]

// ready reports whether pick can run without waiting for the grammar.
func (q *sequence) ready() bool {
	if q.matcher == nil || q.maskDone == nil {
		return true
	}
	select {
	case <-q.maskDone:
		return true
	default:
		return false
	}
}

// pick chooses the next token from the logits that follow history. With a grammar it waits
// for the mask (the engine calls it once ready reports true). When the grammar failed it
// records the error and returns an end-of-sequence id, so the generation ends there.
func (q *sequence) pick(logits []float32, history []int) int {
	var id int
	if q.matcher != nil {
		if q.maskDone == nil {
			q.startMask(-1)
		}
		<-q.maskDone
		if err := q.matcher.Err(); err != nil {
			q.err = badRequest(q.param, "invalid_value", "%s: %v", q.param, err)
			if len(q.eos) > 0 {
				return q.eos[0]
			}
			return 0 // not shown (push drops text after an error); the engine ends the job
		}
		id = q.sampler.SampleMasked(logits, history, runtime.Mask(q.mask))
		q.startMask(id)
	} else {
		id = q.sampler.Sample(logits, history)
	}
	if q.topN >= 0 {
		q.lps = append(q.lps, logprobsOf(logits, id, q.topN))
	}
	now := time.Now()
	if !q.lastPick.IsZero() && q.metrics != nil {
		q.metrics.interToken.observe(now.Sub(q.lastPick).Seconds())
	}
	q.lastPick = now
	return id
}

// push reads the next piece of generated text: content, and tool calls once complete.
func (q *sequence) push(text string) []event {
	if q.err != nil {
		return nil
	}
	if q.parser == nil {
		q.content.WriteString(text)
		return q.attach([]event{{text: text}})
	}
	return q.attach(q.events(q.parser.Push(text), nil))
}

// finish ends the text (held-back text becomes content, an unfinished call text) and returns
// the last events. An end-of-sequence token, which is not part of the output, is dropped from
// the log-probabilities.
func (q *sequence) finish(reason runtime.StopReason) []event {
	if reason == runtime.StopEOS && len(q.lps) > q.sentLP {
		q.lps = q.lps[:len(q.lps)-1]
	}
	if q.parser == nil {
		return nil
	}
	return q.attach(q.events(q.parser.Finish(), nil))
}

// unsent returns the log-probabilities no event carried yet (nil when none were asked for).
func (q *sequence) unsent() []tokenLogprob {
	if q.topN < 0 {
		return nil
	}
	lp := q.lps[q.sentLP:]
	if lp == nil {
		lp = []tokenLogprob{} // asked for: an empty list, not null
	}
	q.sentLP = len(q.lps)
	return lp
}

// attach gives the pending log-probabilities to the first event.
func (q *sequence) attach(ev []event) []event {
	if len(ev) > 0 && q.topN >= 0 {
		ev[0].lp = q.unsent()
	}
	return ev
}

// events turns the parser's output into content and tool-call events: a call becomes one
// event with its id and name, then one per piece of its arguments.
func (q *sequence) events(in []toolcall.Event, out []event) []event {
	for _, e := range in {
		if e.Call == nil {
			if e.Text != "" {
				q.content.WriteString(e.Text)
				out = append(out, event{text: e.Text})
			}
			continue
		}
		idx := len(q.calls)
		call := toolCallOut{ID: newCallID(), Type: "function", Function: functionCall{Name: e.Call.Name, Arguments: e.Call.Arguments}}
		q.calls = append(q.calls, call)
		out = append(out, event{tool: &toolCallDelta{Index: idx, ID: call.ID, Type: "function", Function: functionDelta{Name: call.Function.Name}}})
		for _, p := range e.Call.Pieces {
			out = append(out, event{tool: &toolCallDelta{Index: idx, Function: functionDelta{Arguments: p}}})
		}
	}
	return out
}

// finishReason is OpenAI's finish_reason for a choice: tool_calls when the model called tools
// (as vLLM reports it), length when it ran out of room, else stop.
func (q *sequence) finishReason(r runtime.StopReason) string {
	switch {
	case len(q.calls) > 0:
		return "tool_calls"
	case r == runtime.StopLength || r == runtime.StopContext:
		return "length"
	}
	return "stop"
}

// result is the whole choice, for an answer that does not stream.
func (q *sequence) result(i int, finish string) choiceResult {
	return choiceResult{index: i, text: q.content.String(), calls: q.calls, finish: finish, lp: q.lps, logprobs: q.topN >= 0}
}

// choiceResult is one finished choice.
type choiceResult struct {
	index    int
	text     string
	calls    []toolCallOut
	finish   string
	lp       []tokenLogprob
	logprobs bool // asked for
}

// newCallID makes a tool call id like OpenAI's: "call_" and 24 random letters and digits.
func newCallID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	var b [24]byte
	rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return "call_" + string(b[:])
}
