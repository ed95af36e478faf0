// Drives the official openai npm client against an anerun server and prints what it got as
// one JSON document on stdout. serve/openai_client_test.go starts the server, runs this script
// and checks the result. Environment: ANEPACK_BASE_URL (e.g. http://127.0.0.1:8000/v1),
// ANEPACK_API_KEY, ANEPACK_MODEL, ANEPACK_PROMPT, ANEPACK_SCHEMA (a JSON Schema for the
// structured-output requests), ANEPACK_TOOLS (the tools of the tool-call requests).
// Structured outputs are validated with ajv, /metrics is parsed with
// parse-prometheus-text-format: checks nobody here wrote.
import OpenAI from "openai";
import Ajv from "ajv";
import parsePrometheusTextFormat from "parse-prometheus-text-format";
import { readFileSync } from "node:fs";

const env = (name) => {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
};

const client = new OpenAI({
  baseURL: env("ANEPACK_BASE_URL"),
  apiKey: env("ANEPACK_API_KEY"),
  maxRetries: 0,
  timeout: 60_000,
});
const model = env("ANEPACK_MODEL");
const prompt = env("ANEPACK_PROMPT");
// The version actually loaded, so the test can tell it is the pinned one.
const pkg = JSON.parse(readFileSync(new URL("./node_modules/openai/package.json", import.meta.url)));
const out = { client: "openai-node", version: pkg.version };

// GET /v1/models and /v1/models/{id}
const models = [];
for await (const m of client.models.list()) models.push(m.id);
out.models = models;
out.model = (await client.models.retrieve(model)).id;

// POST /v1/chat/completions
const messages = [
  { role: "system", content: "You are a helpful assistant." },
  { role: "user", content: prompt },
];
const chat = await client.chat.completions.create({
  model, messages, max_tokens: 8, temperature: 0,
});
out.chat = {
  id: chat.id,
  object: chat.object,
  content: chat.choices[0].message.content,
  role: chat.choices[0].message.role,
  finish_reason: chat.choices[0].finish_reason,
  usage: chat.usage,
  anepack: chat.anepack ?? null,
};

// Streaming chat with usage in the last chunk.
const stream = await client.chat.completions.create({
  model, messages, max_tokens: 8, temperature: 0, stream: true,
  stream_options: { include_usage: true },
});
let content = "";
let finish = null;
let usage = null;
let chunks = 0;
for await (const chunk of stream) {
  chunks++;
  if (chunk.usage) usage = chunk.usage;
  for (const c of chunk.choices) {
    content += c.delta?.content ?? "";
    if (c.finish_reason) finish = c.finish_reason;
  }
}
out.chat_stream = { content, finish_reason: finish, usage, chunks };

// POST /v1/completions, plain and streaming.
const comp = await client.completions.create({ model, prompt, max_tokens: 8, temperature: 0 });
out.completion = {
  id: comp.id, object: comp.object, text: comp.choices[0].text,
  finish_reason: comp.choices[0].finish_reason, usage: comp.usage,
};
const cstream = await client.completions.create({ model, prompt, max_tokens: 8, temperature: 0, stream: true });
let text = "";
let cfinish = null;
for await (const chunk of cstream) {
  for (const c of chunk.choices) {
    text += c.text;
    if (c.finish_reason) cfinish = c.finish_reason;
  }
}
out.completion_stream = { text, finish_reason: cfinish };

// An invalid request surfaces as the client's typed error.
try {
  await client.chat.completions.create({ model, messages, temperature: 5 });
  out.bad_request = { error: "no error was raised" };
} catch (e) {
  out.bad_request = {
    class: e?.constructor?.name, status: e.status, type: e.type, param: e.param, code: e.code,
    message: e.error?.message ?? null,
  };
}

// An unknown model: 404 model_not_found, as OpenAI answers.
try {
  await client.chat.completions.create({ model: "no-such-model", messages, max_tokens: 1 });
  out.not_found = { error: "no error was raised" };
} catch (e) {
  out.not_found = { class: e?.constructor?.name, status: e.status, type: e.type, param: e.param, code: e.code };
}

// Structured output: json_schema answers across seeds and temperatures, each validated by ajv.
const schema = JSON.parse(env("ANEPACK_SCHEMA"));
const ajv = new Ajv({ strict: true, allErrors: true });
const validate = ajv.compile(schema);
out.structured = [];
for (const [seed, temperature] of [[1, 0], [2, 0.7], [3, 1], [4, 1], [5, 1.3], [6, 1.6]]) {
  const r = await client.chat.completions.create({
    model, messages, max_tokens: 150, temperature, seed,
    response_format: { type: "json_schema", json_schema: { name: "person", schema, strict: true } },
  });
  const content = r.choices[0].message.content;
  let parsed = null, valid = false, errors = null;
  try {
    parsed = JSON.parse(content);
    valid = validate(parsed);
    errors = validate.errors;
  } catch (e) {
    errors = String(e);
  }
  out.structured.push({ finish_reason: r.choices[0].finish_reason, content, valid, errors });
}

// Tool calls: tool_choice "required", then the round trip (the assistant message as the client
// got it, and the tool's answer), then the same first request streamed through the client's
// own accumulator (chat.completions.stream), which must rebuild the same calls.
const tools = JSON.parse(env("ANEPACK_TOOLS"));
const toolMessages = [{ role: "user", content: "What is the weather in Paris?" }];
const first = await client.chat.completions.create({
  model, messages: toolMessages, tools, tool_choice: "required", parallel_tool_calls: false,
  max_tokens: 120, temperature: 0.8, seed: 9,
});
const assistant = first.choices[0].message;
out.tool_call = { finish_reason: first.choices[0].finish_reason, message: assistant };
const calls = assistant.tool_calls ?? [];
const second = await client.chat.completions.create({
  model, tools, max_tokens: 4, temperature: 0,
  messages: [...toolMessages, assistant, ...calls.map((c) => ({ role: "tool", tool_call_id: c.id, content: '{"temperature": 21}' }))],
});
out.tool_round_trip = { finish_reason: second.choices[0].finish_reason, prompt_tokens: second.usage.prompt_tokens };
const runner = client.chat.completions.stream({
  model, messages: toolMessages, tools, tool_choice: "required", parallel_tool_calls: false,
  max_tokens: 120, temperature: 0.8, seed: 9,
});
const final = await runner.finalChatCompletion();
out.tool_stream = { finish_reason: final.choices[0].finish_reason, message: final.choices[0].message };

// Log-probabilities on both endpoints, and n=2.
const lp = await client.chat.completions.create({ model, messages, max_tokens: 4, temperature: 0, logprobs: true, top_logprobs: 2 });
out.chat_logprobs = lp.choices[0].logprobs;
const clp = await client.completions.create({ model, prompt, max_tokens: 4, temperature: 0, logprobs: 2 });
out.completion_logprobs = clp.choices[0].logprobs;
const two = await client.chat.completions.create({ model, messages, max_tokens: 3, n: 2, seed: 3, temperature: 1 });
out.choices = two.choices.map((c) => c.index);

// Continuous batching: concurrent greedy streams, each of which must get exactly what it gets
// alone; the engine's counters before and after say how many sequences its passes held.
const base = env("ANEPACK_BASE_URL").replace(/\/v1\/?$/, "");
const batchCounters = async () => {
  const fams = parsePrometheusTextFormat(await (await fetch(base + "/metrics")).text());
  const value = (name) => Number(fams.find((f) => f.name === name).metrics[0].value);
  return { passes: value("anepack_batch_passes_total"), sequences: value("anepack_batch_sequences_total") };
};
const before = await batchCounters();
const batchPrompts = JSON.parse(env("ANEPACK_BATCH_PROMPTS"));
const texts = await Promise.all(batchPrompts.map(async (p) => {
  const st = await client.chat.completions.create({
    model, messages: [{ role: "user", content: p }], max_tokens: 16, temperature: 0, stream: true,
  });
  let text = "";
  for await (const chunk of st) text += chunk.choices[0]?.delta?.content ?? "";
  return text;
}));
const after = await batchCounters();
out.batch = { texts, passes: after.passes - before.passes, sequences: after.sequences - before.sequences };

// /metrics, without the API key, parsed by a Prometheus text-format parser.
const res = await fetch(base + "/metrics");
const families = parsePrometheusTextFormat(await res.text());
out.metrics = {
  status: res.status,
  content_type: res.headers.get("content-type"),
  families: families.map((f) => ({ name: f.name, type: f.type, metrics: f.metrics })),
};

process.stdout.write(JSON.stringify(out) + "\n");
