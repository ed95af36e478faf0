package serve

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"

	"github.com/anepack/anepack/runtime"
)

// Continuous batching. Decode reads every weight once per step, so the generations running at
// once share one step: the engine's goroutine runs a pass over all of them (runtime.SessionBatch)
// between tokens, and a new request's prompt joins those passes in chunks, so running streams
// keep flowing while it is read. Requests still hold a slot (a session, its KV cache) from
// acquire to release; the engine only decides what each pass runs. Choosing tokens (the
// sequence's sampler and log-probabilities) and reading their text happen on the engine's
// goroutine between passes. A grammar's mask is computed on a goroutine of the sequence's own
// while the passes go on: a generation whose mask is not ready when its logits are sits out
// the passes until it is, so an expensive grammar slows its own request only. Writing to the
// client happens on the request's own goroutine, so a slow client never holds up the others.

// DefaultPrefillChunk is the most prompt tokens a pass takes besides the decode steps: larger
// reads prompts faster, smaller keeps the running streams' inter-token time low.
const DefaultPrefillChunk = 64

// engine runs the passes of every generation in progress.
type engine struct {
	sb   *runtime.SessionBatch
	mu   sync.Mutex
	wake chan struct{} // buffered 1: something arrived
	in   []*job        // submitted, not yet running
	stop chan struct{}
	done chan struct{}
	// running is touched by the engine's goroutine only.
	running []*job
	active  atomic.Int64 // len(running), for metrics
	// For /metrics: passes run, and the sequences and tokens they held in all.
	passes, passSeqs, passTokens atomic.Uint64
}

// job is one generation: a session's prompt and the generator that continues it.
type job struct {
	ctx    context.Context
	sess   *runtime.Session
	prompt []int
	opts   runtime.GenerateOptions
	seq    *sequence
	gen    *runtime.Generator
	next   []int // what to run next: the rest of the prompt, or the token just picked
	one    [1]int
	queued int // tokens of next in the pass being built
	// decoding: the prompt has run and the generator picked a token; waiting: its logits are
	// ready and its grammar's mask is not; ended: it said stop; err: the generation failed (all
	// on the engine's goroutine).
	decoding, waiting, ended bool
	err                      error
	// cancelled is set by the request's goroutine when its client is gone.
	cancelled atomic.Bool

	mu     sync.Mutex
	events []event       // produced on the engine's goroutine, sent by the request's
	signal chan struct{} // buffered 1: events arrived
	done   chan struct{} // closed when res and err are final
	res    *runtime.Result
	resErr error
}

// newEngine starts the engine over sb.
func newEngine(sb *runtime.SessionBatch) *engine {
	e := &engine{sb: sb, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go e.loop()
	return e
}

// close stops the engine once no job is running, and releases its pass.
func (e *engine) close() error {
	close(e.stop)
	<-e.done
	return e.sb.Close()
}

// generate runs one generation of seq on sess through the engine and waits for it. send, when
// not nil, receives the events of the text as it is generated, on the caller's goroutine; an
// error from it (the client is gone) cancels the generation and is returned.
func (e *engine) generate(ctx context.Context, sess *runtime.Session, prompt []int, opts runtime.GenerateOptions, seq *sequence, send func([]event) error) (*runtime.Result, error) {
	j := &job{ctx: ctx, sess: sess, prompt: prompt, opts: opts, seq: seq,
		signal: make(chan struct{}, 1), done: make(chan struct{})}
	j.opts.Pick = seq.pick
	j.opts.OnText = func(text string) error {
		evs := seq.push(text)
		if send != nil && len(evs) > 0 {
			j.mu.Lock()
			j.events = append(j.events, evs...)
			j.mu.Unlock()
			select {
			case j.signal <- struct{}{}:
			default:
			}
		}
		return nil
	}
	seq.begin(e.poke)
	e.mu.Lock()
	e.in = append(e.in, j)
	e.mu.Unlock()
	e.poke()

	var sendErr error
	deliver := func() {
		j.mu.Lock()
		evs := j.events
		j.events = nil
		j.mu.Unlock()
		if len(evs) > 0 && sendErr == nil {
			if sendErr = send(evs); sendErr != nil {
				j.cancelled.Store(true)
				e.poke()
			}
		}
	}
	for {
		select {
		case <-j.signal:
			deliver()
			continue
		case <-j.done:
		}
		break
	}
	if send != nil {
		deliver() // what the last pass and Finish produced
	}
	if sendErr != nil {
		return j.res, errClientGone{sendErr}
	}
	return j.res, j.resErr
}

// poke wakes the engine.
func (e *engine) poke() {
	select {
	case e.wake <- struct{}{}:
	default:
	}
}

// loop runs passes while there is work, and sleeps otherwise.
func (e *engine) loop() {
	defer close(e.done)
	for {
		e.admit()
		if len(e.running) == 0 {
			select {
			case <-e.wake:
				continue
			case <-e.stop:
				return
			}
		}
		e.pass()
	}
}

// admit starts the jobs submitted since the last pass: a generator each, and the part of the
// prompt its session has not cached.
func (e *engine) admit() {
	e.mu.Lock()
	in := e.in
	e.in = nil
	e.mu.Unlock()
	for _, j := range in {
		n, err := e.start(j)
		if err != nil {
			var res *runtime.Result
			if j.gen != nil {
				res = j.gen.Result()
			}
			e.finish(j, res, err)
			continue
		}
		j.gen.Result().Reused = n
		j.next = j.prompt[n:]
		e.running = append(e.running, j)
	}
	e.active.Store(int64(len(e.running)))
}

// pass runs one step of every running generation: the decode steps first (one token each),
// then prompt chunks in arrival order while the pass has room; then each sequence whose logits
// are ready picks its next token, or ends.
func (e *engine) pass() {
	// Generations whose request is gone (cancelled, timed out, client gone) end here, between
	// tokens, with what they have.
	e.retire(func(j *job) (bool, error) {
		if j.cancelled.Load() || j.ctx.Err() != nil {
			j.gen.Cancel()
			return true, context.Cause(j.ctx)
		}
		return false, nil
	})
	if len(e.running) == 0 {
		return
	}
	e.pickReady()
	e.retire(func(j *job) (bool, error) { return j.ended || j.err != nil, j.err })
	for _, decoding := range []bool{true, false} {
		for _, j := range e.running {
			if j.decoding != decoding {
				continue
			}
			run := j.next[:min(len(j.next), e.sb.MaxStep(), e.sb.Room())]
			if len(run) == 0 {
				continue
			}
			if err := e.sb.Add(j.sess, run, len(run) == len(j.next)); err != nil {
				if !errors.Is(err, runtime.ErrBatchFull) {
					j.err = err
				}
				continue
			}
			j.queued = len(run)
		}
	}
	seqs, tokens := e.sb.Len(), 0
	for _, j := range e.running {
		tokens += j.queued
	}
	if seqs == 0 && e.anyWaiting() {
		<-e.wake // every generation waits for its grammar: sleep until a mask (or a request) comes
		return
	}
	runErr := e.run()
	if seqs > 0 {
		e.passes.Add(1)
		e.passSeqs.Add(uint64(seqs))
		e.passTokens.Add(uint64(tokens))
	}
	for _, j := range e.running {
		if j.queued == 0 {
			continue
		}
		n := j.queued
		j.queued = 0
		if runErr != nil {
			j.err = runErr
			continue
		}
		j.next = j.next[n:]
		j.waiting = len(j.next) == 0 // else more of the prompt to run
	}
	e.pickReady()
	e.retire(func(j *job) (bool, error) { return j.ended || j.err != nil, j.err })
}

// pickReady lets each generation whose logits are ready and whose mask is too pick its next
// token.
func (e *engine) pickReady() {
	for _, j := range e.running {
		if !j.waiting || !j.seq.ready() {
			continue
		}
		j.waiting = false
		id, more, err := e.next(j)
		if err == nil {
			err = j.seq.err
		}
		j.decoding = true
		switch {
		case err != nil:
			j.err = err
		case more:
			j.next = append(j.one[:0], id)
		default:
			j.ended = true
		}
	}
}

// anyWaiting reports whether a generation waits for its grammar's mask.
func (e *engine) anyWaiting() bool {
	for _, j := range e.running {
		if j.waiting {
			return true
		}
	}
	return false
}

// retire finishes and drops the running jobs for which end says so, with its error.
func (e *engine) retire(end func(j *job) (bool, error)) {
	keep := e.running[:0]
	for _, j := range e.running {
		if stop, err := end(j); stop {
			res, ferr := e.end(j)
			e.finish(j, res, errors.Join(err, ferr))
			continue
		}
		keep = append(keep, j)
	}
	clear(e.running[len(keep):])
	e.running = keep
	e.active.Store(int64(len(e.running)))
}

// finish completes a job: its result and error, for the request's goroutine.
func (e *engine) finish(j *job, res *runtime.Result, err error) {
	if res == nil {
		res = &runtime.Result{PromptTokens: len(j.prompt)}
	}
	j.res, j.resErr = res, err
	close(j.done)
}
