import pytest

from torchlight.data import TokenizerError, WordVocab
from torchlight.data.text import EOS, PAD, SOS, UNK, word_tokenize


def test_tokenize():
    assert word_tokenize("Don't stop, Ma\u202fAnn!") == ["don't", "stop", ",", "ma", "ann", "!"]
    assert word_tokenize("L'homme  est là.") == ["l'homme", "est", "là", "."]
    assert word_tokenize("ABC", lower=False) == ["ABC"]


def test_build_orders_by_frequency_then_alphabet():
    v = WordVocab.build(["b a b c", "c b d"], min_freq=1)
    assert v.itos[:4] == [PAD, UNK, SOS, EOS]
    assert v.itos[4:] == ["b", "c", "a", "d"]
    assert (v.pad_id, v.unk_id, v.sos_id, v.eos_id) == (0, 1, 2, 3)
    assert v.counts["b"] == 3


def test_min_freq_and_max_size():
    v = WordVocab.build(["a a a b b c"], min_freq=2)
    assert v.itos[4:] == ["a", "b"] and "c" not in v
    v = WordVocab.build(["a a a b b c"], max_size=5)
    assert len(v) == 5 and v.itos[4] == "a"
    with pytest.raises(ValueError):
        WordVocab.build(["a"], min_freq=0)
    with pytest.raises(ValueError):
        WordVocab.build(["a"], max_size=3)


def test_encode_decode():
    v = WordVocab.build("the cat sat on the mat")  # a lone string is one text
    ids = v.encode("The dog sat.", add_sos=True, add_eos=True)
    assert ids[0] == v.sos_id and ids[-1] == v.eos_id
    assert v.unk_id in ids  # "dog" and "." are unknown
    assert v.decode(ids) == "the <unk> sat <unk>"
    assert v.decode(ids + [v["cat"]]) == "the <unk> sat <unk>"  # stops at <eos>
    assert (
        v.decode(ids, skip_specials=False, stop_at_eos=False) == "<sos> the <unk> sat <unk> <eos>"
    )
    assert v["zebra"] == v.unk_id
    with pytest.raises(TokenizerError):
        v.lookup_tokens([len(v)])


def test_save_load(tmp_path):
    v = WordVocab.build(["Élan vital, élan!"], lower=False)
    v.save(tmp_path / "v.json")
    back = WordVocab.load(tmp_path / "v.json")
    assert back == v and back.encode("Élan x") == v.encode("Élan x")


def test_rejects_bad_token_lists():
    with pytest.raises(TokenizerError):
        WordVocab(["a", "b"])
    with pytest.raises(TokenizerError):
        WordVocab([PAD, UNK, SOS, EOS, "a", "a"])
