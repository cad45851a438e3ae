"""The recall tool: the agent reads back what compaction took out of its window.

Owns ``recall_tool(store, owner, conversation_id)``, an opt-in ``Tool`` named ``recall``
(issue 35 item 5, ADR 0144). A summary need not carry everything: the originals stay in
the store, and the model can search them by keyword. The tool is bound to one owner
and one conversation when it is made (the model cannot name another: another owner's
conversation is never read), reads the branch at each call (so an erasure made since is
honoured: tombstones hold nothing to find, stale summaries are skipped), and returns the
best matches with their positions (``golem_shell.store.search_messages``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

from golem_shell._errors import UsageError
from golem_shell.tools._tools import ModelRetry, Tool

if TYPE_CHECKING:  # the stores load on first use, not with golem_shell
    from golem_shell.store._methods import HistoryStore

__all__ = ["RECALL_HINT", "recall_tool"]

RECALL_HINT: Final = (
    "The original turns are kept: call the `recall` tool with keywords to read them."
)
"""A ``recall_hint`` for ``summarize_history`` when the agent has the recall tool."""


def recall_tool(
    store: HistoryStore,
    owner: str,
    conversation_id: str,
    *,
    branch: str = "main",  # golem_shell.store.MAIN (the stores load on first use)
    name: str = "recall",
    max_chars: int = 2000,
) -> Tool[Any]:
    """A tool the model calls as ``recall(query, limit=5)`` to search the stored messages
    of one conversation (the originals a summary replaced among them) by keyword.

    Args:
        store: Where the conversation is stored.
        owner: Whose conversation: fixed here, never chosen by the model.
        conversation_id: Which conversation.
        branch: Which branch of it.
        name: The tool's name.
        max_chars: Each found message's text is cut to this many characters.

    Returns:
        The tool. It answers with one block per message found, ``[message N, role]
        text``, best first, or says nothing matched; a query without words or a bad
        ``limit`` goes back to the model as a retry saying what was wrong.

    Raises:
        UsageError: ``owner``, ``conversation_id`` or ``branch`` is not a valid id, or
            ``max_chars`` is not a positive int.
    """
    from golem_shell.store._errors import check_id
    from golem_shell.store._recall import search_messages

    check_id("owner", owner)
    check_id("conversation_id", conversation_id)
    check_id("branch", branch)
    if isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1:
        raise UsageError(f"max_chars must be an int >= 1, got {max_chars!r}")

    async def recall(query: str, limit: int = 5) -> str:
        """Search the earlier messages of this conversation, including those older turns
        that were summarized, and read them back.

        Args:
            query: Keywords to look for (any of them; more matches rank first).
            limit: How many messages to return, 1 to 50.
        """
        messages = await store.load(owner, conversation_id, branch=branch)
        try:
            found = search_messages(messages, query, limit=limit)
        except ValueError as e:
            raise ModelRetry(str(e)) from e
        if not found:
            return f"No stored message of this conversation matches {query!r}."
        blocks = []
        for hit in found:
            text = hit.render()
            blocks.append(text if len(text) <= max_chars else text[:max_chars] + " [...]")
        return "\n\n".join(blocks)

    return Tool.from_function(recall, name=name)
