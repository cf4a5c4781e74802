import pytest
from hypothesis import given
from hypothesis import strategies as st

import torchlight as tl
from torchlight.data import CharTokenizer, TokenizerError


def test_from_text_sorted_alphabet():
    tok = CharTokenizer.from_text("hello world")
    assert tok.itos == sorted(set("hello world")) and len(tok) == tok.vocab_size == 8
    ids = tok.encode("hold")
    assert tok.decode(ids) == "hold"
    assert tok.decode(tl.tensor(ids)) == "hold"


@given(st.text(min_size=1))
def test_round_trip_of_its_own_text(text):
    tok = CharTokenizer.from_text(text)
    assert tok.decode(tok.encode(text)) == text


def test_unknown_characters():
    tok = CharTokenizer.from_text("abc")
    with pytest.raises(TokenizerError, match="not in the vocabulary"):
        tok.encode("abz")
    tok = CharTokenizer.from_text("abc", unk="?")
    assert tok.decode(tok.encode("abz")) == "ab?"
    with pytest.raises(TokenizerError):
        tok.decode([99])
    with pytest.raises(TokenizerError):
        CharTokenizer("ab", unk="z")
    with pytest.raises(TokenizerError):
        CharTokenizer(["ab"])
    with pytest.raises(TokenizerError):
        CharTokenizer("aa")


def test_save_load(tmp_path):
    tok = CharTokenizer.from_text("naïve €\n", unk=" ")
    tok.save(tmp_path / "c.json")
    back = CharTokenizer.load(tmp_path / "c.json")
    assert back == tok and back.encode("€ a") == tok.encode("€ a")
