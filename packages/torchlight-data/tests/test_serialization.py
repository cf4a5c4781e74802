import json

import pytest

from torchlight.data import BPETokenizer, CharTokenizer, TokenizerError, WordVocab
from torchlight.data.text import load_tokenizer


@pytest.mark.parametrize(
    "tok",
    [
        CharTokenizer.from_text("abc"),
        WordVocab.build(["a b"]),
        BPETokenizer().train("aaab aab", 258),
    ],
)
def test_load_tokenizer_dispatches_on_type(tmp_path, tok):
    tok.save(tmp_path / "t.json")
    back = load_tokenizer(tmp_path / "t.json")
    assert type(back) is type(tok) and back == tok


def test_wrong_type_and_version_and_garbage(tmp_path):
    CharTokenizer.from_text("abc").save(tmp_path / "c.json")
    with pytest.raises(TokenizerError, match="'char' tokenizer, not 'bpe'"):
        BPETokenizer.load(tmp_path / "c.json")
    payload = json.loads((tmp_path / "c.json").read_text())
    payload["version"] = 99
    (tmp_path / "v.json").write_text(json.dumps(payload))
    with pytest.raises(TokenizerError, match="version 99"):
        CharTokenizer.load(tmp_path / "v.json")
    (tmp_path / "g.json").write_text("{not json")
    with pytest.raises(TokenizerError, match="not a readable"):
        load_tokenizer(tmp_path / "g.json")
    (tmp_path / "n.json").write_text("[1, 2]")
    with pytest.raises(TokenizerError, match="no 'type'"):
        load_tokenizer(tmp_path / "n.json")
    (tmp_path / "u.json").write_text('{"type": "sentencepiece", "version": 1}')
    with pytest.raises(TokenizerError, match="unknown tokenizer type"):
        load_tokenizer(tmp_path / "u.json")
    (tmp_path / "m.json").write_text('{"type": "char", "version": 1}')
    with pytest.raises(TokenizerError, match="lacks the field"):
        load_tokenizer(tmp_path / "m.json")
    with pytest.raises(FileNotFoundError):
        load_tokenizer(tmp_path / "missing.json")
