// Package toolcall reads and writes tool calls the way model families write them, for the
// server's OpenAI tool calling:
//
//   - [Hermes]: <tool_call>{"name": ..., "arguments": {...}}</tool_call>, one block per call,
//     as Qwen2.5 and Qwen3 (and the Hermes models) are trained to answer; text may come before.
//   - [Llama3JSON]: {"name": ..., "parameters": {...}} as the whole answer, several separated by
//     ";", as Llama 3.1, 3.2 and 3.3 answer with JSON tool calling (an optional <|python_tag|>
//     first).
//
// [Parser] turns generated text, fed piece by piece as it streams, into content text and
// complete calls; a call that does not parse (bad JSON, no name, a missing closing tag) comes
// back as the text the model wrote, never as an error. [HarmonyParser] reads gpt-oss's harmony
// answers the same way and also separates the reasoning (the analysis channel) from the content. [Constrain] builds the grammar that
// forces a model to answer with calls in its family's form (tool_choice "required" or a named
// function), arguments matching each function's parameter schema.
package toolcall
