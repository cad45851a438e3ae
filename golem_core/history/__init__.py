"""The history room: what golem does to a conversation's messages between runs, purely.

Pairing checks and repairs (``_history``), the trust boundary (``_sanitize``,
``_provenance``, ``_urls``), context processors and compaction records (``_processors``,
``_context``, ``_compaction``), cache-cut reports (``_prefix``), instructions
(``_instructions``) and porting a history to the provider it is sent to (``_port``,
with Mistral's call ids in ``_call_ids`` and model names compared in
``_model_names``).
Users import these names from ``golem_core``.

May import: the ground (``_messages``, ``_model``, ``_providers``, ``_identity``),
``codec/`` and ``wire/``; never ``loop/`` (the loop imports history, not back).
"""
