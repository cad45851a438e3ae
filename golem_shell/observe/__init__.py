"""The observation room: a run's lifecycle events for the caller, spans and metrics for
OpenTelemetry (ADRs 0052, 0053).

``_observe`` turns a run's progress into events and spans; ``_otel`` is the exporter,
loaded only when the ``otel`` extra is installed and asked for.

May import: ``golem_core``'s public modules and the leaves (``_errors``, ``_hooks``,
``_results``). ``run/``, ``engines/`` and ``_agent`` import it.
"""
