package serve

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/anepack/anepack/runtime"
	"github.com/anepack/anepack/serve/grammar"
	"github.com/anepack/anepack/serve/toolcall"
	"github.com/anepack/anepack/tokenizer"
)

// Defaults of Config's zero fields.
const (
	DefaultQueue        = 64
	DefaultTimeout      = 10 * time.Minute
	DefaultMaxBodyBytes = 1 << 20
	// DefaultAddr binds to the loopback interface only: serving other machines is a choice.
	DefaultAddr = "127.0.0.1:8000"
)

// Timeouts of the HTTP layer. Headers and bodies are small, so a client that takes longer to
// send them is stalled or hostile; idle keep-alive connections are closed after a while.
const (
	readHeaderTimeout = 10 * time.Second
	readBodyTimeout   = 30 * time.Second
	idleTimeout       = 2 * time.Minute
)

// Config configures a Server.
type Config struct {
	// Model is the loaded bundle; Backend runs it. The server shares both among its sessions and
	// closes neither.
	Model   *runtime.Model
	Backend runtime.Backend
	// ModelID is the id clients name in "model" and GET /v1/models lists. Empty means the
	// bundle's source repository (e.g. "Qwen/Qwen2.5-0.5B-Instruct"), else its model name.
	// Requests may also name the model by its manifest name or bundle file name.
	ModelID string
	// ServedModelNames, when not empty, are the only names requests may give as "model"
	// (vLLM's --served-model-name): the first is the one GET /v1/models lists and responses
	// report. It replaces ModelID and the bundle's own names.
	ServedModelNames []string
	// ToolCallParser is how the model writes tool calls: "hermes" (<tool_call> blocks: Qwen2.5,
	// Qwen3), "llama3_json" (Llama 3.x JSON calls), "none" (tools are refused unless
	// tool_choice is "none"), or "" to detect it from the chat template.
	ToolCallParser string
	// GrammarCache bounds the compiled response_format schemas and tool-call grammars kept; 0
	// means DefaultGrammarCache.
	GrammarCache int
	// GrammarWork bounds the recognizer steps a grammar may take to choose one token (Mask and
	// Accept); a request whose grammar needs more ends with a 400. 0 means grammar.MaxTokenWork.
	GrammarWork int64
	// Context is each session's context in tokens, prompt and completion together; 0 means
	// runtime.DefaultContext capped at the model's maximum.
	Context int
	// Parallel is how many generations run at once, each in its own session (KV cache); 0
	// means 1.
	Parallel int
	// PrefillChunk is the most prompt tokens one pass of the engine reads beside the running
	// generations' decode steps; 0 means DefaultPrefillChunk.
	PrefillChunk int
	// Queue is how many requests may wait for a session; more are refused with 429. 0 means
	// DefaultQueue; a negative value means none wait.
	Queue int
	// Timeout bounds each request from arrival to its last byte, waiting included; 0 means
	// DefaultTimeout.
	Timeout time.Duration
	// APIKey, when set, must be sent as "Authorization: Bearer KEY" on every endpoint but
	// /health.
	APIKey string
	// MaxBodyBytes bounds request bodies (413 beyond); 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Logger receives one access-log record per request and the server's own messages; nil
	// means slog.Default().
	Logger *slog.Logger
}

// Server serves the OpenAI API for one model. It implements http.Handler; Serve runs it on a
// listener until its context ends, then drains.
type Server struct {
	model   *runtime.Model
	backend runtime.Backend
	tok     *tokenizer.Tokenizer
	modelID string
	aliases []string // other names a request may give as "model"
	context int
	slots   *slots
	engine  *engine
	// stateBytes is what the sessions' states hold, as allocated (runtime.Session.StateBytes).
	stateBytes int64
	timeout    time.Duration
	apiKey     string
	maxBody    int64
	log        *slog.Logger
	created    int64

	stats    counters
	metrics  *metrics
	draining atomic.Bool
	// Constrained decoding: compiled grammars, and the vocabulary prepared once for them.
	grammars    *grammar.Cache
	grammarWork int64
	vocabOnce   sync.Once
	vocab       *grammar.Vocab
	toolFormat  toolcall.Format
	avgGen      atomic.Int64 // nanoseconds; see noteDuration
	// life is read-held by every request in progress and write-held by Close, which thereby
	// waits for them; closed (guarded by life) turns later requests away.
	life   sync.RWMutex
	closed bool
}

// New prepares a server: it loads the tokenizer and allocates Parallel sessions. It fails with
// a message naming the setting when one is out of range.
func New(cfg Config) (*Server, error) {
	if cfg.Model == nil || cfg.Backend == nil {
		return nil, errors.New("serve: Config.Model and Config.Backend are required")
	}
	switch {
	case cfg.Parallel < 0:
		return nil, fmt.Errorf("parallel is %d; expected a positive number of sessions", cfg.Parallel)
	case cfg.PrefillChunk < 0:
		return nil, fmt.Errorf("prefill chunk is %d tokens; expected a positive number", cfg.PrefillChunk)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("timeout is %v; expected a positive duration", cfg.Timeout)
	case cfg.MaxBodyBytes < 0:
		return nil, fmt.Errorf("max body size is %d bytes; expected a positive number", cfg.MaxBodyBytes)
	case cfg.GrammarCache < 0:
		return nil, fmt.Errorf("grammar cache of %d entries; expected a positive number", cfg.GrammarCache)
	case cfg.GrammarWork < 0:
		return nil, fmt.Errorf("grammar work of %d steps per token; expected a positive number", cfg.GrammarWork)
	case len(cfg.ServedModelNames) > 0 && cfg.ModelID != "":
		return nil, errors.New("give the model's names either as ModelID or as ServedModelNames, not both")
	}
	for i, n := range cfg.ServedModelNames {
		if strings.TrimSpace(n) == "" || slices.Contains(cfg.ServedModelNames[:i], n) {
			return nil, fmt.Errorf("served model name %q (number %d): expected distinct, non-empty names", n, i+1)
		}
	}
	// Every request without sampling fields takes these defaults: a bundle with invalid ones
	// is refused here, naming it, rather than failing each request as the client's fault.
	if err := cfg.Model.Generation().Check(); err != nil {
		return nil, fmt.Errorf("%s: the bundle's generation config is invalid: %w", cfg.Model.Name, err)
	}
	tok, err := cfg.Model.Tokenizer()
	if err != nil {
		return nil, err
	}
	s := &Server{model: cfg.Model, backend: cfg.Backend, tok: tok, timeout: cfg.Timeout,
		apiKey: cfg.APIKey, maxBody: cfg.MaxBodyBytes, log: cfg.Logger, created: time.Now().Unix(),
		metrics: newMetrics(), grammars: grammar.NewCache(cmp.Or(cfg.GrammarCache, DefaultGrammarCache)),
		grammarWork: cmp.Or(cfg.GrammarWork, grammar.MaxTokenWork)}
	switch cfg.ToolCallParser {
	case "", "auto":
		s.toolFormat = detectToolFormat(tok)
	default:
		if s.toolFormat, err = toolcall.ParseFormat(cfg.ToolCallParser); err != nil {
			return nil, err
		}
	}
	if s.timeout == 0 {
		s.timeout = DefaultTimeout
	}
	if s.maxBody == 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	s.modelID, s.aliases = modelNames(cfg)
	parallel := max(cfg.Parallel, 1)
	queue := cfg.Queue
	switch {
	case queue == 0:
		queue = DefaultQueue
	case queue < 0:
		queue = 0
	}
	all := make([]*slot, 0, parallel)
	for i := range parallel {
		sess, err := runtime.NewSession(cfg.Model, cfg.Backend, cfg.Context)
		if err != nil {
			for _, sl := range all {
				sl.sess.Close()
			}
			return nil, fmt.Errorf("session %d of %d: %w", i+1, parallel, err)
		}
		all = append(all, &slot{id: i, sess: sess})
		s.stateBytes += sess.StateBytes()
	}
	s.context = all[0].sess.Context()
	s.slots = newSlots(all, queue)
	chunk := cmp.Or(cfg.PrefillChunk, DefaultPrefillChunk)
	sb, err := runtime.NewSessionBatch(cfg.Backend, parallel+chunk, parallel, chunk)
	if err != nil {
		s.slots.close()
		return nil, err
	}
	s.engine = newEngine(sb)
	return s, nil
}

// modelNames returns the id to list and the other names a request may use.
func modelNames(cfg Config) (id string, aliases []string) {
	if len(cfg.ServedModelNames) > 0 {
		return cfg.ServedModelNames[0], cfg.ServedModelNames[1:]
	}
	man := cfg.Model.Manifest()
	var names []string
	for _, n := range []string{cfg.ModelID, man.Provenance.Repo, man.Model.Name,
		strings.TrimSuffix(filepath.Base(cfg.Model.Name), ".aneb")} {
		if n != "" && n != "." {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		names = []string{"model"}
	}
	return names[0], names[1:]
}

// ModelID returns the id the server lists in GET /v1/models.
func (s *Server) ModelID() string { return s.modelID }

// Context returns the context of each session, in tokens.
func (s *Server) Context() int { return s.context }

func (s *Server) knownModel(name string) bool {
	if name == s.modelID {
		return true
	}
	for _, a := range s.aliases {
		if name == a {
			return true
		}
	}
	return false
}

// Serve answers requests on ln until ctx ends, then shuts down gracefully: it stops accepting,
// lets every request in progress (queued ones included) finish, and returns. A request still
// running after drain has passed is cancelled (its client gets what was generated so far, or
// an error) and Serve returns once every handler has. drain <= 0 means the server's request
// timeout, which no request outlives anyway. Serve closes ln.
func (s *Server) Serve(ctx context.Context, ln net.Listener, drain time.Duration) error {
	base, cancelAll := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelAll()
	hs := &http.Server{
		Handler:           s,
		ReadHeaderTimeout: readHeaderTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    64 << 10,
		BaseContext:       func(net.Listener) context.Context { return base },
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	s.log.Info("serving", "addr", ln.Addr().String(), "model", s.modelID, "parallel", len(s.slots.all),
		"queue", s.slots.queue, "context", s.context, "auth", s.apiKey != "")

	select {
	case err := <-errc:
		return err // the listener failed
	case <-ctx.Done():
	}
	if drain <= 0 {
		drain = s.timeout
	}
	running, waiting := s.slots.counts()
	s.log.Info("shutting down: draining requests in progress", "running", running, "waiting", waiting, "drain", drain.String())
	s.draining.Store(true)
	dctx, cancel := context.WithTimeout(context.Background(), drain)
	defer cancel()
	err := hs.Shutdown(dctx)
	if err != nil {
		// Drain time is up: cancel every generation and close every connection.
		cancelAll()
		hs.Close()
		s.log.Warn("drain time is up: cancelled the requests still running")
	}
	// Wait for the handlers hs.Close abandoned: they return promptly once cancelled.
	s.life.Lock()
	s.life.Unlock()
	<-errc // Serve returned http.ErrServerClosed
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	s.log.Info("stopped")
	return nil
}

// Close releases the sessions. Call it after Serve has returned (or when the handler is no
// longer in use); requests arriving later are answered 503.
func (s *Server) Close() error {
	s.draining.Store(true)
	s.life.Lock()
	defer s.life.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return errors.Join(s.engine.close(), s.slots.close())
}
