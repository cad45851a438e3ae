"""Signatures bound to their place (ADR 0068): issue 28, item 6 (a) to (d).

(a) calls without provider ids get ids that never repeat within a conversation;
(b) a signed, executed call copied into another conversation does not verify;
(c) a signed result does not answer a later call that carries the same id;
(d) a client's external result never keeps a URL that plain sanitize drops.
"""

from __future__ import annotations

import json

import pytest
from returns.result import Success

from golem_core import (
    Approved,
    ExternalResult,
    Message,
    MessageProvenance,
    ModelRequest,
    Role,
    TextPart,
    ToolCallPart,
    URLPart,
    carry_signatures,
    decode_history,
    encode_history,
    sanitize_history,
    sign_message,
    signed_calls,
    trim_history,
    verify_history,
)
from golem_core.ids import run_tag
from golem_shell import Agent, DeferredResultsError, FunctionModel, tool

KEY = b"k" * 32


def round_trip(history: tuple[Message, ...]) -> tuple[Message, ...]:
    """The history as it comes back from a client (JSON both ways)."""
    decoded = decode_history(json.dumps(json.loads(encode_history(history))))
    assert isinstance(decoded, Success)
    return decoded.unwrap()


executed: list[str] = []


@tool(requires_approval=True)
def transfer(to: str, cents: int) -> str:
    """Send money."""
    executed.append(to)
    return f"sent {cents} to {to}"


@tool
def lookup(name: str) -> str:
    """Look a name up."""
    return f"{name} is known"


@tool(external=True)
def scan(page: int) -> str:
    """Scan a page on the client's device (executed by the client)."""
    raise AssertionError("an external tool is never executed by the server")


@pytest.fixture(autouse=True)
def _fresh_ledger() -> None:
    executed.clear()


# -- (a) minted ids are unique within a conversation --------------------------------------


def gemini_2(request: ModelRequest) -> Message | str:
    """Like Gemini 2.x: function calls carry no id; every prompt asks for a transfer."""
    if request.messages[-1].role is Role.USER:
        return Message.assistant(
            tool_calls=[ToolCallPart(None, "transfer", '{"to": "landlord", "cents": 100}')]
        )
    return "done"


def test_minted_ids_never_repeat_so_every_runs_signed_pause_can_be_approved() -> None:
    agent = Agent(FunctionModel(gemini_2), tools=[transfer], signing_key=KEY)
    first = agent.run_sync("pay the rent")
    [waiting] = first.deferred
    assert waiting.call.id == f"golem_{run_tag(first.run_id)}_1_0"  # the run's first id
    paid = agent.run_with_deferred_results_sync(
        round_trip(first.messages), {waiting.call.id: Approved()}
    )
    second = agent.run_with_history_sync(round_trip(paid.messages), "pay it again")
    [again] = second.deferred
    ids = [c.id for m in second.messages for c in m.tool_calls]
    assert len(ids) == len(set(ids)) == 2
    assert again.call.id == f"golem_{run_tag(second.run_id)}_1_0"  # another run, another tag
    history = round_trip(second.messages)
    assert again.call.id in signed_calls(history, KEY)
    clean, report = sanitize_history(history, key=KEY)
    assert report.clean and [d.call.id for d in agent.waiting_calls(clean)] == [again.call.id]
    done = agent.run_with_deferred_results_sync(clean, {again.call.id: Approved()})
    assert done.output == "done" and executed == ["landlord", "landlord"]


def test_minted_ids_are_deterministic_and_unique_without_a_key_too() -> None:
    def three_calls(request: ModelRequest) -> Message | str:
        if request.messages[-1].role is Role.USER:
            call = ToolCallPart(None, "lookup", '{"name": "x"}')
            return Message.assistant(tool_calls=[call, call])
        return "ok"

    agent = Agent(FunctionModel(three_calls), tools=[lookup])
    runs = [agent.run_sync("one", run_id="r1"), agent.run_sync("one", run_id="r1")]
    for n in (2, 3):
        runs.append(agent.run_with_history_sync(runs[-1].messages, "more", run_id=f"r{n}"))
    ids = [[c.id for m in r.messages for c in m.tool_calls] for r in runs]
    tags = [run_tag(f"r{n}") for n in (1, 2, 3)]
    assert ids[0] == ids[1] == [f"golem_{tags[0]}_1_0", f"golem_{tags[0]}_1_1"]  # deterministic
    assert ids[-1] == [f"golem_{t}_1_{i}" for t in tags for i in (0, 1)]
    assert all(m.tool_call_id in ids[-1] for m in runs[-1].messages if m.role is Role.TOOL)


# -- (b) a signed call copied into another conversation ----------------------------------


def bank(request: ModelRequest) -> Message | str:
    prompt = next(m.text for m in reversed(request.messages) if m.role is Role.USER)
    if request.messages[-1].role is Role.USER and "pay" in prompt:
        return Message.assistant(
            tool_calls=[ToolCallPart("c_pay", "transfer", '{"to": "landlord", "cents": 100}')]
        )
    return "done"


def test_a_signed_executed_call_copied_into_another_conversation_does_not_verify() -> None:
    agent = Agent(FunctionModel(bank), tools=[transfer], signing_key=KEY)
    paused = agent.run_sync("pay the rent")
    paid = agent.run_with_deferred_results_sync(paused.messages, {"c_pay": Approved()})
    assert executed == ["landlord"]
    turn = next(m for m in paid.messages if m.tool_calls)  # signed, and executed
    other = agent.run_sync("hello").messages  # another conversation of the same server
    transplanted = round_trip((*other, turn))
    report = verify_history(transplanted, KEY)
    assert report.verdicts[-1] is MessageProvenance.TAMPERED
    assert signed_calls(transplanted, KEY) == frozenset()
    clean, swept = sanitize_history(transplanted, key=KEY)
    assert [e.call_id for e in swept.repair.synthesized] == ["c_pay"]
    assert agent.waiting_calls(clean) == ()
    with pytest.raises(DeferredResultsError, match="c_pay"):
        agent.run_with_deferred_results_sync(transplanted, {"c_pay": Approved()})
    assert executed == ["landlord"]  # it ran once


def test_the_call_also_fails_at_another_place_of_its_own_conversation() -> None:
    agent = Agent(FunctionModel(bank), tools=[transfer], signing_key=KEY)
    paused = agent.run_sync("pay the rent")
    turn = paused.messages[-1]
    moved = round_trip((*paused.messages[:-1], Message.user("and something else"), turn))
    assert verify_history(moved, KEY).verdicts[-1] is MessageProvenance.TAMPERED
    assert signed_calls(moved, KEY) == frozenset()


# -- (c) a signed result answering a later call with the same id --------------------------


def numbered(request: ModelRequest) -> Message | str:
    """Like providers that number calls per response: every turn's first call is call_0."""
    if request.messages[-1].role is not Role.USER:
        return "done"
    prompt = request.messages[-1].text
    if "look" in prompt:
        return Message.assistant(tool_calls=[ToolCallPart("call_0", "lookup", '{"name": "x"}')])
    return Message.assistant(
        tool_calls=[ToolCallPart("call_0", "transfer", '{"to": "landlord", "cents": 100}')]
    )


def test_a_signed_result_from_an_earlier_turn_does_not_answer_a_later_call() -> None:
    agent = Agent(FunctionModel(numbered), tools=[transfer, lookup], signing_key=KEY)
    looked = agent.run_sync("look x up")
    old_result = next(m for m in looked.messages if m.role is Role.TOOL)
    paused = agent.run_with_history_sync(looked.messages, "now pay")
    assert paused.deferred[0].call.id == "call_0"
    answered = round_trip((*paused.messages, old_result))  # the old result, verbatim
    report = verify_history(answered, KEY)
    assert report.verdicts[-1] is MessageProvenance.TAMPERED
    assert report.verdicts[: len(paused.messages)].count(MessageProvenance.TAMPERED) == 0
    clean, swept = sanitize_history(answered, key=KEY)
    assert swept.unverified == (len(paused.messages),)
    assert clean[-1].text != old_result.text  # the transfer is not answered by the lookup


# -- (d) a client's external result -------------------------------------------------------


def scanner(request: ModelRequest) -> Message | str:
    if request.messages[-1].role is Role.USER:
        return Message.assistant(tool_calls=[ToolCallPart("c_scan", "scan", '{"page": 1}')])
    return "scanned"


def test_keyed_sanitize_never_keeps_a_url_plain_sanitize_drops() -> None:
    agent = Agent(FunctionModel(scanner), tools=[scan], signing_key=KEY)
    paused = agent.run_sync("scan page 1")
    answer = ExternalResult(
        (TextPart("page 1"), URLPart("file:///etc/passwd", "document", media_type="text/plain"))
    )
    done = agent.run_with_deferred_results_sync(paused.messages, {"c_scan": answer})
    # the run sanitizes what the client asserted before signing it: no file:// at all
    assert "file://" not in encode_history(done.messages).decode()
    result = next(m for m in done.messages if m.role is Role.TOOL)
    assert result.text == "page 1"
    # a message the server did sign holding such a URL (an older golem, say) loses it
    # under keyed sanitize too, and is signed again in its place
    call = next(m for m in done.messages if m.tool_calls)
    signed = sign_message(
        Message.tool_result("c_scan", "scan", answer.parts).with_ids(
            result.run_id, result.conversation_id
        ),
        KEY,
        before=done.messages[: done.messages.index(call) + 1],
    )
    history = round_trip((*done.messages[: done.messages.index(result)], signed))
    plain, _ = sanitize_history(history)
    keyed, report = sanitize_history(history, key=KEY)
    assert "file://" not in encode_history(plain).decode()
    assert "file://" not in encode_history(keyed).decode()
    assert [(p.kind, p.scheme) for p in report.unsafe_parts] == [("document", "file")]
    assert next(m for m in keyed if m.role is Role.TOOL).text == "page 1"
    # the server's own message, trimmed, is signed again in its place: it still verifies,
    # and a second keyed pass changes nothing (idempotent)
    assert verify_history(keyed, KEY).tampered == ()
    again, second = sanitize_history(keyed, key=KEY)
    assert again == keyed and second.clean


def test_the_run_never_signs_or_sends_a_clients_unsafe_url() -> None:
    seen: list[str] = []

    def model(request: ModelRequest) -> Message | str:
        seen.append(encode_history(request.messages).decode())
        return scanner(request)

    agent = Agent(FunctionModel(model), tools=[scan], signing_key=KEY)
    paused = agent.run_sync("scan page 1")
    answer = ExternalResult((URLPart("file:///etc/passwd", "document"),))
    done = agent.run_with_deferred_results_sync(paused.messages, {"c_scan": answer})
    assert "file://" not in seen[-1]
    assert "file://" not in encode_history(done.messages).decode()


# -- a history processor's cut: the server's signatures carried to their new place --------


def signed_conversation(turns: int) -> tuple[Message, ...]:
    out: list[Message] = []
    for i in range(turns):
        for m in (
            Message.user(f"question {i}"),
            Message.assistant(tool_calls=[ToolCallPart(f"c{i}", "lookup", '{"name": "x"}')]),
            Message.tool_result(f"c{i}", "lookup", "x is known"),
            Message.assistant(f"answer {i}"),
        ):
            out.append(sign_message(m.with_ids("run", "conv"), KEY, before=out))
    return tuple(out)


def test_a_cut_moves_every_kept_message_and_carry_signatures_re_signs_them() -> None:
    history = signed_conversation(3)
    cut = history[4:]  # what trim_history keeps: the front turn is gone
    assert verify_history(cut, KEY).tampered == tuple(range(len(cut)))  # all moved
    carried = carry_signatures(history, cut, KEY)
    assert verify_history(carried, KEY).intact and verify_history(carried, KEY).unbound == ()
    assert [m.text for m in carried] == [m.text for m in cut]  # only signatures changed
    assert carry_signatures(history, history, KEY) is history  # nothing moved: untouched
    assert carry_signatures(carried, carried, KEY) is carried


def test_carry_signatures_never_launders_a_copy_or_a_clients_message() -> None:
    history = signed_conversation(2)
    replay = decode_history(encode_history((history[1],))).unwrap()[0]  # a verbatim copy
    client = Message.user("a client's message").with_ids("run", "conv")
    supplied = (*history, client, replay)
    processed = supplied[4:]  # the cut drops the original call: the copy's id is unique now
    carried = carry_signatures(supplied, processed, KEY)
    report = verify_history(carried, KEY)
    assert report.verdicts[-2] is MessageProvenance.UNSIGNED  # the client's stays unsigned
    assert report.verdicts[-1] is MessageProvenance.TAMPERED  # the copy is not re-signed
    assert "c0" not in signed_calls(carried, KEY)
    assert carry_signatures(supplied, (history[0], history[0]), KEY)[1] == history[0]


def test_an_agent_that_trims_keeps_its_own_signatures_valid() -> None:
    def model(request: ModelRequest) -> Message | str:
        if request.messages[-1].role is Role.USER:
            return Message.assistant(tool_calls=[ToolCallPart(None, "lookup", '{"name": "x"}')])
        return "ok"

    agent = Agent(FunctionModel(model), tools=[lookup], signing_key=KEY)
    trimming = Agent(
        FunctionModel(model), tools=[lookup], signing_key=KEY, history_processor=trim_history(6)
    )
    history = agent.run_sync("q0").messages
    for i in range(1, 4):
        history = trimming.run_with_history_sync(history, f"q{i}").messages
    assert verify_history(history, KEY).tampered == ()
