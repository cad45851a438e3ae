"""A Hypothesis state machine over the core loop: any model behaviour, any tool outcome.

Whatever the model answers and however tools end, every request the loop asks for is
provider-valid, every phase change is one the transition table allows, the messages the
run adds carry its identity, and a failed run's evidence is resume-ready.
"""

from __future__ import annotations

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from golem_core import (
    INTERRUPTED_RESULT_TEXT,
    Approved,
    Denied,
    Message,
    TextPart,
    ToolCallPart,
    ToolDefinition,
    check_pairing,
    normalize_history,
)
from golem_core.loop import (
    TRANSITIONS,
    Answered,
    ExecuteTools,
    ModelFailed,
    ModelResponded,
    OutputInvalid,
    OutputValid,
    Phase,
    RequestModel,
    RunConfig,
    RunState,
    Steered,
    ToolCanceled,
    ToolCrashed,
    ToolDone,
    ToolRetry,
    ToolReturned,
    ToolSpec,
    ToolsReturned,
    next_command,
    receive,
    start_run,
)

CONFIG = RunConfig(
    run_id="run-1",
    conversation_id="conv-1",
    instructions="I.",
    tools=(
        ToolSpec(ToolDefinition("a")),
        ToolSpec(ToolDefinition("b"), max_retries=1),
        ToolSpec(ToolDefinition("c"), kind="approval"),
        ToolSpec(ToolDefinition("final_result"), kind="output"),
    ),
    output_tool="final_result",
    max_requests=8,
    output_retries=2,
)

tool_calls = st.builds(
    ToolCallPart,
    st.one_of(st.none(), st.sampled_from(["x1", "x2", "x3", "x4"])),
    st.sampled_from(["a", "b", "c", "final_result", "unknown"]),
    st.sampled_from(['{"k":1}', "{}", '{"cut', "[]"]),
)
answers = st.one_of(
    st.text(max_size=5).map(Message.assistant),
    st.lists(tool_calls, min_size=1, max_size=3, unique_by=lambda c: c.id).map(
        lambda cs: Message.assistant(tool_calls=cs)
    ),
)
ALLOWED = {(row.phase, row.outcome): set(row.after) for row in TRANSITIONS}


class LoopMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.state: RunState = start_run(CONFIG, (), (TextPart("go"),))

    def _step(self, outcome: object) -> None:
        before = self.state.phase
        self.state = receive(self.state, outcome)  # type: ignore[arg-type]
        assert self.state.phase in ALLOWED[(before, type(outcome))]

    @precondition(lambda self: self.state.phase is Phase.REQUEST)
    @rule(answer=answers)
    def model_answers(self, answer: Message) -> None:
        command = next_command(self.state)
        if isinstance(command, RequestModel):
            self._step(ModelResponded(answer))

    @precondition(lambda self: self.state.phase is Phase.REQUEST)
    @rule()
    def model_fails(self) -> None:
        if isinstance(next_command(self.state), RequestModel):
            self._step(ModelFailed("boom"))

    @precondition(lambda self: self.state.phase is Phase.TOOLS)
    @rule(kinds=st.lists(st.sampled_from(["ok", "failed", "retry", "cancel", "crash", "none"])))
    def tools_return(self, kinds: list[str]) -> None:
        command = next_command(self.state)
        assert isinstance(command, ExecuteTools)
        outcomes: list[object] = []
        for i, c in enumerate(command.calls):
            kind = kinds[i] if i < len(kinds) else "ok"
            cid = c.id or ""
            if kind == "ok":
                outcomes.append(ToolReturned(cid, (TextPart("r"),)))
            elif kind == "failed":
                outcomes.append(ToolReturned(cid, (TextPart("r"),), failed=True))
            elif kind == "retry":
                outcomes.append(ToolRetry(cid, "bad args"))
            elif kind == "cancel":
                outcomes.append(ToolCanceled(cid, "stop"))
                break
            elif kind == "crash":
                outcomes.append(ToolCrashed(cid, "oops"))
                break
        if not any(isinstance(o, ToolCanceled | ToolCrashed) for o in outcomes):
            # every call must be answered unless the batch was stopped
            answered = {o.call_id for o in outcomes}  # type: ignore[attr-defined]
            outcomes += [
                ToolReturned(c.id or "", (TextPart("r"),))
                for c in command.calls
                if (c.id or "") not in answered
            ]
        self._step(ToolsReturned(tuple(outcomes)))  # type: ignore[arg-type]

    @precondition(lambda self: self.state.phase is Phase.TOOLS)
    @rule(data=st.data())
    def tools_land_one_by_one(self, data: st.DataObject) -> None:
        """Outcomes land as they complete, in any order; the partial is paired at every
        moment (issue 28.1: a cancel never loses a finished tool)."""
        command = next_command(self.state)
        assert isinstance(command, ExecuteTools)
        order = data.draw(st.permutations(command.calls))
        for c in order:
            if self.state.phase is not Phase.TOOLS:
                break
            kind = data.draw(st.sampled_from(["ok", "ok", "retry", "cancel", "crash"]))
            cid = c.id or ""
            outcome: object = {
                "ok": ToolReturned(cid, (TextPart("r"),)),
                "retry": ToolRetry(cid, "bad args"),
                "cancel": ToolCanceled(cid, "stop"),
                "crash": ToolCrashed(cid, "oops"),
            }[kind]
            self._step(ToolDone(outcome))  # type: ignore[arg-type]

    @precondition(lambda self: self.state.phase is Phase.PAUSED)
    @rule(data=st.data(), stale=st.booleans())
    def answers_arrive(self, data: st.DataObject, stale: bool) -> None:
        """Answers bound to the current pause apply; answers for another pause change
        nothing but ``rejected`` (issue 28.4)."""
        waiting = self.state.deferred
        answers = {
            str(d.call.id): data.draw(st.sampled_from([Approved(), Denied("no")]))
            for d in waiting
            if data.draw(st.booleans())
        }
        before = self.state
        pause = before.pauses - 1 if stale else before.pauses
        self._step(Answered(answers, pause=pause))
        if stale:
            assert self.state.rejected is not None
            assert attrs.evolve(self.state, rejected=None) == attrs.evolve(before, rejected=None)

    @precondition(lambda self: self.state.phase in (Phase.REQUEST, Phase.VALIDATE))
    @rule(texts=st.lists(st.text(min_size=1, max_size=8), min_size=1, max_size=2))
    def user_steers(self, texts: list[str]) -> None:
        """Steering (issue 36): user messages join at a safe point; the invariants (a
        provider-valid request, a paired partial, resume-ready evidence) hold after."""
        before = len(self.state.added)
        self._step(Steered(tuple(Message.user(t) for t in texts)))
        assert self.state.phase is Phase.REQUEST
        assert [m.text for m in self.state.added[-len(texts) :]] == texts
        assert len(self.state.added) >= before + len(texts)

    @precondition(lambda self: self.state.phase is Phase.VALIDATE)
    @rule(valid=st.booleans())
    def validate(self, valid: bool) -> None:
        self._step(OutputValid(1) if valid else OutputInvalid("no"))

    @precondition(lambda self: self.state.phase in (Phase.DONE, Phase.FAILED, Phase.PAUSED))
    @rule(prompt=st.booleans())
    def resume(self, prompt: bool) -> None:
        """A finished, failed or paused run's messages start the next run."""
        history = (
            self.state.evidence_messages
            if self.state.phase is Phase.FAILED
            else self.state.messages
        )
        self.state = start_run(CONFIG, history, (TextPart("more"),) if prompt else None)
        if self.state.phase is Phase.FAILED:  # nothing to send: start afresh
            self.state = start_run(CONFIG, (), (TextPart("go"),))

    @invariant()
    def requests_are_provider_valid(self) -> None:
        command = next_command(self.state)
        if isinstance(command, RequestModel):
            assert check_pairing(command.request.messages) == ()
            assert all(m.role.value != "system" for m in command.request.messages)

    @invariant()
    def added_messages_carry_the_run_identity(self) -> None:
        for m in self.state.added:
            if m.text == INTERRUPTED_RESULT_TEXT:
                assert m.run_id is None
            else:
                assert (m.run_id, m.conversation_id) == ("run-1", "conv-1")

    @invariant()
    def the_partial_is_paired_at_every_moment(self) -> None:
        partial = self.state.partial_messages
        repaired, report = normalize_history(partial)
        assert check_pairing(repaired) == ()
        if self.state.phase is Phase.TOOLS:  # the batch in flight is closed, not repaired
            assert not report.synthesized

    @invariant()
    def evidence_is_resume_ready(self) -> None:
        assert 0 <= self.state.evidence <= len(self.state.added)
        repaired, _ = normalize_history(self.state.evidence_messages)
        assert check_pairing(repaired) == ()
        if self.state.phase in (Phase.DONE,):
            assert check_pairing(self.state.messages) == ()
            _, report = normalize_history(self.state.messages)
            assert not report.synthesized and not report.dropped


TestLoopMachine = LoopMachine.TestCase
