package serve

import "encoding/json"

// The JSON documents of the OpenAI API that the server answers with. Field names and nesting
// follow https://platform.openai.com/docs/api-reference; what anepack adds (timings) lives under
// the one field "anepack" so that it cannot collide with a future OpenAI field.

// usage counts tokens like OpenAI: prompt, completion (every sampled token, an end-of-sequence
// token included) and their sum. PromptDetails.CachedTokens is how many prompt tokens were found
// in the slot's KV cache and not computed again.
type usage struct {
	PromptTokens     int            `json:"prompt_tokens"`
	CompletionTokens int            `json:"completion_tokens"`
	TotalTokens      int            `json:"total_tokens"`
	PromptDetails    *promptDetails `json:"prompt_tokens_details,omitempty"`
}

type promptDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// extras are anepack's own figures for one request, sent as "anepack" in the response (and in
// the last chunk of a stream). Times are in milliseconds.
type extras struct {
	// QueueMS is the time spent waiting for a free slot.
	QueueMS float64 `json:"queue_ms"`
	// TTFTMS is the time from the request's arrival to its first generated token.
	TTFTMS float64 `json:"ttft_ms"`
	// PrefillMS is the time to compute the prompt's uncached tokens; DecodeMS the time of the
	// decode steps after the first token.
	PrefillMS float64 `json:"prefill_ms"`
	DecodeMS  float64 `json:"decode_ms"`
	// GenerateMS is the whole time spent in the runtime's Generate; the rest of a request's
	// time is waiting (QueueMS) and the server's own work (parsing, tokenizing, encoding).
	GenerateMS float64 `json:"generate_ms"`
	// PrefillTokensPerSecond counts the prompt tokens computed (not reused from the cache).
	PrefillTokensPerSecond float64 `json:"prefill_tokens_per_second"`
	// DecodeTokensPerSecond counts decode steps (one forward pass per generated token).
	DecodeTokensPerSecond float64 `json:"decode_tokens_per_second"`
	// StopReason is the runtime's reason: eos, stop, length or context.
	StopReason string `json:"stop_reason"`
}

// chatMessageOut is the assistant message of a chat completion. Content is null when the
// model only called tools.
type chatMessageOut struct {
	Role      string        `json:"role"`
	Content   *string       `json:"content"`
	ToolCalls []toolCallOut `json:"tool_calls,omitempty"`
}

// toolCallOut is one tool call of an assistant message.
type toolCallOut struct {
	ID       string       `json:"id"`
	Type     string       `json:"type"` // "function"
	Function functionCall `json:"function"`
}

// functionCall is the function a tool call names, with its arguments as a JSON text.
type functionCall struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// toolCallDelta is a streamed piece of a tool call, as OpenAI streams them: the first piece of
// call Index carries its id, type and name (arguments ""), the following ones pieces of the
// arguments.
type toolCallDelta struct {
	Index    int           `json:"index"`
	ID       string        `json:"id,omitempty"`
	Type     string        `json:"type,omitempty"`
	Function functionDelta `json:"function"`
}

type functionDelta struct {
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments"`
}

type chatChoice struct {
	Index        int            `json:"index"`
	Message      chatMessageOut `json:"message"`
	Logprobs     *chatLogprobs  `json:"logprobs"`
	FinishReason string         `json:"finish_reason"`
}

// chatCompletion is the answer to a non-streaming POST /v1/chat/completions.
type chatCompletion struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"` // "chat.completion"
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []chatChoice `json:"choices"`
	Usage   usage        `json:"usage"`
	Anepack *extras      `json:"anepack,omitempty"`
}

// chatDelta is the increment of a streamed chat message: the role in the first chunk, then
// content pieces or tool-call pieces, then nothing in the chunk that carries finish_reason.
type chatDelta struct {
	Role      string          `json:"role,omitempty"`
	Content   *string         `json:"content,omitempty"`
	ToolCalls []toolCallDelta `json:"tool_calls,omitempty"`
}

type chatChunkChoice struct {
	Index        int           `json:"index"`
	Delta        chatDelta     `json:"delta"`
	Logprobs     *chatLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

// chatChunk is one server-sent event of a streaming chat completion. With
// stream_options.include_usage, every chunk carries "usage": null and one last chunk with no
// choices carries the usage; without it the field is absent.
type chatChunk struct {
	ID      string            `json:"id"`
	Object  string            `json:"object"` // "chat.completion.chunk"
	Created int64             `json:"created"`
	Model   string            `json:"model"`
	Choices []chatChunkChoice `json:"choices"`
	Usage   optionalUsage     `json:"usage,omitzero"`
	Anepack *extras           `json:"anepack,omitempty"`
}

type textChoice struct {
	Index        int           `json:"index"`
	Text         string        `json:"text"`
	Logprobs     *textLogprobs `json:"logprobs"`
	FinishReason *string       `json:"finish_reason"`
}

// textCompletion is the answer to POST /v1/completions and, with object "text_completion"
// too (as OpenAI does), each chunk of its stream.
type textCompletion struct {
	ID      string        `json:"id"`
	Object  string        `json:"object"` // "text_completion"
	Created int64         `json:"created"`
	Model   string        `json:"model"`
	Choices []textChoice  `json:"choices"`
	Usage   optionalUsage `json:"usage,omitzero"`
	Anepack *extras       `json:"anepack,omitempty"`
}

// optionalUsage encodes as absent (the zero value: omitzero), as null (Null set: a stream chunk
// of a request with include_usage) or as the usage object.
type optionalUsage struct {
	Null  bool
	Usage *usage
}

// IsZero reports whether the field is left out of the JSON.
func (u optionalUsage) IsZero() bool { return !u.Null && u.Usage == nil }

// MarshalJSON writes null or the usage object.
func (u optionalUsage) MarshalJSON() ([]byte, error) {
	if u.Usage == nil {
		return []byte("null"), nil
	}
	return marshal(u.Usage)
}

// UnmarshalJSON reads null or a usage object (for clients of these types, such as tests).
func (u *optionalUsage) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*u = optionalUsage{Null: true}
		return nil
	}
	*u = optionalUsage{Usage: new(usage)}
	return json.Unmarshal(b, u.Usage)
}

// modelObject is one entry of GET /v1/models.
type modelObject struct {
	ID      string `json:"id"`
	Object  string `json:"object"` // "model"
	Created int64  `json:"created"`
	OwnedBy string `json:"owned_by"`
	// Anepack describes the bundle behind the id.
	Anepack *modelExtras `json:"anepack,omitempty"`
}

type modelExtras struct {
	Architecture string `json:"architecture"`
	DType        string `json:"dtype"`
	Context      int    `json:"context"`  // tokens per request (prompt and completion)
	Parallel     int    `json:"parallel"` // generations that run at once
	Backend      string `json:"backend"`
}

type modelList struct {
	Object string        `json:"object"` // "list"
	Data   []modelObject `json:"data"`
}
