// Reads UI message streams and UIMessages the way the `ai` package does, and reports
// what it finds: the chunks against the package's own `uiMessageChunkSchema` (through
// `parseJsonEventStream`, what `DefaultChatTransport` reads a response with), the
// UIMessage `readUIMessageStream` builds from them, and `validateUIMessages` on it and
// on every rendered history. Driven by tests/test_js_vercel.py.
//
// stdin: {"streams": [{"name", "sdk": 5|6|7, "frames": [data, ...], "message"?: UIMessage}],
//         "messages": [{"name", "sdk": 5|6|7, "messages": [UIMessage, ...]}]}
// stdout: {"streams": [{"name", "invalid": [...], "errors": [...], "message"}],
//          "messages": [{"name", "invalid": null | "..."}],
//          "runtime": {"node": "v22...", "ai": [version of each ai package loaded]}}
import { readFileSync } from "node:fs";
// each `ai` major as tests/js/package.json installs it, loaded only when asked for (ai 7
// needs Node 22: tests/js_node.py runs its checks under tests/js/node_modules/node)
const names = { 5: "ai-v5", 6: "ai", 7: "ai-v7" };
const loaded = {};
async function sdkPackage(sdk) {
  if (!(sdk in names)) throw new Error(`no ai package for sdk ${sdk}`);
  loaded[sdk] ??= await import(names[sdk]);
  return loaded[sdk];
}

// the version of an installed package, and the Node running this: tests/js_node.py checks
// that each check ran the `ai` major it names, under the Node it needs
function versionOf(name) {
  return JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url))).version;
}

async function readAll(stream) {
  const out = [];
  const reader = stream.getReader();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return out;
    out.push(value);
  }
}

function sseBody(frames) {
  const text = frames.map((data, n) => `id: ${n + 1}\ndata: ${data}\n\n`).join("");
  return new Blob([text]).stream();
}

async function checkStream({ name, sdk, frames, message }) {
  const ai = await sdkPackage(sdk);
  const parsed = await readAll(
    ai.parseJsonEventStream({ stream: sseBody(frames), schema: ai.uiMessageChunkSchema }),
  );
  const invalid = parsed
    .map((p, n) => (p.success ? null : `chunk ${n}: ${p.error.message.slice(0, 300)}`))
    .filter((e) => e !== null);
  const chunks = parsed.filter((p) => p.success).map((p) => p.value);
  const errors = [];
  const built = await readAll(
    ai.readUIMessageStream({
      message,
      stream: ReadableStream.from(chunks),
      onError: (e) => errors.push(String(e && e.message ? e.message : e)),
    }),
  );
  const last = built.length ? built[built.length - 1] : null;
  let messageInvalid = null;
  if (last !== null) {
    try {
      await ai.validateUIMessages({ messages: [last] });
    } catch (e) {
      messageInvalid = String(e.message);
    }
  }
  return { name, invalid, errors, chunks: chunks.length, message: last, messageInvalid };
}

async function checkMessages({ name, sdk, messages }) {
  try {
    await (await sdkPackage(sdk)).validateUIMessages({ messages });
    return { name, invalid: null };
  } catch (e) {
    return { name, invalid: String(e.message) };
  }
}

const input = JSON.parse(await new Response(process.stdin).text());
const out = { streams: [], messages: [], runtime: { node: process.version, ai: [] } };
for (const s of input.streams || []) out.streams.push(await checkStream(s));
for (const m of input.messages || []) out.messages.push(await checkMessages(m));
out.runtime.ai = Object.keys(loaded).map((sdk) => versionOf(names[sdk]));
process.stdout.write(JSON.stringify(out));
