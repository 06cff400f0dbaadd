"""Prompts for a load run: an uploaded JSONL dataset, or synthetic prompts matching the workload's input and output
lengths (mean and p95).

Dataset lines (JSON objects): `prompt` (string) or `messages` (chat list), optional `expected` (exact answer),
`regex`, `json_schema`, `max_tokens`, `min_output_tokens`, `max_output_tokens`. Every line is checked before the run;
a bad line is reported with its line number (`DatasetError.problems`).

Synthetic lengths (dossier_agent.contract.lengths): log-normal with the given mean and p95 (σ from
ln(p95/mean) = 1.645σ − σ²/2), constant without a p95; or drawn from quantile knots (`*_quantiles`) where a
log-normal cannot have that mean and p95.

Text is made of common English words; its token count comes from an operator-supplied `tokenizer.json` (through
the `tokenizers` package, when installed) or, without one, from a words→tokens line fitted against the server's
own `usage.prompt_tokens`. Either way the runner first sends a few calibration prompts and hands the
server's counts to `TokenCounter.calibrate_server`: without a tokenizer it fits the line; with one it compares the
tokenizer's counts with the server's (prompt_tokens = offset + ratio·counted; the offset is what the chat template and
special tokens add), reports both, and flags a ratio more than `CALIBRATION_TOLERANCE` away from 1 (the tokenizer is
not the server's) instead of trusting either count silently. An unflagged offset is taken off each synthetic prompt
so the server sees the workload's length, as the fitted line's intercept does without a tokenizer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from dossier_agent.contract import lengths

_WORD_TEXT = (
    "the of and to in is was for that on with as by at from it his an are be this which or had not but "
    "have one were they you all her she there their been has would more when will who some time if no can "
    "about out also into only other new first any may these two after most over such where year made many "
    "then years world well them back even much state through people city work part used before"
)
_WORDS = tuple(_WORD_TEXT.split())
MAX_LINE_PROBLEMS = 50
Z95 = lengths.Z95
CALIBRATION_TOLERANCE = 0.10  # |ratio − 1| above this flags a tokenizer.json that does not count like the server
_FIT_STEPS = 8  # bounded corrections of a synthetic text whose real count misses its target


class TokenizerError(ValueError):
    """The operator's tokenizer.json cannot be used (missing, unreadable, or `tokenizers` not installed)."""


class DatasetError(ValueError):
    def __init__(self, problems: list[str]):
        super().__init__("dataset: " + "; ".join(problems[:10]) + (" …" if len(problems) > 10 else ""))
        self.problems = problems


@dataclass
class PromptItem:
    prompt: str | None = None
    messages: list[dict[str, Any]] | None = None
    max_tokens: int | None = None
    expected: str | None = None
    regex: str | None = None
    json_schema: dict[str, Any] | None = None
    min_output_tokens: int | None = None
    max_output_tokens: int | None = None
    input_tokens: int | None = None  # intended or counted length, when known
    line: int | None = None  # line of the dataset file
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        if self.prompt is not None:
            return self.prompt
        return "\n".join(str(m.get("content", "")) for m in self.messages or [])


def _check_item(data: Any, number: int) -> tuple[PromptItem | None, list[str]]:
    where = f"line {number}"
    if not isinstance(data, dict):
        return None, [f"{where}: not a JSON object"]
    problems = []
    prompt, messages = data.get("prompt"), data.get("messages")
    if (prompt is None) == (messages is None):
        problems.append(f"{where}: needs exactly one of prompt or messages")
    if prompt is not None and (not isinstance(prompt, str) or not prompt.strip()):
        problems.append(f"{where}: prompt must be a non-empty string")
    if messages is not None and (not isinstance(messages, list) or not messages or not all(
            isinstance(m, dict) and isinstance(m.get("role"), str) and "content" in m for m in messages)):
        problems.append(f"{where}: messages must be a non-empty list of {{role, content}} objects")
    for key in ("max_tokens", "min_output_tokens", "max_output_tokens"):
        value = data.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            problems.append(f"{where}: {key} must be a positive integer")
    if data.get("expected") is not None and not isinstance(data["expected"], str):
        problems.append(f"{where}: expected must be a string")
    if data.get("regex") is not None:
        import re

        try:
            re.compile(data["regex"])
        except (re.error, TypeError) as error:
            problems.append(f"{where}: regex does not compile: {error}")
    if data.get("json_schema") is not None and not isinstance(data["json_schema"], dict):
        problems.append(f"{where}: json_schema must be an object")
    if problems:
        return None, problems
    known = {"prompt", "messages", "max_tokens", "expected", "regex", "json_schema", "min_output_tokens",
             "max_output_tokens"}
    return PromptItem(prompt=prompt, messages=messages, max_tokens=data.get("max_tokens"),
                      expected=data.get("expected"), regex=data.get("regex"), json_schema=data.get("json_schema"),
                      min_output_tokens=data.get("min_output_tokens"), max_output_tokens=data.get("max_output_tokens"),
                      extra={k: v for k, v in data.items() if k not in known}, line=number), []


def load_dataset(lines: Iterable[str]) -> list[PromptItem]:
    """Parse and check every line; raise `DatasetError` listing each bad line (by number) before anything runs."""
    items, problems = [], []
    for number, line in enumerate(lines, 1):
        text = line.strip()
        if not text:
            continue
        try:
            data = json.loads(text)
        except ValueError as error:
            problems.append(f"line {number}: not valid JSON ({error.args[0] if error.args else error})")
        else:
            item, found = _check_item(data, number)
            problems += found
            if item is not None:
                items.append(item)
        if len(problems) >= MAX_LINE_PROBLEMS:
            problems.append("(stopped after this many problems)")
            break
    if problems:
        raise DatasetError(problems)
    if not items:
        raise DatasetError(["the dataset has no prompt"])
    return items


def load_dataset_file(path: str | Path) -> list[PromptItem]:
    with open(path, encoding="utf-8") as handle:
        return load_dataset(handle)


def lognormal_lengths(rng: np.random.Generator, mean: float, p95: float | None, count: int,
                      low: int = 1, high: int | None = None) -> np.ndarray:
    """`count` integer lengths with the given mean and p95 (log-normal, `contract.lengths.lognormal_parameters`),
    clipped to [low, high]."""
    try:
        parameters = lengths.lognormal_parameters(mean, p95)
    except lengths.LengthError as error:
        raise ValueError(str(error)) from None
    values = np.full(count, mean) if parameters is None else rng.lognormal(parameters[0], parameters[1], count)
    return _clip(values, low, high)


def quantile_lengths(rng: np.random.Generator, knots, count: int, low: int = 1, high: int | None = None) -> np.ndarray:
    """`count` integer lengths drawn from quantile knots (inverse CDF log-linear between them,
    `contract.lengths.length_at`)."""
    pairs = lengths.check_knots(knots)
    qs = np.array([q for q, _v in pairs])
    logs = np.log(np.array([v for _q, v in pairs]))
    values = np.exp(np.interp(rng.random(count), qs, logs))
    return _clip(values, low, high)


def _clip(values: np.ndarray, low: int, high: int | None) -> np.ndarray:
    result = np.maximum(np.rint(values), low)
    if high is not None:
        result = np.minimum(result, high)
    return result.astype(np.int64)


def _lengths(rng: np.random.Generator, spec: Mapping[str, Any], prefix: str, mean: float, count: int) -> np.ndarray:
    if spec.get(f"{prefix}_quantiles") is not None:
        return quantile_lengths(rng, spec[f"{prefix}_quantiles"], count)
    return lognormal_lengths(rng, mean, spec.get(f"{prefix}_p95"), count)


class TokenCounter:
    """Counts tokens with an operator's `tokenizer.json` when given (and `tokenizers` is installed); otherwise
    converts words to tokens with a fitted line tokens = a + b·words (default a = 0, b = 1, until calibrated).

    `count` is the prompt text's own tokens (`add_special_tokens=False`): BOS and the chat template are the server's
    additions, measured by the calibration as `template_tokens`."""

    def __init__(self, tokenizer_path: str | Path | None = None):
        self.tokenizer = None
        self.source = "words"
        self.template_tokens = 0
        self._costs: np.ndarray | None = None
        if tokenizer_path:
            path = Path(tokenizer_path)
            try:
                from tokenizers import Tokenizer
            except ImportError as error:
                raise TokenizerError(f"tokenizer {path}: the `tokenizers` package is not installed "
                                     f"(pip install 'dossier-agent[tokenizer]')") from error
            if not path.is_file():
                raise TokenizerError(f"tokenizer {path}: no such file")
            try:
                self.tokenizer = Tokenizer.from_file(str(path))
            except Exception as error:  # the Rust side raises plain Exception on bad JSON or an unknown model
                raise TokenizerError(f"tokenizer {path}: not a usable tokenizer.json ({error})") from None
            self.source = "tokenizer.json"
        self.intercept = 0.0
        self.per_word = 1.0

    def count(self, text: str) -> int:
        if self.tokenizer is not None:
            return len(self.tokenizer.encode(text, add_special_tokens=False).ids)
        return max(0, round(self.intercept + self.per_word * len(text.split())))

    def words_for(self, tokens: int) -> int:
        """Words of synthetic text expected to give `tokens` prompt tokens."""
        return max(1, round((tokens - self.intercept) / self.per_word))

    def calibrate(self, words: list[int], prompt_tokens: list[int]) -> dict[str, Any]:
        """Fit tokens = a + b·words from the server's `usage.prompt_tokens` (needs two distinct word counts)."""
        x, y = np.asarray(words, dtype=float), np.asarray(prompt_tokens, dtype=float)
        if x.size < 2 or np.unique(x).size < 2:
            raise ValueError("calibration needs prompts of at least two different lengths")
        slope, intercept = np.polyfit(x, y, 1)
        if slope <= 0:
            raise ValueError("the server's prompt token counts do not grow with the prompt")
        self.per_word, self.intercept = float(slope), float(intercept)
        residual = y - (intercept + slope * x)
        self.source = "calibrated against usage.prompt_tokens"
        return {"per_word": self.per_word, "intercept": self.intercept, "points": int(x.size),
                "max_abs_error_tokens": float(np.abs(residual).max())}

    def compare(self, counted: list[int], prompt_tokens: list[int],
                tolerance: float = CALIBRATION_TOLERANCE) -> dict[str, Any]:
        """Compare the tokenizer's counts with the server's `usage.prompt_tokens` for the same texts: fit
        prompt_tokens = offset + ratio·counted, flag |ratio − 1| > tolerance. Unflagged, the offset (rounded, at least
        0) becomes `template_tokens`, taken off every synthetic prompt; flagged, nothing is adjusted."""
        x, y = np.asarray(counted, dtype=float), np.asarray(prompt_tokens, dtype=float)
        if x.size < 2 or np.unique(x).size < 2:
            raise ValueError("calibration needs prompts of at least two different lengths")
        ratio, offset = (float(v) for v in np.polyfit(x, y, 1))
        flagged = abs(ratio - 1.0) > tolerance
        self.template_tokens = 0 if flagged else max(0, round(offset))
        result = {"counted": [int(v) for v in counted], "reported": [int(v) for v in prompt_tokens],
                  "points": int(x.size), "mean_difference_tokens": float(np.mean(y - x)),
                  "offset_tokens": offset, "ratio": ratio, "tolerance": tolerance, "flagged": flagged,
                  "template_tokens": self.template_tokens}
        if flagged:
            result["reason"] = (f"the server counts {ratio:.3f} tokens per tokenizer.json token (more than "
                                f"{tolerance:.0%} away from 1): the tokenizer does not match the served model; "
                                f"prompt lengths follow the tokenizer.json uncorrected")
        return result

    def calibrate_server(self, texts: list[str], prompt_tokens: list[int]) -> dict[str, Any]:
        """The runner's one calibration step: the server's counts for `texts` either fit the words→tokens line
        (no tokenizer) or are compared with the tokenizer's (see `compare`)."""
        if self.tokenizer is None:
            return {"method": "words fit", **self.calibrate([len(t.split()) for t in texts], prompt_tokens)}
        return {"method": "tokenizer.json", **self.compare([self.count(t) for t in texts], prompt_tokens)}

    def _word_costs(self) -> np.ndarray:
        """Tokens each vocabulary word adds after a space (additive for whitespace-split tokenizers; every text
        built from them is counted for real afterwards, so a tokenizer that merges across words is still right)."""
        if self._costs is None:
            base = self.count("0")
            self._costs = np.array([max(1, self.count("0 " + word) - base) for word in _WORDS], dtype=np.int64)
        return self._costs

    def text_for(self, rng: np.random.Generator, tokens: int, salt: int) -> tuple[str, int]:
        """Synthetic text for a prompt the server should count as `tokens`, and the tokens it is expected to count:
        with a tokenizer, the text's real count plus `template_tokens`; without, `tokens` (through the fitted line)."""
        if self.tokenizer is None:
            return synthetic_text(rng, self.words_for(tokens), salt), tokens
        target = max(1, tokens - self.template_tokens)
        costs = self._word_costs()
        head = str(salt)
        remaining = target - self.count(head)
        picks: list[int] = []
        if remaining > costs.max():
            drawn = rng.integers(0, len(_WORDS), int(remaining // costs.min()) + 1)
            keep = int(np.searchsorted(np.cumsum(costs[drawn]), remaining - costs.max(), side="right"))
            picks = drawn[:keep].tolist()
            remaining -= int(costs[drawn[:keep]].sum())
        picks += self._fill(rng, remaining)
        best: tuple[int, str, int] | None = None
        for _ in range(_FIT_STEPS):
            text = " ".join([head, *(_WORDS[i] for i in picks)])
            real = self.count(text)
            if best is None or abs(real - target) < best[0]:
                best = (abs(real - target), text, real)
            if real == target:
                break
            if real > target and picks:
                picks.pop()
            else:
                more = self._fill(rng, target - real)
                if not more:
                    break
                picks += more
        assert best is not None
        return best[1], best[2] + self.template_tokens

    def _fill(self, rng: np.random.Generator, remaining: int) -> list[int]:
        """Words whose costs add up to `remaining` (or as close below as the vocabulary allows)."""
        costs = self._word_costs()
        picks = []
        while remaining > 0:
            fitting = np.flatnonzero(costs <= remaining)
            if fitting.size == 0:
                break
            exact = np.flatnonzero(costs == remaining)
            choice = int(rng.choice(exact)) if exact.size else int(fitting[np.argmax(costs[fitting])])
            picks.append(choice)
            remaining -= int(costs[choice])
        return picks


def synthetic_text(rng: np.random.Generator, words: int, salt: int) -> str:
    """`words` common words, starting with a unique number so no two prompts share a cached prefix."""
    picks = rng.integers(0, len(_WORDS), max(0, words - 1))
    return " ".join([str(salt), *(_WORDS[i] for i in picks)])


def synthetic_prompts(spec: Mapping[str, Any], count: int, counter: TokenCounter, seed: int = 0,
                      chat: bool = True) -> list[PromptItem]:
    """`count` prompts: `input_tokens_mean` (required), `input_tokens_p95` or `input_tokens_quantiles`,
    `output_tokens_mean` / `output_tokens` (default 128), `output_tokens_p95` or `output_tokens_quantiles`, `system`
    (an optional system message). The lengths' distributions: dossier_agent.contract.lengths."""
    mean_in = spec.get("input_tokens_mean")
    if not isinstance(mean_in, (int, float)) or mean_in <= 0:
        raise ValueError("synthetic prompts need input_tokens_mean > 0")
    rng = np.random.default_rng(seed)
    inputs = _lengths(rng, spec, "input_tokens", float(mean_in), count)
    out_mean = float(spec.get("output_tokens_mean", spec.get("output_tokens", 128)))
    outputs = _lengths(rng, spec, "output_tokens", out_mean, count)
    items = []
    for i in range(count):
        text, expected = counter.text_for(rng, int(inputs[i]), i)
        item = PromptItem(max_tokens=int(outputs[i]), input_tokens=expected)
        if chat:
            item.messages = ([{"role": "system", "content": spec["system"]}] if spec.get("system") else []) + [
                {"role": "user", "content": text}]
        else:
            item.prompt = text
        items.append(item)
    return items
