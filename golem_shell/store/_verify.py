"""``verify``: check a conversation's stored chain and signed heads, branch by branch.

What each finding means and what is detected with and without the last head is in
``docs/stores.md`` and ADR 0071. In short, per message of a branch's view, in order:

- its seal must verify for this chain's genesis (owner and root conversation): if not,
  and it verifies for another root of the owner, the message was *spliced* from that
  conversation; otherwise it was *altered*;
- its link must follow the previous row's link: if not, and it follows another row of
  the branch, the branch was *reordered*; if it follows none, the messages before it
  were *deleted* (a missing position is a deletion too);

then the branch's head must verify (else *head*), its length must match the rows (fewer:
*truncated*; more: *unsigned* rows written around the store), and its link must be the
last row's. Given the last head the application saw, a stored head that is older, or
that does not extend it without an erasure in between, is a *rollback*; so is a branch
it holds a head of that is not stored at all. A row that does not decrypt under its key
id is *altered* at its position (a wrong key for that id and an altered ciphertext are the
same AES-GCM failure); a row encrypted under a key id the store was not opened with (or
with no keys at all) is *missing_key*: a configuration error, not evidence of tampering.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from golem_shell.store._errors import EncryptionKeyError, HistoryNotFound, check_id
from golem_shell.store._rows import (
    BranchRow,
    Config,
    branch_rows,
    segments,
    view_rows,
)
from golem_shell.store._sql import Dialect, Operation, Row, Steps
from golem_shell.store._values import (
    BranchVerdict,
    Finding,
    FindingKind,
    Head,
    VerifyReport,
)

__all__ = ["gone_verdict", "rollback_findings", "verify_op"]

_SEARCH_LIMIT = 2_000
"""Rows searched for a broken link's real predecessor (beyond: reported as deleted)."""


def verify_op(
    config: Config, owner: str, cid: str, branch: str | None, last_heads: Sequence[Head]
) -> Operation[VerifyReport]:
    check_id("owner", owner)
    check_id("conversation_id", cid)
    if branch is not None:
        check_id("branch", branch)
    heads = {(h.conversation_id, h.branch): h for h in last_heads if h.owner == owner}

    def steps(d: Dialect) -> Steps[VerifyReport]:
        where, params = "conversation_id = ?", [cid]
        if branch is not None:
            where, params = "conversation_id = ? AND branch = ?", [cid, branch]
        rows = yield from branch_rows(d, owner, where, *params)
        stored = {(r.conversation_id, r.branch) for r in rows}
        gone = [
            head
            for key, head in sorted(heads.items())
            if key[0] == cid and branch in (None, key[1]) and key not in stored
        ]
        if not rows and not gone:
            raise HistoryNotFound(cid, branch)
        roots = yield d.q("SELECT DISTINCT root FROM {B} WHERE owner = ?", owner)
        verdicts = []
        for row in rows:
            found = yield from segments(d, owner, row, open_end=True)
            view = yield from view_rows(d, owner, found, "position, message, seal, link")
            others = sorted(str(r[0]) for r in roots if r[0] != row.root)
            last = heads.get((row.conversation_id, row.branch))
            verdicts.append(_check(config, owner, row, view, others, last))
        verdicts += [gone_verdict(config, owner, head) for head in gone]
        return VerifyReport(tuple(verdicts), config.sealer.signed)

    return Operation(steps)


def _check(
    config: Config,
    owner: str,
    row: BranchRow,
    view: Sequence[Row],
    other_roots: Sequence[str],
    last: Head | None,
) -> BranchVerdict:
    sealer = config.sealer
    keys = sealer.keys
    geneses = [(k, sealer.genesis(owner, row.root, k)) for k in keys]
    findings: list[Finding] = []

    def follows(previous: str, seal: str, link: str) -> bool:
        return any(link == sealer.link(previous, seal, k) for k in keys)

    links = [str(r[3]) for r in view]
    previous: str | None = None
    expected = 0
    for index, (position, text, seal, link) in enumerate(view):
        position = int(position)
        gap = position != expected
        if gap:
            missing = f"{expected}" if position == expected + 1 else f"{expected}-{position - 1}"
            findings.append(Finding(FindingKind.DELETED, expected, f"no row at {missing}"))
        expected = position + 1
        if config.cipher.lacks_key(text):
            key_id = config.cipher.current_key_id(text)
            have = config.cipher.keys.ids if config.cipher.keys is not None else ()
            detail = (
                f"it is encrypted under key id {key_id!r} and this store was opened with"
                f" {f'only {have}' if have else 'no encryption keys'}: open it with that key"
                " to verify the row (or the row's key id was rewritten)"
            )
            findings.append(Finding(FindingKind.MISSING_KEY, position, detail))
            previous = str(link)
            continue
        try:
            content = config.cipher.open_text(owner, text)
        except EncryptionKeyError as e:
            findings.append(Finding(FindingKind.ALTERED, position, f"it does not decrypt: {e}"))
            previous = str(link)
            continue
        if not any(seal == sealer.seal(g, content, k) for k, g in geneses):
            origin = next(
                (
                    r
                    for r in other_roots
                    for k in keys
                    if seal == sealer.seal(sealer.genesis(owner, r, k), content, k)
                ),
                None,
            )
            if origin is not None:
                detail = f"sealed for conversation {origin!r}, not this one"
                findings.append(Finding(FindingKind.SPLICED, position, detail))
            else:
                detail = "its content does not match its seal (changed in place)"
                findings.append(Finding(FindingKind.ALTERED, position, detail))
            previous = str(link)
            continue
        if index == 0:
            chained = position == 0 and any(follows(g, seal, link) for _, g in geneses)
        else:
            chained = previous is not None and follows(previous, seal, link)
        if not chained and not gap:
            findings.append(_misplaced(position, index, seal, link, links, geneses, follows))
        previous = str(link)
    findings += _tail(config, owner, row, view, last)
    return BranchVerdict(row.conversation_id, row.branch, row.length, tuple(findings))


def _misplaced(
    position: int,
    index: int,
    seal: str,
    link: str,
    links: Sequence[str],
    geneses: Sequence[tuple[bytes, str]],
    follows: Callable[[str, str, str], bool],
) -> Finding:
    if any(follows(g, seal, link) for _, g in geneses):
        return Finding(FindingKind.REORDERED, position, "it belongs at position 0")
    if len(links) <= _SEARCH_LIMIT:
        for other, candidate in enumerate(links):
            if other != index - 1 and follows(candidate, seal, link):
                detail = f"it belongs after the message now at position {other}"
                return Finding(FindingKind.REORDERED, position, detail)
    return Finding(FindingKind.DELETED, position, "the message before it in the chain is gone")


def _tail(
    config: Config, owner: str, row: BranchRow, view: Sequence[Row], last: Head | None
) -> list[Finding]:
    sealer = config.sealer
    keys = sealer.keys
    findings: list[Finding] = []
    if not any(row.head == sealer.head(row.head_fields(owner), k) for k in keys):
        findings.append(Finding(FindingKind.HEAD, -1, "the branch's signed head does not verify"))
        return findings
    stored = int(view[-1][0]) + 1 if view else 0
    if stored < row.length:
        detail = f"the signed head says {row.length} messages, {stored} are stored"
        findings.append(Finding(FindingKind.TRUNCATED, stored, detail))
    elif stored > row.length:
        detail = f"{stored - row.length} rows past the signed head's {row.length}"
        findings.append(Finding(FindingKind.UNSIGNED, row.length, detail))
    by_position = {int(r[0]): str(r[3]) for r in view}
    last_link = by_position.get(row.length - 1)
    if row.length and stored >= row.length and last_link is not None and last_link != row.link:
        detail = "the last message is not the one the signed head ends with"
        findings.append(Finding(FindingKind.TRUNCATED, row.length - 1, detail))
    if last is not None:
        findings += rollback_findings(config, owner, row, by_position, last)
    return findings


def _genuine(config: Config, owner: str, last: Head) -> bool:
    """Whether the head the caller kept was signed by this store's keys."""
    sealer = config.sealer
    fields = (
        owner, last.conversation_id, last.branch, *(last.parent or ("", "")), last.at,
        last.length, last.revision, last.rechained, last.link,
    )  # fmt: skip
    return any(last.signature == sealer.head(fields, k) for k in sealer.keys)


def gone_verdict(config: Config, owner: str, last: Head) -> BranchVerdict:
    """The verdict on a branch the caller holds a head of and the store does not: the
    database went back to before it existed (branches are never removed one by one; a
    deleted conversation has none left to verify)."""
    if not _genuine(config, owner, last):
        found = Finding(FindingKind.HEAD, -1, "the head you gave does not verify")
    else:
        detail = (
            f"branch {last.branch!r} is not stored, and your head says it held "
            f"{last.length} messages at revision {last.revision}: the database is older "
            "than that branch"
        )
        found = Finding(FindingKind.ROLLED_BACK, -1, detail)
    return BranchVerdict(last.conversation_id, last.branch, 0, (found,))


def rollback_findings(
    config: Config, owner: str, row: BranchRow, links: dict[int, str], last: Head
) -> list[Finding]:
    """What is wrong with ``row`` given ``last``, the head the caller saw before: ``[]``
    when the stored branch is that head or a successor of it (appends since, or an
    erasure since). ``links`` must hold the verified link at ``last.length - 1`` when
    the stored revision is later and no erasure rechained the branch since."""
    if not _genuine(config, owner, last):
        return [Finding(FindingKind.HEAD, -1, "the head you gave does not verify")]
    if row.revision < last.revision:
        detail = f"revision {row.revision} is older than your head's {last.revision}"
        return [Finding(FindingKind.ROLLED_BACK, -1, detail)]
    if row.revision == last.revision:
        if (row.length, row.link) != (last.length, last.link):
            detail = f"revision {row.revision} holds other messages than your head"
            return [Finding(FindingKind.ROLLED_BACK, -1, detail)]
        return []
    if row.rechained > last.revision:
        return []  # an erasure rewrote the chain since: the receipt says what
    if last.length and links.get(last.length - 1) != last.link:
        detail = f"revision {row.revision} does not extend your head (revision {last.revision})"
        return [Finding(FindingKind.ROLLED_BACK, last.length - 1, detail)]
    return []
