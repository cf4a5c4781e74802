import time
from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from torchlight.data import BPETokenizer, TokenizerError
from torchlight.data.datasets import tiny_shakespeare
from torchlight.data.text.bpe import _merge

SAMPLE = (
    "First Citizen: Before we proceed any further, hear me speak.\n"
    "Le cœur a ses raisons que la raison ne connaît point. « Déjà ? » — 1234 $5.99\n"
    "日本語のテキストと絵文字 🎉🎉 🙂, snake_case_names and tabs\tand  double  spaces.\n"
) * 20


@pytest.fixture(scope="module")
def tok():
    return BPETokenizer().train(SAMPLE, vocab_size=400)


def naive_merges(text, vocab_size, pattern_tok):
    """Reference trainer: recount every pair before every merge (slow, obviously right)."""
    words = [list(c.encode("utf-8")) for c in pattern_tok._chunks(text)]
    merges = []
    for new_id in range(256, vocab_size):
        counts = Counter()
        for w in words:
            counts.update(zip(w, w[1:]))
        if not counts:
            break
        best = min(counts, key=lambda p: (-counts[p], p))  # most frequent, then smallest ids
        merges.append(best)
        words = [_merge(w, best, new_id) for w in words]
    return merges


def test_vocab_size_and_learned_tokens(tok):
    assert len(tok) == tok.vocab_size == 400 and len(tok.merges) == 144
    learned = {tok.token_bytes(i) for i in range(256, 400)}
    assert max(len(b) for b in learned) >= 5
    # Merges never cross a pre-split boundary: a space only ever leads a token (or fills it).
    assert all(b" " not in b[1:] or not b.strip() for b in learned)


@given(st.text())
@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
def test_round_trip_on_arbitrary_unicode(tok, text):
    ids = tok.encode(text)
    assert all(0 <= i < len(tok) for i in ids)
    assert tok.decode(ids) == text
    assert tok.decode(ids, errors="strict") == text


@given(st.text(min_size=0, max_size=200), st.integers(256, 320))
@settings(max_examples=60, deadline=None)
def test_round_trip_when_trained_on_the_same_text(text, vocab_size):
    t = BPETokenizer().train(text, vocab_size)
    assert t.decode(t.encode(text)) == text
    assert len(t) <= vocab_size


@given(st.text(alphabet="ab c\n", max_size=60), st.integers(256, 290))
@settings(max_examples=80, deadline=None)
def test_incremental_training_equals_naive_recounting(text, vocab_size):
    t = BPETokenizer().train(text, vocab_size)
    assert t.merges == naive_merges(text, vocab_size, t)


def test_incremental_equals_naive_on_real_text():
    text = SAMPLE[:3000]
    t = BPETokenizer().train(text, 330)
    assert t.merges == naive_merges(text, 330, t)


def test_compression_and_determinism(tok):
    ids = tok.encode(SAMPLE)
    assert len(ids) < len(SAMPLE.encode()) / 3
    assert BPETokenizer().train(SAMPLE, 400).merges == tok.merges


def test_iterable_of_documents_and_early_stop():
    t = BPETokenizer().train(["ab", "ab"], vocab_size=1000)
    assert t.merges == [(97, 98)] and len(t) == 257  # ran out of pairs
    with pytest.raises(ValueError):
        BPETokenizer().train("x", vocab_size=255)


def test_special_tokens():
    t = BPETokenizer().train(
        "hello world " * 10, vocab_size=262, special_tokens=["<|eot|>", "<|pad|>"]
    )
    assert len(t) == 262 and t.special_tokens == {"<|eot|>": 260, "<|pad|>": 261}
    text = "hello<|eot|>world"
    ids = t.encode(text, allow_special=True)
    assert 260 in ids and t.decode(ids) == text
    plain = t.encode(text)
    assert 260 not in plain and t.decode(plain) == text  # not injectable by default
    assert t.token_bytes(261) == b"<|pad|>"
    with pytest.raises(TokenizerError):
        BPETokenizer(special_tokens=["a", "a"])


def test_custom_pattern_never_loses_text():
    t = BPETokenizer(pattern=r"[a-z]+").train("abc, abd! abe?", 260)
    text = "abc, ab\u00e9 \n\t!!"
    assert t.decode(t.encode(text)) == text


def test_errors():
    t = BPETokenizer()
    with pytest.raises(TokenizerError, match="surrogate"):
        t.encode("a\ud800b")
    with pytest.raises(TokenizerError):
        t.decode([256])
    assert t.decode(list("é".encode())[:1]) == "\ufffd"  # a cut multi-byte character
    with pytest.raises(UnicodeDecodeError):
        t.decode(list("é".encode())[:1], errors="strict")
    with pytest.raises(TokenizerError):
        BPETokenizer(merges=[(300, 1)])
    with pytest.raises(TokenizerError):
        BPETokenizer(merges=[(1, 2), (1, 2)])


def test_save_load(tmp_path, tok):
    tok.save(tmp_path / "bpe.json")
    back = BPETokenizer.load(tmp_path / "bpe.json")
    assert back == tok and back.encode(SAMPLE) == tok.encode(SAMPLE)


def test_tiny_shakespeare_to_1000_tokens_in_under_60_seconds(data_root):
    text = tiny_shakespeare()
    start = time.perf_counter()
    t = BPETokenizer().train(text, vocab_size=1000)
    elapsed = time.perf_counter() - start
    assert len(t) == 1000
    assert elapsed < 60, f"BPE training took {elapsed:.1f} s"
    ids = t.encode(text)
    assert t.decode(ids) == text and len(ids) < len(text) / 2
