"""The web chat example with ``--durable`` (DBOS, in this process): its store is given
the durable agent's blob store (ADR 0152), so deleting or erasing a conversation there
reaches DBOS's system database too, and the turn's stream (ADR 0153): a canary the
person sent and the offline model said back is, afterwards, in no byte of the store's
SQLite file nor of DBOS's.

Its own module: DBOS is one per process, and the app launches it with its lifespan (and
registers its agent once per process: one app, one test).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from test_durable_erasure import CANARY, _has, _sqlite_bytes

pytest.importorskip("dbos", reason="the dbos extra is not installed")


def _turn(client: Any, text: str) -> str:
    cid: str = client.post("/api/conversations").json()["id"]
    message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
    with client.stream("POST", "/api/chat", json={"id": cid, "messages": [message]}) as r:
        assert r.status_code == 200
        body = r.read()
    assert text.encode() in body and b"[DONE]" in body  # the offline model said it back
    return cid


def test_a_durable_web_chat_turn_is_gone_from_dbos_after_delete_and_erase(
    tmp_path: Path,
) -> None:
    from web_chat_server import WebChatServer, cookie_client, load_example

    db = tmp_path / "chat.db"
    dbos_file = Path(f"{db}.dbos.sqlite")
    server = WebChatServer(load_example().make_app(str(db), delay=0.0, durable=True), str(db))
    try:
        client = cookie_client(server)
        uid = client.cookies["uid"]
        store = server.chat.store
        for action in ("delete", "erase"):
            cid = _turn(client, f"{CANARY}-{action}")
            assert len(store.load_sync(uid, cid)) == 2
            assert _has(_sqlite_bytes(dbos_file))  # the check would see it
            if action == "erase":
                receipt = store.erase_sync(uid, cid, [0, 1])
            else:
                receipt = store.delete_sync(uid, cid)
            (reached,) = receipt.blobs
            assert reached.conversations == (cid,) and reached.keys
            assert len(receipt.streams) == 1
            assert not _has(_sqlite_bytes(dbos_file)), action
            assert not _has(_sqlite_bytes(db)), action
    finally:
        server.close()
    assert not _has(_sqlite_bytes(db))
