"""One run described once: ``RunConfig`` holds everything an evaluation is made of (the data and
its columns, the metrics and their options, criteria, the judge and the embedder with their
options, budgets, language, planted-text handling, Ray, output and report).

The command line builds it from its options and ``ragmeter.toml``, ``evaluate(config=...)``
runs it, and ``run.json`` records it whole (secrets redacted), so that a rerun or ``compare``
can say what differs between two runs (``manifest.config_differences``). Its field names are
the command's option names with underscores, as the file's keys are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ragmeter.budget import Budget, Price, price_for
from ragmeter.cluster import Executor, RayExecutor
from ragmeter.criteria import Criterion, CriterionMetric
from ragmeter.criteria.files import CriteriaError, load_criteria, parse_criterion_flag
from ragmeter.limits import MAX_INPUT_CHARS
from ragmeter.manifest import redact_options
from ragmeter.metrics import GROUPS, Metric, metric_by_name, metric_names
from ragmeter.plugins import available

DEFAULT_METRICS = ("faithfulness", "answer_relevance", "context_relevance")


def parse_value(text: str) -> Any:
    """A value given as text: JSON where it parses (``30``, ``false``), else the text itself."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def parse_options(items: Sequence[str] | None, flag: str) -> dict[str, Any]:
    """``["timeout=30", "json_mode=object"]`` -> ``{"timeout": 30, "json_mode": "object"}``."""
    options: dict[str, Any] = {}
    for item in items or []:
        name, sep, value = item.partition("=")
        if not (sep and name.strip()):
            raise ValueError(f"{flag} {item!r}: use NAME=VALUE")
        options[name.strip()] = parse_value(value.strip())
    return options


def parse_metric_options(items: Sequence[str] | None) -> dict[str, dict[str, Any]]:
    """``["faithfulness.verdicts=generate", "answer_relevance.n=5"]`` ->
    ``{"faithfulness": {"verdicts": "generate"}, "answer_relevance": {"n": 5}}``."""
    options: dict[str, dict[str, Any]] = {}
    for target, value in parse_options(items, "--option").items():
        metric, dot, param = target.partition(".")
        if not (dot and metric and param):
            raise ValueError(f"--option {target}={value}: use METRIC.PARAM=VALUE")
        options.setdefault(metric.strip(), {})[param.strip()] = value
    return options


def defined_criteria(flags: Sequence[str] | None, file: Path | None) -> list[Criterion]:
    """The criteria of ``--criterion`` and ``--criteria``, each name once."""
    criteria = [*(load_criteria(file) if file else []), *map(parse_criterion_flag, flags or [])]
    names = [c.name for c in criteria]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise CriteriaError(f"the criterion {twice[0]!r} is defined twice")
    for name in names:
        if name in available("metric") or name in GROUPS:
            raise CriteriaError(f"the criterion {name!r} has the name of a metric: rename it")
    return criteria


def configured_metrics(
    metrics: str | Sequence[str] | None,
    options: Sequence[str] | Mapping[str, Mapping[str, Any]] | None,
    criteria: Sequence[Criterion] = (),
) -> list[Metric]:
    """The metrics named (comma-separated or a list), each built with its options; an option
    given to a group (``diagnosis.soft=false``) goes to each of its metrics, and an option for
    a metric not named is an error. ``criteria`` are metrics that ``metrics`` may name; without
    ``metrics``, the default metrics and every criterion."""
    defined = {c.name: c for c in criteria}
    if metrics is None:
        metrics = [*DEFAULT_METRICS, *defined]
    elif isinstance(metrics, str):
        metrics = metrics.split(",")
    named = [m.strip() for m in metrics if m.strip()]
    if options is None or isinstance(options, Mapping):
        given = {metric: dict(values) for metric, values in (options or {}).items()}
    else:
        given = parse_metric_options(options)
    for_groups = {group: given.pop(group) for group in named if group in GROUPS and group in given}
    chosen = []
    for name in metric_names(named):
        values: dict[str, Any] = {}
        for group, group_options in for_groups.items():
            if name in GROUPS[group]:
                values.update(group_options)
        values |= given.pop(name, {})
        if name in defined:
            chosen.append(CriterionMetric(defined[name], **values))
        else:
            chosen.append(metric_by_name(name, **values))
    if given:
        raise ValueError(f"options given for metrics not chosen: {', '.join(given)}")
    return chosen


def executor_for(
    address: str | None, actors: int | None, actor_cpus: float, workers: int
) -> Executor | RayExecutor:
    """Threads in this process, or the Ray workers ``--ray`` and its options ask for."""
    if address is None:
        if actors is not None:
            raise ValueError("--ray-actors needs --ray ADDRESS")
        return "threads"
    return RayExecutor(address=address, actors=actors, actor_cpus=actor_cpus, workers=workers)


def _pairs(value: Any, flag: str) -> Any:
    """``NAME=VALUE`` items (as typed on the command line) as a table; a table stays one."""
    if isinstance(value, list | tuple):
        return parse_options(value, flag)
    return value


class RunConfig(BaseModel):
    """Everything one evaluation is made of. Field names are the options of ``ragmeter
    evaluate`` with underscores (and ``data`` for its FILE); each accepts what the command line
    gives (``metrics="a,b"``, ``judge_option=["timeout=30"]``) or what a file or a program
    would write (a list, a table)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    data: str | None = None
    """The samples file (JSONL, JSON, CSV, Parquet) or traces (phoenix:PROJECT, ...)."""
    columns: dict[str, str] | None = None
    skip_invalid: bool = False
    metrics: list[str] | None = None
    """Metric and criterion names; None: the default metrics and every criterion."""
    option: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Options per metric (or group): ``{"faithfulness": {"soft": False}}``."""
    criterion: list[str] = Field(default_factory=list)
    criteria: Path | None = None
    judge: str = "local"
    judge_option: dict[str, Any] = Field(default_factory=dict)
    embedder: str = "minilm"
    embedder_option: dict[str, Any] = Field(default_factory=dict)
    retries: int = Field(2, ge=0)
    repairs: int = Field(1, ge=0)
    workers: int = Field(1, ge=1)
    ray: str | None = None
    ray_actors: int | None = Field(None, ge=1)
    ray_actor_cpus: float = Field(1.0, gt=0)
    cache: bool = True
    max_calls: int | None = Field(None, ge=0)
    max_cost: float | None = Field(None, ge=0)
    price_in: float | None = Field(None, ge=0)
    price_out: float | None = Field(None, ge=0)
    max_input_chars: int = Field(MAX_INPUT_CHARS, ge=0)
    """0: no limit."""
    seed: int | None = None
    language: str | None = None
    keep_planted: bool = False
    out: Path | None = None
    """The results folder; None: ``runs/`` and the data's name."""
    show_samples: bool = True
    html: Path | None = None
    labels: list[Path] = Field(default_factory=list)
    scale: list[str] = Field(default_factory=list)
    server: str | None = None
    since: str | None = None
    limit: int | None = Field(None, ge=1)
    filter: str | None = None
    dataset: str | None = None
    write_back: bool = False

    @field_validator("data", mode="before")
    @classmethod
    def _data_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, Path) else value

    @field_validator("metrics", mode="before")
    @classmethod
    def _metric_list(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [m.strip() for m in value.split(",") if m.strip()]
        return value

    @field_validator("columns", mode="before")
    @classmethod
    def _column_pairs(cls, value: Any) -> Any:
        if not isinstance(value, str):
            return value
        pairs = [item.split("=", 1) for item in value.split(",") if item.strip()]
        if any(len(pair) != 2 for pair in pairs):
            raise ValueError("use SOURCE=FIELD pairs, e.g. user_input=question")
        return {source.strip(): target.strip() for source, target in pairs} or None

    @field_validator("option", mode="before")
    @classmethod
    def _metric_options(cls, value: Any) -> Any:
        return parse_metric_options(value) if isinstance(value, list | tuple) else value

    @field_validator("judge_option", mode="before")
    @classmethod
    def _judge_options(cls, value: Any) -> Any:
        return _pairs(value, "--judge-option")

    @field_validator("embedder_option", mode="before")
    @classmethod
    def _embedder_options(cls, value: Any) -> Any:
        return _pairs(value, "--embedder-option")

    @field_validator("criterion", "labels", "scale", mode="before")
    @classmethod
    def _none_is_empty(cls, value: Any) -> Any:
        return [] if value is None else value

    # -- what the run is built from ---------------------------------------------------------------

    def chosen_metrics(self) -> list[Metric]:
        """The metrics, criteria among them, each with its options."""
        return configured_metrics(
            self.metrics, self.option, defined_criteria(self.criterion, self.criteria)
        )

    def naming(self, chosen: Sequence[Metric | str]) -> RunConfig:
        """This configuration with ``chosen`` named as its metrics where it named none (the
        default metrics and every criterion), so that it is recorded, and compared, as a run
        that names them."""
        if self.metrics is not None:
            return self
        names = [m if isinstance(m, str) else m.name for m in chosen]
        return self.model_copy(update={"metrics": names})

    def price(self) -> Price | None:
        if self.price_in is None and self.price_out is None:
            return price_for(self.judge)
        if self.price_in is None or self.price_out is None:
            raise ValueError("give both price_in and price_out (--price-in, --price-out)")
        return Price(self.price_in, self.price_out)

    def budget(self) -> Budget | None:
        if self.max_calls is None and self.max_cost is None:
            return None
        price = self.price()
        if self.max_cost is not None and price is None:
            raise ValueError(
                f"max_cost needs a price and none is built in for {self.judge!r}: give "
                "price_in and price_out (US dollars per million tokens)"
            )
        return Budget(max_calls=self.max_calls, max_cost=self.max_cost, price=price)

    def executor(self) -> Executor | RayExecutor:
        return executor_for(self.ray, self.ray_actors, self.ray_actor_cpus, self.workers)

    def results_folder(self) -> Path:
        if self.out is not None:
            return self.out
        data = self.data or "samples"
        if ":" in data and not Path(data).exists():  # traces: phoenix:PROJECT, ...
            return Path("runs") / data.replace(":", "-").replace("/", "-")
        return Path("runs") / Path(data).stem

    def evaluate_keywords(self) -> dict[str, Any]:
        """The keywords of ``evaluate`` this configuration sets."""
        return {
            "judge": self.judge,
            "embedder": self.embedder,
            "out_dir": self.results_folder(),
            "cache": self.cache,
            "retries": self.retries,
            "repairs": self.repairs,
            "max_workers": self.workers,
            "on_invalid": "skip" if self.skip_invalid else "raise",
            "judge_options": self.judge_option,
            "embedder_options": self.embedder_option,
            "budget": self.budget(),
            "max_input_chars": self.max_input_chars or None,
            "seed": self.seed,
            "language": self.language,
            "planted": "keep" if self.keep_planted else "remove",
        }

    def recorded(self) -> dict[str, Any]:
        """The configuration as ``run.json`` keeps it: every field, secrets redacted."""
        record = self.model_dump(mode="json")
        for name in ("judge_option", "embedder_option"):
            record[name] = redact_options(record[name])
        return record
