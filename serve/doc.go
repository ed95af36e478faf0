// Package serve is anerun's OpenAI-compatible HTTP server: it loads a bundle once and answers
// the API the ecosystem speaks, so existing clients and tools work unchanged.
//
// # Endpoints
//
//   - POST /v1/chat/completions: messages (system, developer, user, assistant with its
//     tool_calls, tool with its tool_call_id; string content or text parts) rendered with the
//     bundle's own chat template, exactly as transformers' apply_chat_template(messages,
//     tools=..., add_generation_prompt=True) does.
//   - POST /v1/completions: a prompt string (or a batch of one) or an array of token ids.
//   - GET /v1/models and GET /v1/models/{id}: the one model (404 model_not_found for another).
//   - GET /health: {"status":"ok"} and the counters of [Stats]; 503 while shutting down.
//   - GET /metrics: the Prometheus text format (metrics.go lists what it holds).
//
// /health and /metrics need no API key (vLLM serves /metrics without its key too: scrapers
// and load balancers do not send one); every /v1 endpoint does.
//
// Both completion endpoints take model, stream (server-sent events ending with
// "data: [DONE]"), stream_options.include_usage, max_tokens or max_completion_tokens,
// temperature (0 to 2), top_p, stop (a string or up to 16 strings), seed, n (1 to 16),
// presence_penalty and frequency_penalty (-2 to 2, OpenAI's formula over the choice's own
// generated tokens) and, with vLLM's names, top_k, min_p, repetition_penalty and ignore_eos.
// Fields left out take the bundle's generation_config defaults, as transformers' generate
// would, not OpenAI's: a model packed without do_sample decodes greedily. The n choices run one
// after the other on one session (each after the first reuses the cached prompt); with a seed,
// choice i samples with seed+i. Chat completions also take tools, tool_choice,
// parallel_tool_calls, response_format (text, json_object, json_schema) and logprobs with
// top_logprobs (0 to 20); text completions take logprobs (0 to 20, the legacy shape).
// Log-probabilities are the model's raw ones (log_softmax of the logits, before temperature,
// penalties and masks), as vLLM reports by default. Fields that would change the answer in ways
// the server does not implement (logit_bias, echo, suffix, best_of other than n, functions)
// are refused with 400 rather than ignored.
//
// # Tool calls and structured output
//
// The model's tool-call form is detected by rendering its chat template with a probe tool
// (package toolcall): Hermes <tool_call> blocks for Qwen2.5 and Qwen3, Llama 3 JSON calls.
// Answers are parsed into message.tool_calls with finish_reason "tool_calls" and streamed as
// OpenAI's tool-call deltas; a call that does not parse comes back as content text. tool_choice
// "required" or a named function, and response_format json_object or json_schema, constrain the
// output with a grammar over the vocabulary (package grammar), so it always parses and
// validates, unless max_tokens cuts it short (finish_reason "length"), as with OpenAI. Stop
// strings do not apply to such an answer (the grammar ends it when it is complete), and a
// grammar that needs more than grammar.MaxTokenWork steps for one token ends the request
// with a 400.
//
// Answers have OpenAI's shapes, usage included (prompt_tokens_details.cached_tokens counts the
// prompt tokens found in the session's KV cache). anepack's own figures — queue time, time to
// first token, prefill and decode rates, the runtime's stop reason — are under "anepack" in
// the answer (and in each choice's finish chunk). Errors have OpenAI's shape
// {"error": {"message", "type", "param", "code"}}: 400 for bad JSON, a parameter out of range,
// a schema keyword the grammar does not support (naming it) or a prompt that does not fit the
// context; 401 for a missing or wrong API key; 404 for an unknown model (model_not_found) or
// path; 405 for a wrong method; 413 for a body over the limit; 429 with Retry-After when the
// queue is full; 504 when a request runs past its timeout (in a stream, which has already
// answered 200, the error arrives as an event before [DONE]).
//
// # Concurrency
//
// The server holds Parallel sessions, each with its own KV cache, over the one model (its
// weights are a read-only memory mapping) and the one backend. A request takes a free session
// — the one whose cache shares the longest prefix with its prompt, so a chat's next turn
// reuses its history — or waits in a bounded FIFO queue; beyond the queue it gets 429 at once.
// A request's context ends when its client disconnects or its timeout passes, and generation
// stops at the next token. Writes to a client that stops reading time out, so no client can
// hold a session forever.
//
// # Lifecycle
//
// [Server.Serve] answers on a listener until its context ends, then drains: the listener
// closes, /health reports 503, and every request in flight or in the queue finishes before
// Serve returns (or is cancelled when the drain time is up). Each request produces one
// structured access-log record (log/slog): request id, method, path, status, tokens, queue
// time, time to first token, duration and how it ended.
package serve
