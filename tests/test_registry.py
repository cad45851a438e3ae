"""The provider registry (issue 32, item 7; ADR 0095): one profile per provider, read by
the porting rules, the adapters, ``infer_model`` and OpenTelemetry; a missing entry
anywhere fails here, and an unknown provider is an error where it is named."""

from __future__ import annotations

import importlib
import os
import pkgutil
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import pytest

import golem_core.wire
from golem_core import Message, ModelRequest, ModelSettings, PromptCache, Role, ToolCallPart
from golem_core.providers import (
    MISTRAL_CALL_IDS,
    PROFILES,
    Provider,
    Target,
    UnknownProviderError,
    port_history,
    profile_of,
    recorded_provider,
)
from golem_core.retry import RetryPolicy
from golem_core.wire import openai_responses as responses_wire
from golem_core.wire._cache import add_cache_markers
from golem_core.wire.gemini import with_thought_signature
from golem_shell import UsageError
from golem_shell.models import ADAPTERS, infer_model
from golem_shell.models._adapter import HTTPModel
from golem_shell.models._http import ProviderHTTP
from golem_shell.observe._otel import model_names

CODEC_NAMES = ("PROVIDER", "encode_request", "decode_response", "decode_error", "media_block")


def adapter(provider: Provider, name: str = "some-model") -> HTTPModel:
    module, cls = ADAPTERS[provider]
    made: HTTPModel = getattr(importlib.import_module(module), cls)(
        name, api_key="k", base_url="http://127.0.0.1:9/v1"
    )
    return made


def all_adapter_classes() -> set[type[HTTPModel]]:
    for module, _ in ADAPTERS.values():
        importlib.import_module(module)
    found: set[type[HTTPModel]] = set()
    todo = list(HTTPModel.__subclasses__())
    while todo:
        cls = todo.pop()
        found.add(cls)
        todo += cls.__subclasses__()
    return {c for c in found if c.__module__.startswith("golem_shell.models")}


def test_every_provider_has_one_profile_codec_and_adapter() -> None:
    assert set(PROFILES) == set(Provider)
    assert set(ADAPTERS) == set(Provider)
    for provider, profile in PROFILES.items():
        assert profile.provider is provider
        assert profile.prefixes[0] == provider.value  # the one spelling leads
        for name in (*CODEC_NAMES, "StreamDecoder"):
            assert hasattr(profile.codec, name), (provider, name)
        assert profile.otel_name and profile.key_env and profile.base_url_env
        assert profile.default_base_url.startswith("https://")
        assert profile.display_name == profile.codec.PROVIDER


def test_every_codec_module_belongs_to_a_profile() -> None:
    codecs = {  # a codec module decodes responses; helpers beside them (strict) do not
        f"golem_core.wire.{m.name}"
        for m in pkgutil.iter_modules(golem_core.wire.__path__)
        if not m.name.startswith("_")
        and hasattr(importlib.import_module(f"golem_core.wire.{m.name}"), "decode_response")
    }
    assert codecs == {p.codec.__name__ for p in PROFILES.values()}  # type: ignore[attr-defined]


def test_every_adapter_class_names_a_registered_provider() -> None:
    classes = all_adapter_classes()
    assert {c.provider for c in classes} == set(Provider)
    for cls in classes:
        module, name = ADAPTERS[cls.provider]
        assert (cls.__module__, cls.__name__) == (module, name)


def test_every_prefix_makes_its_providers_adapter(monkeypatch: pytest.MonkeyPatch) -> None:
    prefixes = [p for profile in PROFILES.values() for p in profile.prefixes]
    assert len(prefixes) == len(set(prefixes))
    for profile in PROFILES.values():
        for env in profile.key_env:
            monkeypatch.setenv(env, "k")
        for prefix in profile.prefixes:
            model = infer_model(f"{prefix}:m")
            assert isinstance(model, HTTPModel)
            assert model.provider is profile.provider
            assert model.name == f"{profile.provider.value}:m"  # one spelling, any alias
            assert model.url.startswith(profile.default_base_url)


def test_opentelemetry_names_come_from_the_registry() -> None:
    for provider, profile in PROFILES.items():
        assert model_names(adapter(provider)) == (profile.otel_name, "some-model")
    assert PROFILES[Provider.GOOGLE].otel_name == "gcp.gemini"
    assert PROFILES[Provider.OPENAI_RESPONSES].otel_name == "openai"


def test_each_profiles_cache_rule_is_what_its_encoder_writes() -> None:
    on = ModelSettings(cache=PromptCache(key="conv"))
    off = ModelSettings(cache=None)
    history = (Message.user("a"), Message.assistant("b"), Message.user("c"))
    for provider, profile in PROFILES.items():
        model = adapter(provider)
        cached = ModelRequest(history, instructions="Be brief.", settings=on)
        plain = attrs.evolve(cached, settings=off)
        body: dict[str, Any] = model._encode(plain, stream=False).unwrap()
        add_cache_markers(body, cached, profile.cache)
        assert body == model._encode(cached, stream=False).unwrap(), provider


def test_compaction_and_vendor_facts_are_the_profiles() -> None:
    folds = {p: r.fold for p, profile in PROFILES.items() if (r := profile.compaction)}
    assert folds.items() >= {(Provider.OPENAI_RESPONSES, "request"), (Provider.ANTHROPIC, "answer")}
    assert Provider.OPENAI not in folds and Provider.GOOGLE not in folds
    for provider, fold in folds.items():
        rule = PROFILES[provider].compaction
        assert rule is not None and rule.marker in rule.keys
        if fold == "request":  # native_compaction asks its adapter to compact
            assert callable(getattr(type(adapter(provider)), "compact", None)), provider
    responses = PROFILES[Provider.OPENAI_RESPONSES].compaction
    assert responses is not None and not responses.readable
    assert responses.keys == {
        responses_wire.COMPACTION_CONTENT_KEY,
        responses_wire.COMPACTION_ID_KEY,
    }
    chat = PROFILES[Provider.OPENAI]
    assert [v.name for v in chat.vendors] == ["Mistral"]
    assert chat.guess_quirks("api.mistral.ai", "gpt-4o") == {MISTRAL_CALL_IDS}
    assert chat.guess_quirks("localhost", "mistralai/Devstral-Small") == {MISTRAL_CALL_IDS}
    assert chat.guess_quirks("notmistral.ai", "gpt-4o") == frozenset()
    assert PROFILES[Provider.ANTHROPIC].schema_problem is not None


def test_an_unknown_provider_is_an_error_where_it_is_named() -> None:
    with pytest.raises(UnknownProviderError, match=r"unknown provider 'gemini'.*'google'"):
        Target("gemini", "m")
    with pytest.raises(UnknownProviderError, match="unknown quirks"):
        Target(Provider.ANTHROPIC, "m", quirks=["mistral-call-ids"])
    with pytest.raises(UnknownProviderError):
        profile_of("frobco")

    def http() -> ProviderHTTP:
        return ProviderHTTP(
            provider="x",
            url="http://127.0.0.1:9/x",
            headers={},
            secret=None,
            http_client=None,
            timeout=1.0,
            retry=RetryPolicy(),
            decode_error=PROFILES[Provider.OPENAI].codec.decode_error,
        )

    class Nameless(HTTPModel):
        pass

    class Unknown(HTTPModel):
        provider = "frobco"  # type: ignore[assignment]

    with pytest.raises(UsageError, match="Nameless names no provider"):
        Nameless("m", http=http(), settings=None)
    with pytest.raises(UsageError, match="Unknown: unknown provider 'frobco'"):
        Unknown("m", http=http(), settings=None)


def test_stored_spellings_of_a_provider_still_read_as_it() -> None:
    for old in ("google", "gemini", "Gemini", "gcp.gemini", "google-gla"):
        assert recorded_provider(old) is Provider.GOOGLE
    assert recorded_provider("frobco") is None and recorded_provider(None) is None
    call = with_thought_signature(ToolCallPart("c1", "f", "{}"), "c2ln")
    for old in ("gemini", "Gemini"):
        step = Message(
            Role.ASSISTANT, (call,), provider=old, model="gemini-2.5-flash", endpoint="g"
        )
        history = (Message.user("go"), step, Message.tool_result("c1", "f", "ok"))
        ported, report = port_history(history, Target("google", "gemini-2.5-flash", "g"))
        assert ported[1] == step and report.left_off == ()  # its own signature goes back


# -- a fifth provider --------------------------------------------------------------------

FIFTH = Path(__file__).resolve().parent / "fifth_provider"
ACME_MEMBER = '    ACME = "acme"\n'
ACME_CODEC = "from golem_core.wire import acme as _acme\n"
ACME_PROFILE = """\
    ProviderProfile(
        provider=Provider.ACME,
        codec=_acme,
        prefixes=("acme",),
        default_base_url="https://api.acme.test/v1",
        key_env=("ACME_API_KEY",),
        key_header=("authorization", "Bearer "),
        base_url_env="ACME_BASE_URL",
        otel_name="acme",
        cache=CacheRule.KEY,
        call_ids=CallIdRule(max_length=_acme.MAX_CALL_ID_LENGTH),
        model_family="anvil-",
        compaction=CompactionRule(
            marker=_acme.COMPACTION_KEY,
            keys=frozenset({_acme.COMPACTION_KEY}),
            readable=True,
            fold="answer",
        ),
    ),
"""
ACME_REGISTRATION = '    Provider.ACME: ("golem_shell.models.acme", "AcmeModel"),\n'


def _insert_after(path: Path, anchor: str, text: str) -> None:
    source = path.read_text()
    assert source.count(anchor) == 1, (path, anchor)
    path.write_text(source.replace(anchor, anchor + text))


def test_a_fifth_provider_is_a_profile_a_codec_an_adapter_and_one_line(tmp_path: Path) -> None:
    """Acme, a fictional provider, added to a copy of golem the documented way: its
    ``Provider`` member and profile (``_providers.py``), its codec (a new
    ``golem_core/wire/acme.py``), its adapter (a new ``golem_shell/models/acme.py``) and
    one ``ADAPTERS`` line; no other golem module is touched. This file's checks then hold
    for five providers, and ``fifth_provider/check_acme.py`` runs it end to end: a run,
    porting its history, its compaction (all read from its profile)."""
    root = Path(golem_core.__file__ or "").resolve().parent.parent
    skip = shutil.ignore_patterns("__pycache__")
    for package in ("golem_core", "golem_shell"):
        shutil.copytree(root / package, tmp_path / package, ignore=skip)
    providers = tmp_path / "golem_core" / "_providers.py"
    _insert_after(providers, 'OPENAI_RESPONSES = "openai-responses"\n', ACME_MEMBER)
    _insert_after(
        providers, "from golem_core.wire import openai_responses as _responses\n", ACME_CODEC
    )
    _insert_after(providers, "_PROFILES: Final = (\n", ACME_PROFILE)
    shutil.copy(FIFTH / "acme_wire.py", tmp_path / "golem_core" / "wire" / "acme.py")
    shutil.copy(FIFTH / "acme_model.py", tmp_path / "golem_shell" / "models" / "acme.py")
    _insert_after(
        tmp_path / "golem_shell" / "models" / "__init__.py",
        "ADAPTERS: dict[Provider, tuple[str, str]] = {\n",
        ACME_REGISTRATION,
    )
    this = test_a_fifth_provider_is_a_profile_a_codec_an_adapter_and_one_line.__name__
    checks = tmp_path / "checks"
    checks.mkdir()
    for name in ("conftest.py", "test_registry.py"):
        shutil.copy(Path(__file__).parent / name, checks / name)
    (tmp_path / "properties").mkdir()  # the conftest loads the Hypothesis profile from there
    shutil.copy(root / "properties" / "profiles.py", tmp_path / "properties" / "profiles.py")
    shutil.copy(FIFTH / "check_acme.py", checks / "test_acme.py")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            "-c",
            os.devnull,
            "--deselect",
            f"checks/test_registry.py::{this}",
            str(checks),
        ],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "1 deselected" in done.stdout and "skipped" not in done.stdout, done.stdout[-2000:]


# -- a mistyped model string says what was meant (first contact, round 3; issue 26) --------


@pytest.mark.parametrize(
    ("typed", "meant"),
    [
        ("opnai:gpt-4o", "openai:gpt-4o"),
        ("antropic:claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"),
        ("gpt-4o-mini", "openai:gpt-4o-mini"),
        ("claude-sonnet-4-5", "anthropic:claude-sonnet-4-5"),
        ("gemini-2.5-flash", "google:gemini-2.5-flash"),
        ("openai/gpt-4o", "openai:gpt-4o"),
        ("claude:claude-3-5-haiku", "anthropic:claude-3-5-haiku"),
    ],
)
def test_a_mistyped_model_string_says_what_was_meant(typed: str, meant: str) -> None:
    with pytest.raises(UsageError, match=re.escape(f"did you mean {meant!r}?")):
        infer_model(typed)


def test_an_unknown_model_string_without_a_likely_meaning_lists_the_prefixes() -> None:
    with pytest.raises(UsageError) as caught:
        infer_model("frobco:frob-large")
    assert "did you mean" not in str(caught.value) and "'openai:'" in str(caught.value)
