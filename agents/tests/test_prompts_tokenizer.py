"""Synthetic prompts counted with an operator-supplied tokenizer.json, and that count calibrated against the server.

The tokenizers are trained here, with the `tokenizers` library's own trainers on generated English text (no download):
a small BPE (whitespace or GPT-2/Llama-3 style byte-level pre-tokenizer, a BOS post-processor) that splits most words
into two or more pieces, and a word-level one that counts exactly like the built-in mock (one token per word)."""

import sys

import numpy as np
import pytest
from dossier_agent.contract.load_spec import LoadSpec, SpecError
from dossier_agent.loadgen import prompts
from dossier_agent.loadgen.runner import calibration_texts, run_load_sync
from dossier_agent.mockserver import MockConfig, MockServer

tokenizers = pytest.importorskip("tokenizers")

_ENGLISH_TEXT = (
    "time person year way day thing man world life hand part child eye woman place work week case point government "
    "company number group problem fact be have do say get make go know take see come think look want give use find "
    "tell ask seem feel try leave call good new first last long great little own other old right big high different "
    "small large next early young important few public bad same able the of and to in is was for that on with as by "
    "at from it his an are this which or had not but one were they you all her she there their been has would more "
    "when will who some if no can about out also into only"
)
ENGLISH = _ENGLISH_TEXT.split(" ")
TEMPLATE_TOKENS = 7  # what the mock's "chat template" adds to usage.prompt_tokens in the template tests


def english_sentences(seed, count):
    """Generated English: sentences of 5–15 common words, some with a number (so digits are in the vocabulary)."""
    rng = np.random.default_rng(seed)
    sentences = []
    for _ in range(count):
        words = [ENGLISH[i] for i in rng.integers(0, len(ENGLISH), int(rng.integers(5, 16)))]
        if rng.random() < 0.3:
            words.insert(int(rng.integers(0, len(words))), str(int(rng.integers(0, 100_000))))
        sentences.append(" ".join(words).capitalize() + ".")
    return sentences


def train_bpe(path, pre_tokenizer):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    byte_level = pre_tokenizer == "byte_level"
    tokenizer = Tokenizer(models.BPE(unk_token=None if byte_level else "[UNK]"))
    tokenizer.pre_tokenizer = (pre_tokenizers.ByteLevel(add_prefix_space=False) if byte_level
                               else pre_tokenizers.Whitespace())
    if byte_level:
        tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400 if byte_level else 160, special_tokens=["[UNK]", "<s>"], show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet() if byte_level else [])
    tokenizer.train_from_iterator(english_sentences(1, 3000), trainer=trainer)
    tokenizer.post_processor = processors.TemplateProcessing(
        single="<s> $A", special_tokens=[("<s>", tokenizer.token_to_id("<s>"))])
    tokenizer.save(str(path))
    return Tokenizer.from_file(str(path))


@pytest.fixture(scope="module", params=["whitespace", "byte_level"])
def bpe(request, tmp_path_factory):
    path = tmp_path_factory.mktemp("bpe") / "tokenizer.json"
    return path, train_bpe(path, request.param)


@pytest.fixture(scope="module")
def word_level(tmp_path_factory):
    """A real word-level tokenizer: one token per whitespace-separated word, as the mock counts."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    path = tmp_path_factory.mktemp("words") / "tokenizer.json"
    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.train_from_iterator(english_sentences(2, 2000),
                                  trainer=trainers.WordLevelTrainer(special_tokens=["[UNK]"], show_progress=False))
    tokenizer.save(str(path))
    return path, tokenizer


def test_counter_counts_what_the_tokenizer_encodes(bpe):
    path, tokenizer = bpe
    counter = prompts.TokenCounter(path)
    assert counter.source == "tokenizer.json"
    rng = np.random.default_rng(5)
    texts = english_sentences(9, 40) + [prompts.synthetic_text(rng, n, 4000 + n) for n in (1, 7, 64, 900)] + [
        "", "  spaced   out\n\ttext  ", "Ünïcödé 東京 — émoji 🙂 and 12345678901234567890"]
    for text in texts:
        expected = len(tokenizer.encode(text, add_special_tokens=False).ids)
        assert counter.count(text) == expected, text
        # the BOS of the post-processor is the server's addition, measured by the calibration, not the prompt's
        assert counter.count(text) == len(tokenizer.encode(text).ids) - 1
    # a tokenizer that splits the synthetic words (else counting words would pass every test below by luck)
    sample = prompts.synthetic_text(rng, 2000, 1)
    assert counter.count(sample) > 1.3 * len(sample.split())


def test_synthetic_prompts_hit_mean_and_p95_in_tokenizer_tokens(bpe):
    path, tokenizer = bpe
    counter = prompts.TokenCounter(path)
    mean, p95, count, seed = 300, 600, 4096, 3
    items = prompts.synthetic_prompts({"input_tokens_mean": mean, "input_tokens_p95": p95}, count, counter,
                                      seed=seed, chat=False)
    counted = np.array([len(tokenizer.encode(item.prompt, add_special_tokens=False).ids) for item in items])
    # each prompt's recorded length is its real count, and the real count is the length drawn for it (the draw comes
    # first from the same seed), within one token: the builder fills the last tokens with words of the right cost
    assert [item.input_tokens for item in items] == counted.tolist()
    drawn = prompts.lognormal_lengths(np.random.default_rng(seed), mean, p95, count)
    assert np.abs(counted - drawn).max() <= 1
    # so what remains is the log-normal's sampling error: CV 0.53 → SE(mean) 0.8 %; SE(p95) ≈ 1.6 % (quantile
    # standard error √(p(1−p)/n)/f(q) at σ = 0.50): 3 % and 5 % are more than three standard errors each
    assert counted.mean() == pytest.approx(mean, rel=0.03)
    assert np.percentile(counted, 95) == pytest.approx(p95, rel=0.05)
    # built in tokens, not words: the same texts hold far fewer words than tokens
    assert sum(len(item.prompt.split()) for item in items) < 0.8 * counted.sum()


def test_chat_prompts_count_the_user_message(bpe):
    path, tokenizer = bpe
    counter = prompts.TokenCounter(path)
    items = prompts.synthetic_prompts({"input_tokens_mean": 50, "system": "You are terse."}, 20, counter, seed=1)
    for item in items:
        assert item.messages[0] == {"role": "system", "content": "You are terse."}
        assert len(tokenizer.encode(item.messages[-1]["content"], add_special_tokens=False).ids) == 50
        assert item.input_tokens == 50


def test_bad_tokenizer_is_named_before_any_request(tmp_path, monkeypatch):
    corrupt = tmp_path / "corrupt" / "tokenizer.json"
    corrupt.parent.mkdir()
    corrupt.write_text('{"version": "1.0", "model": {"type": "BPE", "vocab": ')
    missing = tmp_path / "nowhere" / "tokenizer.json"
    with MockServer(MockConfig()) as server:
        for path, words in ((missing, "no such file"), (corrupt, "not a usable tokenizer.json")):
            with pytest.raises(prompts.TokenizerError, match=words) as caught:
                prompts.TokenCounter(path)
            assert str(path) in str(caught.value)
            spec = LoadSpec.from_dict(_spec(server.url, "chat", path))
            with pytest.raises(SpecError, match=words) as caught:
                run_load_sync(spec)
            assert str(path) in str(caught.value)
        monkeypatch.setitem(sys.modules, "tokenizers", None)  # `import tokenizers` now raises ImportError
        with pytest.raises(SpecError, match="`tokenizers` package is not installed") as caught:
            run_load_sync(LoadSpec.from_dict(_spec(server.url, "chat", corrupt)))
        assert str(corrupt) in str(caught.value)
        assert server.snapshot()["requests"] == 0


def _spec(url, api, tokenizer, mean=40):
    return {"endpoint": {"url": url, "api": api}, "profile": {"kind": "constant", "rate": 20},
            "duration_s": 1.0, "warmup_s": 0.0, "cooldown_s": 0.0, "min_window_s": 0.5, "output_tokens": 4,
            "seed": 11, "prompts": {"synthetic": {"input_tokens_mean": mean},
                                    **({"tokenizer": str(tokenizer)} if tokenizer else {})}}


def test_calibration_flags_a_tokenizer_that_does_not_count_like_the_server(bpe):
    path, tokenizer = bpe
    logs = []
    with MockServer(MockConfig(chat_template_tokens=TEMPLATE_TOKENS)) as server:  # the mock counts words
        result = run_load_sync(LoadSpec.from_dict(_spec(server.url, "chat", path)),
                               log=lambda message, **fields: logs.append((message, fields)))
    calibration = result.meta["prompt_calibration"]
    texts = calibration_texts(11)
    counted = [len(tokenizer.encode(text, add_special_tokens=False).ids) for text in texts]
    reported = [len(text.split()) + TEMPLATE_TOKENS for text in texts]
    assert calibration["calibrated"] and calibration["method"] == "tokenizer.json"
    assert calibration["counted"] == counted and calibration["reported"] == reported
    assert calibration["mean_difference_tokens"] == pytest.approx(np.mean(np.subtract(reported, counted)))
    ratio, offset = np.polyfit(counted, reported, 1)
    assert calibration["ratio"] == pytest.approx(ratio) and calibration["offset_tokens"] == pytest.approx(offset)
    assert ratio < 0.75  # words per BPE token: far from the server's count
    assert calibration["flagged"] and calibration["template_tokens"] == 0
    assert any("does not match the served model" in message and fields.get("level") == "warning"
               for message, fields in logs)
    # flagged, the prompts keep the tokenizer's count: the server (words) reports fewer tokens than asked
    assert result.meta["token_counting"] == "tokenizer.json"
    measured = [record["in_tok"] for record in result.records if record["error"] is None]
    assert measured and max(measured) < 40


@pytest.mark.parametrize("api,template", [("chat", TEMPLATE_TOKENS), ("completions", 0)])
def test_calibration_measures_the_template_offset_and_hits_the_servers_count(word_level, api, template):
    path, tokenizer = word_level
    with MockServer(MockConfig(chat_template_tokens=TEMPLATE_TOKENS)) as server:  # no template on completions
        result = run_load_sync(LoadSpec.from_dict(_spec(server.url, api, path)))
    calibration = result.meta["prompt_calibration"]
    texts = calibration_texts(11)
    assert calibration["counted"] == [len(tokenizer.encode(text).ids) for text in texts]
    assert calibration["reported"] == [len(text.split()) + template for text in texts]
    assert calibration["mean_difference_tokens"] == pytest.approx(template)
    assert calibration["ratio"] == pytest.approx(1.0) and calibration["offset_tokens"] == pytest.approx(template)
    assert not calibration["flagged"] and calibration["template_tokens"] == template
    # the offset is taken off each prompt: the server reports exactly the workload's 40 prompt tokens
    measured = [record["in_tok"] for record in result.records if record["error"] is None]
    assert len(measured) >= 15 and set(measured) == {40}


def test_without_a_tokenizer_the_same_calibration_fits_words():
    with MockServer(MockConfig(chat_template_tokens=TEMPLATE_TOKENS)) as server:
        result = run_load_sync(LoadSpec.from_dict(_spec(server.url, "chat", None)))
    calibration = result.meta["prompt_calibration"]
    assert calibration["calibrated"] and calibration["method"] == "words fit"
    assert calibration["per_word"] == pytest.approx(1.0) and calibration["intercept"] == pytest.approx(TEMPLATE_TOKENS)
    assert {record["in_tok"] for record in result.records if record["error"] is None} == {40}


def test_compare_needs_two_lengths_and_keeps_the_offset_only_when_the_counts_agree(word_level):
    counter = prompts.TokenCounter(word_level[0])
    with pytest.raises(ValueError):
        counter.compare([10, 10], [12, 12])
    close = counter.compare([10, 100, 1000], [15, 110, 1095])  # ratio 1.09: within 10 %
    assert not close["flagged"] and close["template_tokens"] == round(close["offset_tokens"])
    far = counter.compare([10, 100, 1000], [17, 125, 1205])  # ratio 1.2: flagged, nothing adjusted
    assert far["flagged"] and far["template_tokens"] == 0 == counter.template_tokens
    assert far["ratio"] == pytest.approx(1.2)
