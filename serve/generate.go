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

// format is one endpoint's response shapes.
type format interface {
	// start is the first event of a stream (chat: the assistant role), or nil.
	start() any
	// piece is the event carrying generated text.
	piece(text string) any
	// end is the event carrying finish_reason (and anepack's figures).
	end(finish string, ex *extras) any
	// usage is the last event of a stream that asked for usage.
	usage(u *usage) any
	// full is the whole answer of a request that did not stream.
	full(text, finish string, u usage, ex *extras) any
}

// generate runs one validated request: it waits for a session, generates, and answers in fmt's
// shapes, streaming or not. Every way it can end is counted and logged: finished, refused (queue
// full), timed out, client gone, or failed.
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
	defer func() {
		if !released {
			sl.sess.Reset() // a panic left the session in an unknown state
			s.slots.release(sl)
		}
	}()

	var sse *sseWriter
	opts := pl.opts
	if pl.stream {
		sse = newSSE(w, rc, ctx)
		if ev := f.start(); ev != nil {
			if err := sse.send(ev); err != nil {
				released = true
				s.slots.release(sl)
				s.interrupted(w, r, rec, ctx, sse, errClientGone{err}, "starting the stream")
				return
			}
		}
		opts.OnText = func(text string) error {
			if err := sse.send(f.piece(text)); err != nil {
				return errClientGone{err}
			}
			return nil
		}
	}
	genStart := time.Now()
	res, err := sl.sess.Generate(ctx, prompt, opts)
	genTime := time.Since(genStart)
	released = true
	s.slots.release(sl)
	s.noteDuration(genTime)

	completion := len(res.Tokens)
	if res.Reason == runtime.StopEOS {
		completion++ // the end-of-sequence token was generated too (OpenAI and vLLM count it)
	}
	rec.completionTokens, rec.cachedTokens = completion, res.Reused
	if res.TTFT > 0 {
		rec.ttft = genStart.Sub(rec.start) + res.TTFT
	}
	s.stats.promptTokens.Add(uint64(len(prompt)))
	s.stats.completionTokens.Add(uint64(completion))
	if err != nil {
		s.interrupted(w, r, rec, ctx, sse, err, "generating")
		return
	}

	s.stats.generations.Add(1)
	finish := "stop"
	if res.Reason == runtime.StopLength || res.Reason == runtime.StopContext {
		finish = "length"
	}
	rec.finish = finish
	ex := &extras{
		QueueMS:                ms(rec.queue),
		TTFTMS:                 ms(rec.ttft),
		PrefillMS:              ms(res.Prefill),
		DecodeMS:               ms(res.Decode),
		GenerateMS:             ms(genTime),
		PrefillTokensPerSecond: round2(res.PrefillTokensPerSecond()),
		DecodeTokensPerSecond:  round2(res.DecodeTokensPerSecond()),
		StopReason:             string(res.Reason),
	}
	u := usage{PromptTokens: len(prompt), CompletionTokens: completion, TotalTokens: len(prompt) + completion,
		PromptDetails: &promptDetails{CachedTokens: res.Reused}}
	if !pl.stream {
		rc.SetWriteDeadline(time.Now().Add(writeStall))
		s.writeJSON(w, http.StatusOK, f.full(res.Text, finish, u, ex))
		return
	}
	err = sse.send(f.end(finish, ex))
	if err == nil && pl.includeUsage {
		err = sse.send(f.usage(&u))
	}
	if err == nil {
		err = sse.done()
	}
	if err != nil {
		rec.status, rec.errMsg = statusClientGone, err.Error()
	}
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
	case ctx.Err() != nil:
		s.stats.timedOut.Add(1)
		rec.finish = "timeout"
		e = newError(http.StatusGatewayTimeout, typeTimeout, "timeout", "the request did not finish within the server's timeout of %v (%s)", s.timeout, during)
	default:
		s.stats.failed.Add(1)
		rec.finish = "error"
		s.log.Error("generation failed", "request_id", rec.id, "err", err)
		e = newError(http.StatusInternalServerError, typeServer, "generation_failed", "generation failed: %v", err)
	}
	if sse == nil {
		s.writeError(w, rec, e)
		return
	}
	// The stream has begun with status 200: report the error as an event, as OpenAI does, and
	// log the status the client would have had.
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
