package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/anepack/anepack/internal/cli"
	"github.com/anepack/anepack/serve"
)

// serveFlags are the flags of `anerun serve`; the root command's --http shortcut uses their
// defaults with its own model flags.
type serveFlags struct {
	model     modelFlags
	addr      string
	host      string // --host and --port, llama-server's spelling of --addr
	port      int
	apiKey    string
	modelName string
	served    []string // --served-model-name, repeatable and comma-separated
	toolCalls string   // --tool-call-parser
	parallel  int
	prefill   int // --prefill-chunk
	queue     int
	timeout   time.Duration
	drain     time.Duration
	maxBody   int64
	logFormat string
}

// defaultParallel is --parallel's default: the generations that share each decode pass (see
// serve's engine). More cost little while idle (a KV cache's pages are touched as it fills)
// and keep one long generation from holding up every short one.
const defaultParallel = 4

// apiKeyEnv names the environment variable that supplies --api-key's default, so the key need
// not appear in the process list. It is read when serve runs, not made the flag's default,
// which --help would print.
const apiKeyEnv = "ANERUN_API_KEY"

func defaultServeFlags() serveFlags {
	return serveFlags{addr: serve.DefaultAddr, parallel: defaultParallel, queue: serve.DefaultQueue,
		timeout: serve.DefaultTimeout, maxBody: serve.DefaultMaxBodyBytes, logFormat: "text", toolCalls: "auto"}
}

func newServeCmd() *cobra.Command {
	f := defaultServeFlags()
	cmd := &cobra.Command{
		Use:   "serve MODEL [--addr 127.0.0.1:8000 | --host H --port P] [--api-key KEY] [--parallel N]",
		Short: "Serve the model over the OpenAI HTTP API",
		Long: `serve loads the bundle once and answers the OpenAI API, so OpenAI clients and tools work
unchanged (point them at http://ADDR/v1):

  POST /v1/chat/completions   messages through the model's chat template; "stream": true for SSE;
                              tools, response_format (json_object, json_schema), logprobs, n
  POST /v1/completions        a prompt string or an array of token ids
  GET  /v1/models             the model's id (--served-model-name, else the bundle's source repo or name)
  GET  /health                {"status":"ok", ...} (no API key needed)
  GET  /metrics               Prometheus text format (no API key needed, as vLLM)

MODEL is what anerun MODEL "prompt" takes: a model id (Org/Name), a stored name, a bundle file
or a reference. It listens on the loopback interface unless --addr (or --host) names another. With --api-key (or $` + apiKeyEnv + `)
every request but /health must send "Authorization: Bearer KEY". --parallel generations run at
once, each with its own KV cache of --ctx tokens, decoding together: one pass over the weights
per step serves all of them (continuous batching), and a new request's prompt joins those
passes in chunks of --prefill-chunk tokens. Up to --queue more requests wait, and beyond that
clients get 429 with Retry-After. A client that disconnects cancels its generation.
SIGINT or SIGTERM stops accepting, lets requests in progress finish (at most --drain), and
exits; a second signal exits at once. One access-log line per request goes to stderr.`,
		Example: `  anerun serve Qwen/Qwen2.5-0.5B-Instruct
  anerun serve Qwen/Qwen2.5-0.5B-Instruct --port 8080
  anerun serve Qwen2.5-0.5B-Instruct.aneb --host 0.0.0.0 --port 8000 --api-key "$KEY" --parallel 4
  curl http://127.0.0.1:8000/v1/chat/completions -H 'Content-Type: application/json' \
    -d '{"model":"Qwen/Qwen2.5-0.5B-Instruct","messages":[{"role":"user","content":"Hi"}]}'`,
		Args: cli.Args(0, "MODEL"),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := f.hostPort(cmd); err != nil {
				return err
			}
			if !cmd.Flags().Changed("api-key") {
				f.apiKey = os.Getenv(apiKeyEnv)
			}
			return runServe(cmd, args[0], &f)
		},
	}
	f.model.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.addr, "addr", f.addr, "address to listen on (host:port; a bare port means 127.0.0.1)")
	fl.StringVar(&f.host, "host", "", "host or IP to listen on, with --port (instead of --addr; default 127.0.0.1)")
	fl.IntVar(&f.port, "port", 0, "port to listen on, with --host (instead of --addr; default 8000)")
	fl.StringVar(&f.apiKey, "api-key", "", "require this Bearer key on every request but /health (default: $"+apiKeyEnv+")")
	fl.StringVar(&f.modelName, "model-name", "", "the model id clients send and /v1/models lists, besides the bundle's own names (default: the bundle's source repo or model name)")
	fl.StringSliceVar(&f.served, "served-model-name", nil, "the only names clients may send as model (repeatable or comma-separated); the first is listed and reported")
	fl.StringVar(&f.toolCalls, "tool-call-parser", "auto", "how the model writes tool calls: auto (from the chat template), hermes (Qwen2.5/Qwen3), llama3_json, or none")
	fl.IntVar(&f.parallel, "parallel", f.parallel, "generations that run at once, each with its own KV cache, decoding in shared passes")
	fl.IntVar(&f.prefill, "prefill-chunk", serve.DefaultPrefillChunk, "most prompt tokens a pass reads beside the running generations' decode steps (larger: faster prompts; smaller: steadier streams)")
	fl.IntVar(&f.queue, "queue", f.queue, "requests that may wait for a free generation slot (beyond: 429)")
	fl.DurationVar(&f.timeout, "timeout", f.timeout, "longest time a request may take, waiting included")
	fl.DurationVar(&f.drain, "drain", 0, "on SIGINT/SIGTERM, how long requests in progress may still run (0: --timeout)")
	fl.Int64Var(&f.maxBody, "max-body", f.maxBody, "largest request body in bytes (beyond: 413)")
	fl.StringVar(&f.logFormat, "log-format", f.logFormat, "access log format on stderr: text or json")
	return cmd
}

// hostPort folds --host and --port into --addr, refusing a mix of the two spellings.
func (f *serveFlags) hostPort(cmd *cobra.Command) error {
	changed := cmd.Flags().Changed
	if !changed("host") && !changed("port") {
		return nil
	}
	if changed("addr") {
		return errors.New("give --addr or --host/--port, not both")
	}
	host, port, err := net.SplitHostPort(serve.DefaultAddr)
	if err != nil {
		return err
	}
	if changed("host") {
		if host = f.host; host == "" {
			return errors.New("--host: expected a host name or IP address")
		}
	}
	if changed("port") {
		if f.port < 0 || f.port > 65535 {
			return fmt.Errorf("--port %d: expected 0 to 65535", f.port)
		}
		port = strconv.Itoa(f.port)
	}
	f.addr = net.JoinHostPort(host, port)
	return nil
}

// serveShortcut runs `anerun MODEL.aneb --http PORT`: the server with serve's defaults and the
// root command's model flags (--backend, --threads, --ctx). PORT may also be host:port.
func serveShortcut(cmd *cobra.Command, args []string, port string, mf *modelFlags) error {
	if len(args) != 1 {
		return fmt.Errorf("--http serves the model over HTTP and takes no prompt; got %d arguments", len(args))
	}
	f := defaultServeFlags()
	f.model = *mf
	f.addr = port
	f.apiKey = os.Getenv(apiKeyEnv)
	return runServe(cmd, args[0], &f)
}

// listenAddr turns --addr (or --http) into host:port: a bare port binds to loopback only.
func listenAddr(v string) (string, error) {
	if n, err := strconv.Atoi(v); err == nil {
		if n < 0 || n > 65535 {
			return "", fmt.Errorf("port %d: expected 0 to 65535", n)
		}
		return net.JoinHostPort("127.0.0.1", v), nil
	}
	if _, _, err := net.SplitHostPort(v); err != nil {
		return "", fmt.Errorf("address %q: expected host:port or a port number", v)
	}
	return v, nil
}

// runServe loads the bundle and serves it until SIGINT or SIGTERM, then drains and returns.
func runServe(cmd *cobra.Command, path string, f *serveFlags) error {
	addr, err := listenAddr(f.addr)
	if err != nil {
		return fmt.Errorf("--addr: %w", err)
	}
	switch {
	case f.parallel < 1:
		return fmt.Errorf("--parallel %d: expected at least 1", f.parallel)
	case f.queue < 0:
		return fmt.Errorf("--queue %d: expected 0 or more", f.queue)
	case f.timeout <= 0:
		return fmt.Errorf("--timeout %v: expected a positive duration", f.timeout)
	case f.drain < 0:
		return fmt.Errorf("--drain %v: expected 0 or a positive duration", f.drain)
	case f.maxBody < 1:
		return fmt.Errorf("--max-body %d: expected a positive number of bytes", f.maxBody)
	case len(f.served) > 0 && f.modelName != "":
		return errors.New("--model-name and --served-model-name both name the model: give one of them")
	}
	switch f.toolCalls {
	case "auto", "hermes", "llama3_json", "none":
	default:
		return fmt.Errorf("--tool-call-parser %q: expected auto, hermes, llama3_json or none", f.toolCalls)
	}
	var handler slog.Handler
	switch f.logFormat {
	case "text":
		handler = slog.NewTextHandler(cmd.ErrOrStderr(), nil)
	case "json":
		handler = slog.NewJSONHandler(cmd.ErrOrStderr(), nil)
	default:
		return fmt.Errorf("--log-format %q: expected text or json", f.logFormat)
	}
	log := slog.New(handler)

	l, err := load(path, &f.model)
	if err != nil {
		return err
	}
	defer l.Close()
	queue := f.queue
	if queue == 0 {
		queue = -1 // serve.Config: negative means no waiting; 0 would mean its default
	}
	srv, err := serve.New(serve.Config{Model: l.model, Backend: l.backend, ModelID: f.modelName, ServedModelNames: f.served,
		ToolCallParser: f.toolCalls, Context: f.model.ctx,
		Parallel: f.parallel, PrefillChunk: f.prefill, Queue: queue, Timeout: f.timeout, APIKey: f.apiKey, MaxBodyBytes: f.maxBody, Logger: log})
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--addr %s: %w", addr, err)
	}
	if host, _, _ := net.SplitHostPort(ln.Addr().String()); f.apiKey == "" && !isLoopback(host) {
		log.Warn("listening beyond this machine without --api-key: anyone who can reach the address can use the model", "addr", ln.Addr().String())
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop() // the next signal is not caught: it ends the process at once
	}()
	err = srv.Serve(ctx, ln, f.drain)
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return err
	}
	return nil
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
