// Clients of `spade serve` through the official OpenAI Node SDK (npm package `openai`), all at once.
// Used by tests/apps/test_serve_cli.cpp, which copies this file next to its node_modules/openai.
// argv[2]: a JSON file {"baseURL", "apiKey", "calls": [{"name", "kind", "body"}]}; kinds:
//   chat, chat_stream, completion, completion_stream, models, error (a call expected to fail).
// Prints one JSON object {name: result} on stdout; a call that throws unexpectedly gives {"thrown": message}.
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';

const config = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const client = new OpenAI({ baseURL: config.baseURL, apiKey: config.apiKey, maxRetries: 0, timeout: 300000 });

async function run(call) {
  switch (call.kind) {
    case 'chat': {
      const r = await client.chat.completions.create(call.body);
      return {
        content: r.choices.map((c) => c.message.content), finish_reason: r.choices.map((c) => c.finish_reason),
        tool_calls: r.choices.map((c) => c.message.tool_calls ?? null), usage: r.usage, object: r.object,
        logprobs: r.choices.map((c) => c.logprobs),
      };
    }
    case 'chat_stream': {
      const stream = await client.chat.completions.create({ ...call.body, stream: true });
      const content = [], finish = [], roles = [];
      let chunks = 0, usage = null;
      for await (const chunk of stream) {
        chunks += 1;
        if (chunk.usage) usage = chunk.usage;
        for (const c of chunk.choices) {
          content[c.index] = (content[c.index] ?? '') + (c.delta.content ?? '');
          if (c.delta.role) roles[c.index] = c.delta.role;
          if (c.finish_reason) finish[c.index] = c.finish_reason;
        }
      }
      return { content, finish_reason: finish, roles, chunks, usage };
    }
    case 'completion': {
      const r = await client.completions.create(call.body);
      return { text: r.choices.map((c) => c.text), finish_reason: r.choices.map((c) => c.finish_reason), usage: r.usage };
    }
    case 'completion_stream': {
      const stream = await client.completions.create({ ...call.body, stream: true });
      const text = [], finish = [];
      for await (const chunk of stream)
        for (const c of chunk.choices) {
          text[c.index] = (text[c.index] ?? '') + c.text;
          if (c.finish_reason) finish[c.index] = c.finish_reason;
        }
      return { text, finish_reason: finish };
    }
    case 'models': {
      const ids = [];
      for await (const m of client.models.list()) ids.push(m.id);
      return { ids };
    }
    case 'error': {
      try {
        await client.chat.completions.create(call.body);
        return { status: 200 };
      } catch (e) {
        return { status: e.status ?? null, code: e.code ?? null, param: e.param ?? null, type: e.type ?? null, message: e.message };
      }
    }
    default:
      throw new Error(`unknown kind ${call.kind}`);
  }
}

const results = {};
await Promise.all(config.calls.map(async (call) => {
  try {
    results[call.name] = await run(call);
  } catch (e) {
    results[call.name] = { thrown: String(e && e.message ? e.message : e) };
  }
}));
console.log(JSON.stringify(results));
