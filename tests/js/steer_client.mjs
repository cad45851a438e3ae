// useChat's engine (`AbstractChat`, `DefaultChatTransport`, package `ai`) sending a second
// message while the first answer streams, against the live example (examples/web_chat).
// Driven by tests/test_web_chat_steering.py: `node steer_client.mjs <base url> [ai package]
// [other base urls]`
// prints one JSON object: the chat's status, error, messages (`turn`: after the steered turn; then
// after one more message), the requests it made, and the data parts it was told of
// (`onData`: the example's transient `data-steered`).
import { connectChat } from "./client_common.mjs";

const [base, pkg = "ai", ...spread] = process.argv.slice(2);
// "ai" (6) or "ai-v7" (under Node 22, tests/js_node.py); `spread`: other processes of the
// deployment, which the POSTs go to in turn (the steer to the one without the stream)
const { Chat, transport, requests, runtime, uid } = await connectChat(base, pkg, spread);
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
  uid, id: chat.id, statusWhenSent, afterSteer,
  status: chat.status, error: chat.error ? String(chat.error.message) : null,
  messages: chat.messages, errors, requests, data, runtime,
}));
