"""The context room: history work that needs an effect (a model, a tokenizer, a store).

Summaries (``_summarize``), provider-native compaction (``_native_compaction``), the recall
tool (``_recall``), token counters (``_tokens``, ``_token_counters``), input that is a
provider's or a UI's history (``_foreign_history``) and the JSON Schema of history JSON
(``_history_schema``). The pure half of this work is ``golem_core.history``.

May import: ``golem_core``'s public modules, ``models/``, ``store/``, ``tools/`` and the
leaves. ``run/``, ``_agent`` and ``cli`` import it; it never imports them.
"""
