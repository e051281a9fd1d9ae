"""Turning the configuration's names into objects: the target callable and the strategies."""

from __future__ import annotations

import importlib
import os
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._engine._callables import prepare_strategies
from ._config import ConfigError, RunConfig

if TYPE_CHECKING:
    from ..abc import ChatModel

__all__ = ["Built", "build_strategies", "import_object", "import_paths"]

_FLAGS = {
    "IGNORECASE": re.IGNORECASE,
    "MULTILINE": re.MULTILINE,
    "DOTALL": re.DOTALL,
    "VERBOSE": re.VERBOSE,
    "ASCII": re.ASCII,
}


@dataclass(frozen=True, slots=True)
class Built:
    """The strategies of a run and the objects to close when it ends (model clients)."""

    strategies: tuple[object, ...]
    resources: tuple[object, ...]
    user_model: ChatModel | None = None


def import_paths(config: RunConfig) -> list[str]:
    """The folders a run imports from first: ``pythonpath`` in order, then the
    configuration's folder.

    Raises:
        ConfigError: A ``pythonpath`` folder does not exist.
    """
    folders: list[str] = []
    for index, folder in enumerate(config.pythonpath):
        if not folder.is_dir():
            where: tuple[str | int, ...] = ("pythonpath", index)
            if where not in config.lines:
                where = ("pythonpath",)
            raise config.error(
                where,
                f"{folder}: no such folder (relative paths in {config.path.name} start at its "
                f"folder, {config.directory.resolve()})",
            )
        folders.append(str(folder.resolve()))
    folders.append(str(config.directory.resolve()))
    return list(dict.fromkeys(folders))


def import_object(config: RunConfig, key: tuple[str | int, ...], spec: str) -> Any:
    """Import ``module:attribute``, the folders of :func:`import_paths` first on ``sys.path``.

    A module that calls ``sys.exit()`` while it is imported is a configuration error, not
    the end of the run: otherwise a script's ``sys.exit(0)`` would pass a CI gate with
    nothing evaluated. Ctrl-C during the import still interrupts (exit code 130), and an
    import that hangs can only be interrupted that way.

    Raises:
        ConfigError: The module or the attribute cannot be found, or importing raised or
            exited.
    """
    folders = import_paths(config)
    for folder in reversed(folders):
        if folder not in sys.path:
            sys.path.insert(0, folder)
    directory = " and ".join(folders)
    module_name, _, attribute = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name is not None and module_name.startswith(exc.name):
            raise config.error(
                key,
                f"no module named {exc.name!r} (looked in {directory} and on sys.path)",
            ) from exc
        raise config.error(key, f"importing {module_name!r} failed: {exc}") from exc
    except Exception as exc:
        raise config.error(
            key, f"importing {module_name!r} failed: {type(exc).__name__}: {exc}"
        ) from exc
    except SystemExit as exc:
        raise config.error(
            key,
            f"importing {module_name!r} called sys.exit({exc.code!r}): a module aeval imports "
            "must not exit; put its script part under 'if __name__ == \"__main__\":'",
        ) from exc
    except KeyboardInterrupt:
        raise
    except BaseException as exc:
        raise config.error(
            key,
            f"importing {module_name!r} raised {type(exc).__name__}: {exc} (a BaseException "
            "that is not an Exception: a module aeval imports must import cleanly)",
        ) from exc
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise config.error(
                key, f"module {module_name!r} has no attribute {attribute!r}"
            ) from None
        except KeyboardInterrupt:
            raise
        except SystemExit as exc:
            raise config.error(
                key,
                f"looking up {attribute!r} in {module_name!r} called sys.exit({exc.code!r}) "
                "(in the module's __getattr__): the lookup of a target or strategy must not "
                "exit",
            ) from exc
        except BaseException as exc:
            raise config.error(
                key,
                f"looking up {attribute!r} in {module_name!r} raised {type(exc).__name__}: {exc}",
            ) from exc
    return target


def _label(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": entry["label"]} if "label" in entry else {}


def _api_key(config: RunConfig, key: tuple[str | int, ...], model: Mapping[str, Any]) -> Any:
    variable = model.get("api_key_env")
    if variable is None:
        return None
    value = os.environ.get(variable)
    if not value:
        raise config.error(
            (*key, "model", "api_key_env"),
            f"the environment variable {variable} is not set: export it with the API key",
        )
    return value


def _model_options(
    config: RunConfig, key: tuple[str | int, ...], model: Mapping[str, Any]
) -> dict[str, Any]:
    options = {k: v for k, v in model.items() if k not in ("model", "api_key_env")}
    options["api_key"] = _api_key(config, key, model)
    return options


def _text(kind: str, entry: Mapping[str, Any]) -> object:
    from ..strategies import text

    args = {k: v for k, v in entry.items() if k not in ("name", "label")}
    args.update(_label(entry))
    if kind == "exact_match":
        return text.ExactMatchStrategy(**args)
    if kind == "contains":
        return text.ContainsStrategy(**args)
    if kind == "regex":
        flags = 0
        for flag in args.pop("flags", ()):
            flags |= _FLAGS[flag]
        return text.RegexStrategy(args.pop("pattern"), flags=flags, **args)
    if kind == "not_blank":
        return text.NotBlankStrategy(**args)
    if kind == "json":
        return text.JsonStrategy(**args)
    if kind == "segments":
        return text.SegmentsStrategy(**args)
    return text.GuardrailStrategy(**args)


_SAFETY_KINDS = frozenset({"refusal", "prompt_injection"})


def _safety(kind: str, entry: Mapping[str, Any]) -> object:
    from ..strategies import safety

    args = {k: v for k, v in entry.items() if k not in ("name", "label")}
    args.update(_label(entry))
    if kind == "refusal":
        return safety.RefusalStrategy(**args)
    return safety.PromptInjectionStrategy(**args)


_AGENT_KINDS = frozenset(
    {"tool_called", "tool_policy", "tool_sequence", "tool_arguments", "tool_calls", "budget"}
)


def _agent(kind: str, entry: Mapping[str, Any]) -> object:
    from ..strategies import agent

    args = {k: v for k, v in entry.items() if k not in ("name", "label", "tool")}
    label = entry.get("label")
    if kind == "tool_called":
        return agent.ToolCalledStrategy(entry.get("tool"), strategy_name=label, **args)
    if kind == "tool_arguments":
        return agent.ToolArgumentsStrategy(entry.get("tool"), strategy_name=label, **args)
    if kind == "tool_policy":
        return agent.ToolPolicyStrategy(name=label, **args)
    if kind == "tool_sequence":
        return agent.ToolSequenceStrategy(name=label, **args)
    if kind == "tool_calls":
        return _tool_calls(agent.ToolCallsStrategy, label, args)
    return agent.BudgetStrategy(name=label, **args)


def _tool_calls(strategy: Any, label: str | None, args: dict[str, Any]) -> object:
    preset = args.pop("preset", None)
    if preset is None:
        return strategy(name=label, **args)
    allowed = () if preset == "bfcl" else ("arguments", "tool_arguments")
    other = [key for key in args if key not in allowed]
    if other:
        raise ValueError(
            f"preset {preset!r} sets {', '.join(other)} itself"
            + (
                ": remove them"
                if preset == "bfcl"
                else "; only arguments and tool_arguments go with it"
            )
        )
    if preset == "bfcl":
        return strategy.bfcl(name=label)
    return strategy.trajectory(preset, name=label, **args)


def _offline_check(kind: str, entry: Mapping[str, Any]) -> object:
    from ..strategies import pii, retrieval

    args = {k: v for k, v in entry.items() if k not in ("name", "label")}
    if kind == "retrieval":
        return retrieval.RetrievalStrategy(name=entry.get("label"), **args)
    return pii.PIIStrategy(name=entry.get("label"), **args)


def _judge(
    config: RunConfig, key: tuple[str | int, ...], entry: Mapping[str, Any]
) -> tuple[object, list[object]]:
    from ..models.openai import OpenAIChatModel
    from ..strategies.judge import AiJudgeStrategy

    spec = entry["model"]
    specs = spec if isinstance(spec, list) else [spec]
    models: list[OpenAIChatModel] = [
        OpenAIChatModel(each.get("model"), **_model_options(config, key, each)) for each in specs
    ]
    args = {k: v for k, v in entry.items() if k not in ("name", "label", "model")}
    if "scale" in args:
        args["scale"] = tuple(args["scale"])
    lifted = [each["max_tokens"] for each in specs if "max_tokens" in each]
    if "max_tokens" not in args and lifted:
        # the judge sends its own max_tokens on every call, over the client's
        args["max_tokens"] = lifted[0]
    judges: OpenAIChatModel | list[OpenAIChatModel] = (
        models if isinstance(spec, list) else models[0]
    )
    return AiJudgeStrategy(judges, **args, **_label(entry)), list(models)


def _similarity(
    config: RunConfig, key: tuple[str | int, ...], entry: Mapping[str, Any]
) -> tuple[object, object]:
    from ..models.openai import OpenAIEmbedder

    try:
        module = importlib.import_module("aeval.strategies.similarity")
    except ModuleNotFoundError:
        raise config.error(
            (*key, "name"), "the similarity strategy is not available in this aeval version"
        ) from None
    spec = entry["model"]
    embedder = OpenAIEmbedder(spec.get("model"), **_model_options(config, key, spec))
    args = {"threshold": entry["threshold"]} if "threshold" in entry else {}
    strategy = module.SemanticSimilarityStrategy(embedder=embedder, **args, **_label(entry))
    return strategy, embedder


_GROUNDING = {
    "faithfulness": "FaithfulnessStrategy",
    "context_recall": "ContextRecallStrategy",
    "context_precision": "ContextPrecisionStrategy",
    "answer_relevancy": "AnswerRelevancyStrategy",
}


def _grounding(
    config: RunConfig, key: tuple[str | int, ...], kind: str, entry: Mapping[str, Any]
) -> tuple[object, list[object]]:
    from ..models.openai import OpenAIChatModel, OpenAIEmbedder
    from ..strategies import grounding

    spec = entry["model"]
    model = OpenAIChatModel(spec.get("model"), **_model_options(config, key, spec))
    resources: list[object] = [model]
    args = {k: v for k, v in entry.items() if k not in ("name", "label", "model", "embedder")}
    if "max_tokens" not in args and "max_tokens" in spec:
        args["max_tokens"] = spec["max_tokens"]
    factory = getattr(grounding, _GROUNDING[kind])
    if kind == "answer_relevancy":
        embedding = entry["embedder"]
        embedder = OpenAIEmbedder(
            embedding.get("model"), **_model_options(config, (*key, "embedder"), embedding)
        )
        resources.append(embedder)
        return factory(model, embedder, **args, **_label(entry)), resources
    return factory(model, **args, **_label(entry)), resources


def _custom(config: RunConfig, key: tuple[str | int, ...], entry: Mapping[str, Any]) -> object:
    factory = import_object(config, (*key, "class"), entry["class"])
    if not callable(factory):
        raise config.error((*key, "class"), f"{entry['class']!r} is not a class")
    try:
        instance: object = factory(**(entry.get("args") or {}))
    except SystemExit as exc:
        raise config.error(
            key,
            f"cannot build the strategy: it called sys.exit({exc.code!r}); a strategy's "
            "constructor must not exit",
        ) from exc
    except (Exception, KeyboardInterrupt):
        raise
    except BaseException as exc:
        raise config.error(
            key,
            f"cannot build the strategy: it raised {type(exc).__name__}: {exc} (a "
            "BaseException that is not an Exception)",
        ) from exc
    try:
        prepare_strategies([instance])
    except TypeError:
        raise config.error(
            key,
            f"{entry['class']!r} gave a {type(instance).__name__} object, not a strategy: it "
            "needs an evaluate(sample, output) method, or must be a function of "
            "(sample, output)",
        ) from None
    return instance


def build_strategies(config: RunConfig) -> Built:
    """Build every strategy of ``config``, in order.

    Raises:
        ConfigError: A strategy cannot be built (its constructor raised anything, or exited)
            or a custom one is not a strategy; the message names ``strategies[i]`` and
            what its constructor said.
    """
    strategies: list[object] = []
    resources: list[object] = []
    for index, entry in enumerate(config.strategies):
        strategies.append(_build_one(config, ("strategies", index), entry, resources))
    user_model = None
    if config.user_model is not None:
        from ..models.openai import OpenAIChatModel

        spec = config.user_model
        options = _model_options(config, ("user_model",), spec)
        user_model = OpenAIChatModel(spec.get("model"), **options)
        resources.append(user_model)
    return Built(tuple(strategies), tuple(resources), user_model)


def _build_one(
    config: RunConfig,
    key: tuple[str | int, ...],
    entry: Mapping[str, Any],
    resources: list[object],
) -> object:
    """One strategy (a gated one builds its own and its checks); model clients join
    ``resources``."""
    kind = entry.get("name")
    try:
        if "class" in entry:
            return _custom(config, key, entry)
        if kind == "gated":
            from ..strategies import GatedStrategy

            inner = _build_one(config, (*key, "strategy"), entry["strategy"], resources)
            checks = [
                _build_one(config, (*key, "after", i), check, resources)
                for i, check in enumerate(entry["after"])
            ]
            return GatedStrategy(inner, after=checks, **_label(entry))
        if kind == "judge":
            strategy, models = _judge(config, key, entry)
            resources.extend(models)
            return strategy
        if kind in _GROUNDING:
            strategy, models = _grounding(config, key, str(kind), entry)
            resources.extend(models)
            return strategy
        if kind == "similarity":
            strategy, embedder = _similarity(config, key, entry)
            resources.append(embedder)
            return strategy
        if kind in _AGENT_KINDS:
            return _agent(str(kind), entry)
        if kind in ("retrieval", "pii"):
            return _offline_check(str(kind), entry)
        if kind in _SAFETY_KINDS:
            return _safety(str(kind), entry)
        return _text(str(kind), entry)
    except ConfigError:
        raise
    except (TypeError, ValueError) as exc:
        raise config.error(key, f"cannot build the strategy: {exc}") from exc
    except Exception as exc:
        raise config.error(key, f"cannot build the strategy: {type(exc).__name__}: {exc}") from exc
