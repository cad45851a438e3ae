"""Chat in the browser: golem runs as the Vercel AI SDK UI message stream and as AG-UI.

``pip install 'golem-agents[ui]'``. The adapters translate a run's events into a protocol's
stream and a client's messages into golem history; the client's history is untrusted
and passes ``sanitize_history`` (``accept_history``) before a run sees it. ``LiveRuns``
keeps a run going when the browser drops, and replays it to a reconnecting client
from its ``Last-Event-ID``; ``StoredRuns`` keeps the frames in the conversation store,
so any process serves them, after a restart too (``StreamTap`` for a durable run).
``TurnSteering`` carries what the person sends while a turn streams into its run.
See ``docs/web-chat.md`` and ``examples/web_chat/``.
May import: anything of ``golem_shell`` through its public faces (``golem_shell``,
``golem_shell.store``); nothing of the shell imports ``ui/``.
"""

from golem_shell.ui._agui import (
    AGUIStream,
    agui_answers,
    agui_frames,
    agui_messages_to_history,
    encode_event,
    history_to_agui_messages,
)
from golem_shell.ui._boundary import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_JSON_DEPTH,
    DEFAULT_MAX_MESSAGES,
    Refused,
    accept_history,
    parse_json_body,
    read_body,
    report_json,
    sse_frame,
)
from golem_shell.ui._live import LiveRun, LiveRuns
from golem_shell.ui._run import (
    RunEnded,
    RunItem,
    StartRun,
    Steered,
    ToolResults,
    UIFold,
    UIStep,
    failure_text,
    run_items,
)
from golem_shell.ui._steer import TurnSteering
from golem_shell.ui._stored import StoredRun, StoredRuns
from golem_shell.ui._tap import StreamTap, end_stream, pause_stream
from golem_shell.ui._vercel import (
    DONE,
    UI_MESSAGE_STREAM_HEADERS,
    Chunk,
    VercelStream,
    history_to_ui_messages,
    ui_messages_to_history,
    vercel_frames,
)

__all__ = [
    "AGUIStream",
    "Chunk",
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_JSON_DEPTH",
    "DEFAULT_MAX_MESSAGES",
    "DONE",
    "LiveRun",
    "LiveRuns",
    "Refused",
    "RunEnded",
    "RunItem",
    "StartRun",
    "Steered",
    "StoredRun",
    "StoredRuns",
    "StreamTap",
    "ToolResults",
    "TurnSteering",
    "UIFold",
    "UIStep",
    "UI_MESSAGE_STREAM_HEADERS",
    "VercelStream",
    "accept_history",
    "agui_answers",
    "agui_frames",
    "agui_messages_to_history",
    "encode_event",
    "end_stream",
    "failure_text",
    "history_to_agui_messages",
    "history_to_ui_messages",
    "parse_json_body",
    "pause_stream",
    "read_body",
    "report_json",
    "run_items",
    "sse_frame",
    "ui_messages_to_history",
    "vercel_frames",
]

from golem_core.public import claim_public_names as _claim_public_names

_claim_public_names(globals())  # reprs and tracebacks name this module
