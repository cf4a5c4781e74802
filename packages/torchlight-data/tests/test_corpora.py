"""The three real corpora, read from the shared data folder, with their documented counts."""

import shutil
from collections import Counter

import pytest

from torchlight.data import ChecksumError, DataError, DataNotFoundError
from torchlight.data.datasets import (
    RESOURCES,
    sentiment_sentences,
    split_text,
    tatoeba_eng_fra,
    tiny_shakespeare,
    train_val_split,
)


def test_tiny_shakespeare(data_root):
    text = tiny_shakespeare()
    assert len(text) == 1_115_394 and len(set(text)) == 65
    assert text.startswith("First Citizen:\nBefore we proceed any further, hear me speak.")
    assert text.endswith("Whiles thou art waking.\n")
    assert tiny_shakespeare(root=data_root) == text
    train, val = split_text(text, 0.1)
    assert train + val == text and len(val) == 111_539


def test_sentiment_sentences(data_root):
    sentences = sentiment_sentences()
    assert len(sentences) == 3000
    assert sum(s.label for s in sentences) == 1500
    assert Counter((s.source, s.label) for s in sentences) == {
        (src, lab): 500 for src in ("amazon", "imdb", "yelp") for lab in (0, 1)
    }
    # The two U+0085 characters of imdb stay inside their sentences (split on "\n" only).
    nel = [s for s in sentences if "\x85" in s.text]
    assert len(nel) == 2 and all(s.source == "imdb" for s in nel)
    assert all(s.text == s.text.strip() and "\t" not in s.text and s.text for s in sentences)
    text, label, source = sentences[0]
    assert source == "amazon" and label in (0, 1)
    imdb = sentiment_sentences(sources=("imdb",))
    assert len(imdb) == 1000 and imdb == [s for s in sentences if s.source == "imdb"]
    train, val = train_val_split(sentences, 0.2, seed=0)
    assert len(val) == 600 and train_val_split(sentences, 0.2, seed=0) == (train, val)
    with pytest.raises(ValueError):
        sentiment_sentences(sources=("twitter",))


def test_tatoeba_eng_fra(data_root):
    pairs = tatoeba_eng_fra()
    assert len(pairs) == 167_130
    assert pairs[0] == ("Go.", "Va !")
    assert all(len(p) == 2 for p in pairs)
    assert sum("\u202f" in fr for _, fr in pairs) > 0  # raw text keeps French typography
    short = tatoeba_eng_fra(max_words=8)
    assert len(short) == 127_422
    normalized = tatoeba_eng_fra(max_words=8, normalize=True)
    assert len(normalized) == 127_422
    assert not any("\u202f" in fr or "\u00a0" in fr for _, fr in normalized)
    assert all(e == e.lower() for e, _ in normalized[:1000])
    with pytest.raises(ValueError):
        tatoeba_eng_fra(max_words=0)


def test_third_column_is_ignored_and_malformed_lines_reported(tmp_path):
    path = tmp_path / RESOURCES["eng-fra"].path
    path.parent.mkdir(parents=True)
    path.write_text(
        "Hi.\tSalut !\tCC-BY 2.0 (France) Attribution: tatoeba.org #538123\n", encoding="utf-8"
    )
    assert tatoeba_eng_fra(root=tmp_path, verify=False) == [("Hi.", "Salut !")]
    path.write_text("no tab here\n", encoding="utf-8")
    with pytest.raises(DataError, match="fra.txt:1"):
        tatoeba_eng_fra(root=tmp_path, verify=False)
    bad = tmp_path / RESOURCES["sentiment/amazon"].path
    bad.parent.mkdir(parents=True)
    bad.write_text("great\t1\nawful\tmaybe\n", encoding="utf-8")
    with pytest.raises(DataError, match="amazon_cells_labelled.txt:2"):
        sentiment_sentences(root=tmp_path, sources=("amazon",), verify=False)


def test_a_corrupted_copy_is_reported(tmp_path, data_root, monkeypatch):
    monkeypatch.delenv("TORCHLIGHT_DATA")
    src = data_root / RESOURCES["tinyshakespeare"].path
    dst = tmp_path / RESOURCES["tinyshakespeare"].path
    dst.parent.mkdir(parents=True)
    shutil.copyfile(src, dst)
    with open(dst, "ab") as f:
        f.write(b"Exeunt.\n")
    with pytest.raises(ChecksumError, match="tinyshakespeare/input.txt"):
        tiny_shakespeare(root=tmp_path)


def test_missing_corpus_without_network(tmp_path, monkeypatch):
    monkeypatch.delenv("TORCHLIGHT_DATA", raising=False)
    with pytest.raises(DataNotFoundError) as info:
        sentiment_sentences(root=tmp_path)
    msg = str(info.value)
    assert "sentiment/amazon_cells_labelled.txt" in msg and "archive.ics.uci.edu" in msg
    assert "TORCHLIGHT_DATA" in msg
