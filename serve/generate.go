package serve

import (
	"context"
	"errors"
	"math"
	"net/http"
	"time"

	"github.com/anepack/anepack/runtime"
)

// writeStall bounds how long one write to a client may block. A client that stops reading
// without closing the connection would otherwise hold a session until the request timeout.
const writeStall = 30 * time.Second

// errClientGone wraps a failed write to the client: the generation stops as if cancelled.
type errClientGone struct{ err error }

func (e errClientGone) Error() string { return "writing to the client: " + e.err.Error() }

// format is one endpoint's response shapes; i is a choice's index.
type format interface {
	// start is the first event of choice i's stream (chat: the assistant role), or nil.
	start(i int) any
	// delta is the event carrying an increment of choice i (text or a tool-call piece).
	delta(i int, e event) any
	// end is the event carrying choice i's finish_reason, the log-probabilities no delta
	// carried, and anepack's figures.
	end(i int, finish string, lp []tokenLogprob, ex *extras) any
	// usage is the last event of a stream that asked for usage.
	usage(u *usage) any
	// full is the whole answer of a request that did not stream.
	full(choices []choiceResult, u usage, ex *extras) any
}

// tally adds up the generations of a request's choices.
type tally struct {
	completion, computed, reused, steps int
	prefill, decode, gen, ttft          time.Duration
	reason                              runtime.StopReason
}

func (t *tally) add(res *runtime.Result, gen time.Duration) {
	n := len(res.Tokens)
	if res.Reason == runtime.StopEOS {
		n++ // the end-of-sequence token was generated too (OpenAI and vLLM count it)
	}
	t.completion += n
	t.computed += res.PromptTokens - res.Reused
	t.steps += res.DecodeSteps
	t.prefill += res.Prefill
	t.decode += res.Decode
	t.gen += gen
	t.reason = res.Reason
}

// extras returns anepack's figures for what the tally holds.
func (t *tally) extras(queue, ttft time.Duration) *extras {
	return &extras{
		QueueMS:                ms(queue),
		TTFTMS:                 ms(ttft),
		PrefillMS:              ms(t.prefill),
		DecodeMS:               ms(t.decode),
		GenerateMS:             ms(t.gen),
		PrefillTokensPerSecond: round2(perSecond(t.computed, t.prefill)),
		DecodeTokensPerSecond:  round2(perSecond(t.steps, t.decode)),
		StopReason:             string(t.reason),
	}
}

func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// generate runs one validated request: it waits for a session, generates pl.n choices one
// after the other on it (each after the first reuses the cached prompt) through the engine,
// which runs them in the same passes as every other generation in progress, and answers in
// f's shapes, streaming or not. Every way it can end is counted and logged: finished, refused
// (queue full), timed out, client gone, or failed.
func (s *Server) generate(w http.ResponseWriter, r *http.Request, rec *record, pl *plan, prompt []int, f format) {
	rec.stream, rec.promptTokens = pl.stream, len(prompt)
	ctx, cancel := context.WithDeadline(r.Context(), rec.start.Add(s.timeout))
	defer cancel()
	rc := http.NewResponseController(w)
	defer rc.SetWriteDeadline(time.Time{}) // the connection may serve another request

	waitStart := time.Now()
	sl, err := s.slots.acquire(ctx, prompt)
	rec.queue = time.Since(waitStart)
	if err != nil {
		if errors.Is(err, errQueueFull) {
			s.stats.rejected.Add(1)
			running, waiting := s.slots.counts()
			e := newError(http.StatusTooManyRequests, typeRateLimit, "queue_full",
				"the server is busy: %d generations are running and %d requests are waiting, the most it queues; retry later", running, waiting)
			e.retryAfter = s.retryAfter(waiting)
			s.writeError(w, rec, e)
			return
		}
		s.interrupted(w, r, rec, ctx, nil, err, "waiting for a free session")
		return
	}
	released := false
	release := func() {
		if !released {
			released = true
			s.slots.release(sl)
		}
	}
	defer func() {
		if !released {
			sl.sess.Reset() // a panic left the session in an unknown state
			release()
		}
	}()

	var sse *sseWriter
	if pl.stream {
		sse = newSSE(w, rc, ctx)
	}
	var t tally
	var results []choiceResult
	for i := range pl.n {
		seq, err := s.newSequence(pl, i)
		if err != nil {
			release()
			s.interrupted(w, r, rec, ctx, sse, err, "preparing the sampler")
			return
		}
		var send func([]event) error
		if sse != nil {
			send = func(evs []event) error {
				for _, e := range evs {
					if err := sse.send(f.delta(i, e)); err != nil {
						return err
					}
				}
				return nil
			}
		}
		if sse != nil {
			if ev := f.start(i); ev != nil {
				if err := sse.send(ev); err != nil {
					release()
					s.interrupted(w, r, rec, ctx, sse, errClientGone{err}, "starting the stream")
					return
				}
			}
		}
		genStart := time.Now()
		res, err := s.engine.generate(ctx, sl.sess, prompt, pl.opts, seq, send)
		genTime := time.Since(genStart)
		s.noteDuration(genTime)
		t.add(res, genTime)
		if i == 0 {
			rec.cachedTokens = res.Reused
			if res.TTFT > 0 {
				rec.ttft = genStart.Sub(rec.start) + res.TTFT
				s.metrics.ttft.observe(rec.ttft.Seconds())
			}
		}
		rec.completionTokens = t.completion
		if err != nil {
			release()
			s.countTokens(len(prompt), t.completion)
			s.interrupted(w, r, rec, ctx, sse, err, "generating")
			return
		}
		tail := seq.finish(res.Reason)
		finish := seq.finishReason(res.Reason)
		rec.finish = finish
		if sse == nil {
			results = append(results, seq.result(i, finish))
			continue
		}
		for _, e := range tail {
			if err = sse.send(f.delta(i, e)); err != nil {
				break
			}
		}
		var one tally
		one.add(res, genTime)
		ex := one.extras(rec.queue, rec.ttft)
		if err == nil {
			err = sse.send(f.end(i, finish, seq.unsent(), ex))
		}
		if err != nil {
			release()
			s.countTokens(len(prompt), t.completion)
			s.interrupted(w, r, rec, ctx, sse, errClientGone{err}, "streaming")
			return
		}
	}
	release()
	s.countTokens(len(prompt), t.completion)
	s.stats.generations.Add(1)
	u := usage{PromptTokens: len(prompt), CompletionTokens: t.completion, TotalTokens: len(prompt) + t.completion,
		PromptDetails: &promptDetails{CachedTokens: rec.cachedTokens}}
	if !pl.stream {
		rc.SetWriteDeadline(time.Now().Add(writeStall))
		s.writeJSON(w, http.StatusOK, f.full(results, u, t.extras(rec.queue, rec.ttft)))
		return
	}
	if pl.includeUsage {
		err = sse.send(f.usage(&u))
	}
	if err == nil {
		err = sse.done()
	}
	if err != nil {
		rec.status, rec.errMsg = statusClientGone, err.Error()
	}
}

// countTokens adds a request's tokens to the counters.
func (s *Server) countTokens(prompt, completion int) {
	s.stats.promptTokens.Add(uint64(prompt))
	s.stats.completionTokens.Add(uint64(completion))
}

// interrupted answers (when it still can) and accounts for a request that did not finish: the
// client went away, the request timed out, or generation failed. sse is the open stream, if any.
func (s *Server) interrupted(w http.ResponseWriter, r *http.Request, rec *record, ctx context.Context, sse *sseWriter, err error, during string) {
	var e *apiError
	var gone errClientGone
	switch {
	case r.Context().Err() != nil || errors.As(err, &gone):
		// The client disconnected, half-closed its side (shutdown(SHUT_WR): Go's server reads
		// that as gone and cancels the request), or the server was forced to stop. Returning
		// would let net/http send "200 OK" with an empty body, a success the client could
		// mistake for an empty answer; aborting closes the connection without a status (and a
		// stream without its final chunk), so the client sees the request fail.
		s.stats.cancelled.Add(1)
		rec.status, rec.finish, rec.errMsg = statusClientGone, "cancelled", "the client went away while "+during
		panic(http.ErrAbortHandler)
	case errors.As(err, &e):
		// The request's own fault, found while generating (its grammar needed more work per
		// token than it may have): answered as what it is, not as a server failure.
		rec.finish = "error"
	case ctx.Err() != nil:
		s.stats.timedOut.Add(1)
		rec.finish = "timeout"
		e = newError(http.StatusGatewayTimeout, typeTimeout, "timeout", "the request did not finish within the server's timeout of %v (%s)", s.timeout, during)
	default:
		s.stats.failed.Add(1)
		rec.finish = "error"
		s.log.Error("generation failed", "request_id", rec.id, "err", clip(err.Error()))
		e = newError(http.StatusInternalServerError, typeServer, "generation_failed", "generation failed: %v", err)
	}
	if sse == nil {
		s.writeError(w, rec, e)
		return
	}
	// The stream has begun with status 200: report the error as an event, as OpenAI does, and
	// log the status the client would have had.
	e.Message = clip(e.Message)
	rec.status, rec.errMsg = e.Status, e.Message
	if sse.send(errorBody{e}) == nil {
		sse.done()
	}
}

// noteDuration updates avgGen, an exponentially weighted average of generation times kept for
// Retry-After.
func (s *Server) noteDuration(d time.Duration) {
	for {
		old := s.avgGen.Load()
		next := int64(d)
		if old != 0 {
			next = old + (int64(d)-old)/8
		}
		if s.avgGen.CompareAndSwap(old, next) {
			return
		}
	}
}

// retryAfter estimates in whole seconds (1 to 60) when a session frees up for a new request:
// the waiting requests and one more, each taking the average generation time, spread over the
// sessions.
func (s *Server) retryAfter(waiting int) int {
	avg := time.Duration(s.avgGen.Load())
	est := avg.Seconds() * float64(waiting+1) / float64(len(s.slots.all))
	return int(min(max(math.Ceil(est), 1), 60))
}

func round2(v float64) float64 { return math.Round(v*100) / 100 }
