// What tests/js/chat_client.mjs and tests/js/steer_client.mjs share: useChat's engine
// (`AbstractChat` with `DefaultChatTransport`, package `ai`) set up against the live example
// server (examples/web_chat), without React. `connectChat(base, pkg)` loads the page once for
// its cookie (a user) and returns the `Chat` class, a transport that sends that cookie and
// records every request it makes, the user's id, and the `runtime` each script reports.
import { readFileSync } from "node:fs";

// the version of an installed package, and the Node running this: tests/js_node.py checks
// that each check ran the `ai` major it names, under the Node it needs
function versionOf(name) {
  return JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url))).version;
}

// `pkg`: "ai" (6), "ai-v7" (under Node 22, tests/js_node.py) or "ai-v5"; `spread`: other
// server processes of the same deployment: the POSTs go to `base` and each of them in turn
export async function connectChat(base, pkg, spread = []) {
  const { AbstractChat, DefaultChatTransport } = await import(pkg);
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
  const bases = [base, ...spread];
  let posts = 0;
  async function cookieFetch(url, init = {}) {
    const headers = new Headers(init.headers);
    headers.set("cookie", cookie);
    const path = String(url).slice(base.length);
    const to = init.method === "POST" ? bases[posts++ % bases.length] : base;
    const r = await fetch(to + path, { ...init, headers });
    requests.push({ method: init.method || "GET", url: path, status: r.status, server: bases.indexOf(to) });
    return r;
  }
  const transport = new DefaultChatTransport({ api: base + "/api/chat", fetch: cookieFetch });
  return { Chat, transport, requests, runtime, uid: cookie.slice(cookie.indexOf("=") + 1) };
}
