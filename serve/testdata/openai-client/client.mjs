// Drives the official openai npm client against an anerun server and prints what it got as
// one JSON document on stdout. serve/openai_client_test.go starts the server, runs this script
// and checks the result. Environment: ANEPACK_BASE_URL (e.g. http://127.0.0.1:8000/v1),
// ANEPACK_API_KEY, ANEPACK_MODEL, ANEPACK_PROMPT.
import OpenAI from "openai";
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

process.stdout.write(JSON.stringify(out) + "\n");
