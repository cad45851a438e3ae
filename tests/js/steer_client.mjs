// useChat's engine (`AbstractChat`, `DefaultChatTransport`, package `ai`) sending a second
// message while the first answer streams, against the live example (examples/web_chat).
// Driven by tests/test_web_chat_steering.py: `node steer_client.mjs <base url> [ai package]`
// prints one JSON object: the chat's status, error, messages (`turn`: after the steered turn; then
// after one more message), the requests it made, and the data parts it was told of
// (`onData`: the example's transient `data-steered`).
import { readFileSync } from "node:fs";

const [base, pkg = "ai"] = process.argv.slice(2);
// "ai" (6) or "ai-v7" (under Node 22, tests/js_node.py)
const { AbstractChat, DefaultChatTransport } = await import(pkg);

// the version of an installed package, and the Node running this: tests/js_node.py checks
// that each check ran the `ai` major it names, under the Node it needs
function versionOf(name) {
  return JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url))).version;
}
const runtime = { node: process.version, ai: [versionOf(pkg)] };

class State {
  constructor(messages = []) {
    this.messages = messages;
    this.status = "ready";
    this.error = undefined;
  }
  pushMessage(m) { this.messages = this.messages.concat(m); }
  popMessage() { this.messages = this.messages.slice(0, -1); }
  replaceMessage(i, m) { this.messages = [...this.messages.slice(0, i), m, ...this.messages.slice(i + 1)]; }
  snapshot = (v) => structuredClone(v);
}

class Chat extends AbstractChat {
  constructor(options) { super({ ...options, state: new State(options.messages) }); }
}

const page = await fetch(base + "/");
const cookie = page.headers.get("set-cookie").split(";")[0];
const requests = [];
async function cookieFetch(url, init = {}) {
  const headers = new Headers(init.headers);
  headers.set("cookie", cookie);
  const r = await fetch(url, { ...init, headers });
  requests.push({ method: init.method || "GET", url: String(url).slice(base.length), status: r.status });
  return r;
}
const transport = new DefaultChatTransport({ api: base + "/api/chat", fetch: cookieFetch });
const errors = [];
const data = [];
const chat = new Chat({
  id: "js-s-" + Date.now(),
  transport,
  onError: (e) => errors.push(String(e.message)),
  onData: (part) => data.push(part),
});
const first = chat.sendMessage({ text: "weather in Oslo" });
while (!chat.lastMessage || chat.lastMessage.role !== "assistant"
       || !chat.lastMessage.parts.some((p) => p.type === "tool-get_weather")) {
  await new Promise((r) => setTimeout(r, 10));
}
const statusWhenSent = chat.status;
await chat.sendMessage({ text: "actually, use Paris" });
const afterSteer = { status: chat.status, messages: structuredClone(chat.messages) };
await first;
const turn = structuredClone(chat.messages);
await chat.sendMessage({ text: "thanks" });  // the next turn, from the list useChat holds
process.stdout.write(JSON.stringify({ turn,
  uid: cookie.slice(cookie.indexOf("=") + 1), id: chat.id, statusWhenSent, afterSteer,
  status: chat.status, error: chat.error ? String(chat.error.message) : null,
  messages: chat.messages, errors, requests, data, runtime,
}));
