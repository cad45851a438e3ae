# ruff: noqa: F811 (the fixtures imported from store_backends are parameters here)
"""Erasure through provider-native compaction (issue 48 items 2 and 3), on SQLite and a
real PostgreSQL, the adapters answered over HTTP (``httpx.MockTransport``).

OpenAI: ``/responses/compact`` answers with the user messages it kept and one encrypted
item built from every message it was sent; erasing one of those user messages makes the
item stale (it is not sent again). Anthropic: the answer holding a ``compaction`` block
records every message of the request it was built from; erasing one of them leaves no
canary in the stored turn nor in ``native_compaction``'s cut, replaces only the block
(the turn's text and ``tool_use`` stay, so its result still answers a call) and every
request built from what remains is valid for Anthropic.
"""

from __future__ import annotations

import asyncio
import copy
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
from store_backends import (  # noqa: F401 (fixtures)
    OWNER,
    Backend,
    Store,
    backend,
    postgres_backend,
    sqlite_backend,
    store,
    store_database,
)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "properties"))

from provider_server import fixture_json
from wire_rules import anthropic_context_violations, anthropic_violations

from golem_core import (
    Message,
    ModelRequest,
    RetryPolicy,
    Role,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    check_pairing,
    compaction_of,
    message_ref,
)
from golem_core.wire import anthropic as anthropic_wire
from golem_core.wire import openai_responses as responses_wire
from golem_shell import AnthropicModel, OpenAIResponsesModel
from golem_shell.context._native_compaction import native_compaction
from golem_shell.store import STALE_SUMMARY_TEXT

CANARY = "canary-7d2f-erase-me"
FAST = RetryPolicy(max_attempts=1, base=0.01, cap=0.02)
VENUE = ToolDefinition(
    "book_venue",
    "Book a venue.",
    {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
)


def client(answer: Callable[[httpx.Request], dict[str, Any]], seen: list[httpx.Request]) -> Any:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200, json=answer(request))

    return httpx.AsyncClient(transport=httpx.MockTransport(handle))


def everything(store: Store, owner: str) -> list[Message]:
    found: list[Message] = []
    for cid in store.list_conversations_sync(owner):
        for info in store.branches_sync(owner, cid):
            found += store.load_sync(owner, cid, branch=info.name)
    return found


def holds_canary(messages: list[Message]) -> bool:
    return CANARY in json.dumps(
        [
            [m.text, list(m.extra), [list(getattr(p, "extra", ())) for p in m.parts]]
            for m in messages
        ]
    )


# -- OpenAI: the user messages /responses/compact kept beside its item (item 2) -----------


def openai_history() -> tuple[Message, ...]:
    call = ToolCallPart("call_v1", "book_venue", '{"name":"Rua Augusta 12"}')
    return (
        Message.user("Plan the launch of the Lisbon office."),
        Message(Role.ASSISTANT, (TextPart("Booking the venue."), call)),
        Message.tool_result("call_v1", "book_venue", "booked: LIS-4471"),
        Message.assistant("Booked."),
        Message.user(f"Book the venue we agreed on. My badge code is {CANARY}."),
        Message.assistant("Already booked: LIS-4471."),
        Message.user("Now the invitations?"),
        Message.assistant("Drafting them."),
    )


def compact_reply(request: httpx.Request) -> dict[str, Any]:
    """The documented answer: the user messages it was sent, then one encrypted item
    (here its ciphertext carries the canary, as the real one carries the summary)."""
    sent = json.loads(request.content)["input"]
    users = [
        {
            "id": f"msg_u{k}",
            "type": "message",
            "status": "completed",
            "role": "user",
            "content": [{"type": "input_text", "text": item["content"]}],
        }
        for k, item in enumerate(sent)
        if item.get("role") == "user"
    ]
    body: dict[str, Any] = copy.deepcopy(fixture_json("openai_responses/compact_response.json"))
    item = {"id": "cmp_1", "type": "compaction", "encrypted_content": f"gAAAAB-{CANARY}=="}
    body["output"] = [*users, item]
    return body


def openai_compacted(history: tuple[Message, ...]) -> tuple[Message, ...]:
    async def go() -> tuple[Message, ...]:
        seen: list[httpx.Request] = []
        async with (
            client(compact_reply, seen) as http,
            OpenAIResponsesModel(
                "gpt-5", api_key="sk-test", base_url="http://openai.test/v1", http_client=http
            ) as model,
        ):
            result = await native_compaction(model, keep_last_turns=1, step_turns=0)(history)
        assert [r.url.path for r in seen] == ["/v1/responses/compact"]
        return result.unwrap()

    return asyncio.run(go())


def item_of(message: Message) -> dict[str, Any] | None:
    return next(
        (
            item
            for p in message.parts
            if type(p) is TextPart and (item := responses_wire.compaction_item(p)) is not None
        ),
        None,
    )


def test_the_openai_record_names_the_user_messages_it_kept() -> None:
    history = openai_history()
    compacted = openai_compacted(history)
    holder = next(m for m in compacted if item_of(m) is not None)
    record = compaction_of(holder)
    assert record is not None
    assert set(record.replaced) == {message_ref(m) for m in history[:6]}
    assert compacted[:2] == (history[0], history[4])  # kept: golem's own messages


def test_erasing_a_kept_user_message_drops_the_openai_item(store: Store) -> None:
    history = openai_history()
    compacted = openai_compacted(history)
    store.append_sync(OWNER, "c1", history, 0)
    store.branch_sync(OWNER, "c1", 0, name="compacted")
    store.append_sync(OWNER, "c1", compacted, 0, branch="compacted")

    receipt = store.erase_sync(OWNER, "c1", 4)  # the canary's message, as main stores it
    assert {(e.conversation_id, e.branch, e.positions) for e in receipt.summaries} == {
        ("c1", "compacted", (2,))
    }
    branch = store.load_sync(OWNER, "c1", branch="compacted")
    assert all(item_of(m) is None for m in branch)  # never sent again
    assert branch[2].text == STALE_SUMMARY_TEXT
    assert not check_pairing(branch)

    store.erase_sync(OWNER, "c1", lambda m: CANARY in m.text)  # the kept copy too
    assert not holds_canary(everything(store, OWNER))


# -- Anthropic: the turn holding a compaction block (item 3) ------------------------------

BLOCK: dict[str, Any] = {
    "type": "compaction",
    "content": f"<summary>Launch of the Lisbon office; the badge code is {CANARY}.</summary>",
    "encrypted_content": f"EqQBopaque-{CANARY}==",
    "signature": "sig_01Hq9cmpSignature==",
}


def block_answer(request: httpx.Request) -> dict[str, Any]:
    body: dict[str, Any] = copy.deepcopy(fixture_json("anthropic/response_compaction.json"))
    body["content"] = [
        copy.deepcopy(BLOCK),
        {"type": "text", "text": "Checking the venue again."},
        {"type": "tool_use", "id": "toolu_01", "name": "book_venue", "input": {"name": "LIS"}},
    ]
    body["stop_reason"] = "tool_use"
    return body


def anthropic_history() -> tuple[tuple[Message, ...], tuple[Message, ...], list[httpx.Request]]:
    """The conversation as a run stores it (the answer as the adapter returned it), and
    the window ``native_compaction`` cuts from it."""
    before = (
        Message.user("Plan the launch of the Lisbon office."),
        Message.assistant("On it."),
        Message.user(f"My badge code is {CANARY}."),
        Message.assistant("Noted."),
        Message.user("Is the venue still booked?"),
    )
    seen: list[httpx.Request] = []

    async def go() -> tuple[Message, tuple[Message, ...]]:
        async with (
            client(block_answer, seen) as http,
            AnthropicModel(
                "claude-opus-4-6",
                api_key="sk-ant-test",
                base_url="http://anthropic.test",
                http_client=http,
                retry=FAST,
                context_edits=[anthropic_wire.compact()],
            ) as model,
        ):
            answer = await model.request(ModelRequest(before, tools=(VENUE,)))
            history = (
                *before,
                answer,
                Message.tool_result("toolu_01", "book_venue", "booked: LIS-4471"),
                Message.assistant("Still booked."),
            )
            cut = (await native_compaction(model)(history)).unwrap()
            return answer, cut

    answer, cut = asyncio.run(go())
    history = (
        *before,
        answer,
        Message.tool_result("toolu_01", "book_venue", "booked: LIS-4471"),
        Message.assistant("Still booked."),
    )
    assert cut[0].parts == answer.parts and cut[1:] == history[6:]
    return history, cut, seen


def anthropic_body(history: tuple[Message, ...]) -> tuple[dict[str, Any], str]:
    """The next request built from ``history``, as the adapter sends it, and its betas."""
    seen: list[httpx.Request] = []

    def reply(request: httpx.Request) -> dict[str, Any]:
        body: dict[str, Any] = fixture_json("anthropic/message_text.json")
        return body

    async def go() -> None:
        async with (
            client(reply, seen) as http,
            AnthropicModel(
                "claude-opus-4-6",
                api_key="sk-ant-test",
                base_url="http://anthropic.test",
                http_client=http,
                retry=FAST,
            ) as model,
        ):
            await model.request(ModelRequest((*history, Message.user("Thanks.")), tools=(VENUE,)))

    asyncio.run(go())
    return json.loads(seen[0].content), seen[0].headers.get("anthropic-beta", "")


def test_the_answer_holding_a_block_records_what_it_was_built_from() -> None:
    history, cut, seen = anthropic_history()
    assert seen[0].headers["anthropic-beta"] == anthropic_wire.COMPACTION_BETA
    record = compaction_of(history[5])
    assert record is not None and record.kind == "summary"
    assert record.replaced == tuple(message_ref(m) for m in history[:5])
    cut_record = compaction_of(cut[0])
    assert cut_record is not None and set(record.replaced) <= set(cut_record.replaced)


def test_erasing_through_an_anthropic_block_keeps_the_turn_and_drops_the_canary(
    store: Store,
) -> None:
    history, cut, _ = anthropic_history()
    store.append_sync(OWNER, "c1", history, 0)
    store.branch_sync(OWNER, "c1", 0, name="compacted")
    store.append_sync(OWNER, "c1", cut, 0, branch="compacted")
    assert holds_canary(everything(store, OWNER))

    receipt = store.erase_sync(OWNER, "c1", 2)  # the canary's message
    assert {(e.conversation_id, e.branch, e.positions) for e in receipt.summaries} == {
        ("c1", "main", (5,)),
        ("c1", "compacted", (0,)),
    }
    assert not holds_canary(everything(store, OWNER))
    for branch, at in (("main", 5), ("compacted", 0)):
        loaded = store.load_sync(OWNER, "c1", branch=branch)
        turn = loaded[at]
        # only the block went: the no-op block, the stand-in, then the turn as it was
        assert turn.parts[1:] == (TextPart(STALE_SUMMARY_TEXT), *history[5].parts[1:])
        assert anthropic_wire.compaction_block(turn.parts[0]) == {  # type: ignore[arg-type]
            "type": "compaction",
            "content": None,
        }
        assert any(type(p) is ToolCallPart and p.id == "toolu_01" for p in turn.parts)
        assert check_pairing(loaded) == ()
        record = compaction_of(turn)
        assert record is not None and json.loads(dict(turn.extra)["compaction"])["stale"]
        body, betas = anthropic_body(loaded)
        assert CANARY not in json.dumps(body)
        assert anthropic_violations(body) == []
        assert anthropic_context_violations(body, betas) == []
        assert store.verify_sync(OWNER, "c1", branch=branch).intact
    again = store.erase_sync(OWNER, "c1", 2)
    assert again.summaries == ()


def test_a_compaction_item_in_a_plain_openai_answer_is_recorded_too() -> None:
    """Every native compaction an answer holds records what it was built from (an item
    without an id included); a failed Anthropic block (``null`` content, nothing else)
    summarizes nothing and records nothing."""

    def reply(request: httpx.Request) -> dict[str, Any]:
        body: dict[str, Any] = copy.deepcopy(fixture_json("openai_responses/response_text.json"))
        body["output"].insert(0, {"type": "compaction", "encrypted_content": f"e-{CANARY}=="})
        return body

    def failed(request: httpx.Request) -> dict[str, Any]:
        body = block_answer(request)
        body["content"][0] = {"type": "compaction", "content": None}
        return body

    sent = openai_history()[:5]

    async def go() -> tuple[Message, Message]:
        seen: list[httpx.Request] = []
        async with (
            client(reply, seen) as http,
            OpenAIResponsesModel(
                "gpt-5", api_key="sk-test", base_url="http://openai.test/v1", http_client=http
            ) as model,
            client(failed, seen) as http2,
            AnthropicModel(
                "claude-opus-4-6", api_key="k", base_url="http://anthropic.test", http_client=http2
            ) as claude,
        ):
            return await model.request(ModelRequest(sent)), await claude.request(
                ModelRequest(sent[:1])
            )

    answer, void = asyncio.run(go())
    assert item_of(answer) is not None
    record = compaction_of(answer)
    assert record is not None and record.replaced == tuple(message_ref(m) for m in sent)
    assert compaction_of(void) is None
