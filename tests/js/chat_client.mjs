// useChat's engine (`AbstractChat` with `DefaultChatTransport`, package `ai`) against the
// live example server (examples/web_chat): what a React front end does, without React.
// Driven by tests/test_js_chat.py: `node chat_client.mjs <base url> <scenario>
// [ai package]` prints one JSON object: the chat's status, error, messages, and every request it made.
import { connectChat } from "./client_common.mjs";

const [base, scenario, pkg = "ai"] = process.argv.slice(2);
// "ai" (6), "ai-v7" (under Node 22, tests/js_node.py) or "ai-v5"
const { Chat, transport, requests, runtime, uid } = await connectChat(base, pkg);
const errors = [];

function newChat(id, messages) {
  return new Chat({ id, transport, messages, onError: (e) => errors.push(String(e.message)) });
}

function report(chat, extra = {}) {
  return { uid, id: chat.id, status: chat.status, error: chat.error ? String(chat.error.message) : null,
           messages: chat.messages, errors, requests, runtime, ...extra };
}

function text(m) { return m.parts.filter((p) => p.type === "text").map((p) => p.text).join(""); }

function toolPart(chat) {
  return chat.lastMessage.parts.find((p) => p.type.startsWith("tool-"));
}

const scenarios = {
  // a text answer, then a tool call, in one chat
  async send() {
    const chat = newChat("js-" + Date.now());
    await chat.sendMessage({ text: "hello" });
    const first = chat.status;
    await chat.sendMessage({ text: "weather in Oslo" });
    return report(chat, { first, answers: chat.messages.filter((m) => m.role === "assistant").map(text) });
  },
  // an approval the person gives, and one they refuse
  async approval() {
    const chat = newChat("js-a-" + Date.now());
    await chat.sendMessage({ text: "pay ann 5" });
    const asked = structuredClone(toolPart(chat));
    await chat.addToolApprovalResponse({ id: asked.approval.id, approved: true });
    await chat.sendMessage();
    const approved = structuredClone(toolPart(chat));
    await chat.sendMessage({ text: "pay bob 7" });
    const second = toolPart(chat);
    await chat.addToolApprovalResponse({ id: second.approval.id, approved: false, reason: "not bob" });
    await chat.sendMessage();
    return report(chat, { asked, approved, denied: toolPart(chat) });
  },
  // a failed run, then the person sends again in the same chat
  async failed() {
    const chat = newChat("js-f-" + Date.now());
    await chat.sendMessage({ text: "fail please" });
    const afterFailure = { status: chat.status, error: chat.error ? String(chat.error.message) : null,
                           roles: chat.messages.map((m) => m.role) };
    await chat.sendMessage({ text: "hello again" });
    return report(chat, { afterFailure, last: text(chat.lastMessage) });
  },
  // an edit of an earlier message (a branch), then a new message after it
  async edit() {
    const chat = newChat("js-e-" + Date.now());
    await chat.sendMessage({ text: "first" });
    await chat.sendMessage({ text: "second" });
    const second = chat.messages[2];
    await chat.sendMessage({ text: "second, edited", messageId: second.id });
    const afterEdit = chat.status;
    await chat.sendMessage({ text: "third" });
    return report(chat, { afterEdit, texts: chat.messages.map(text) });
  },
  // a reload while the answer streams: resume replays it; once finished there is nothing
  async resume() {
    const id = "js-r-" + Date.now();
    const chat = newChat(id);
    const sending = chat.sendMessage({ text: "long" });
    while (!chat.messages.some((m) => m.role === "assistant" && text(m).length > 0)) {
      await new Promise((r) => setTimeout(r, 10));
    }
    const reloaded = newChat(id, [chat.messages[0]]);
    await reloaded.resumeStream();
    await sending;
    const resumed = { status: reloaded.status, roles: reloaded.messages.map((m) => m.role),
                      text: text(reloaded.lastMessage) };
    const later = newChat(id, structuredClone(reloaded.messages));
    await later.resumeStream();
    return report(later, { resumed, laterText: text(later.lastMessage) });
  },
};

const result = await scenarios[scenario]();
process.stdout.write(JSON.stringify(result));
