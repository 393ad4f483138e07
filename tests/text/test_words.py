"""``xlt.text.words``: words of spaced scripts, longest-match dictionary words in unspaced ones; case carried over."""

from __future__ import annotations

from xlt.text.words import Word, match_case, segment_words


def texts(words: list[Word]) -> list[str]:
    return [w.text for w in words]


def test_segment_words_spaced_scripts():
    assert texts(segment_words("Well-known, isn't it? (Yes) l'homme 2014!")) == \
        ["well", "known", "isn", "t", "it", "yes", "l", "homme", "2014"]
    ws = segment_words("Die Katze, schläft.")
    assert [(w.text, w.start, w.end) for w in ws] == [("die", 0, 3), ("katze", 4, 9), ("schläft", 11, 18)]
    # Combining marks (Devanagari vowel signs, virama) stay inside the word.
    assert texts(segment_words("हिन्दी भाषा।")) == ["हिन्दी", "भाषा"]


def test_segment_words_unspaced_scripts_longest_match_first():
    vocab = ["日本", "日本語", "文", "本語の", "nasa"]
    # 日本語 (3) before 本語の (3, further right, overlapping) before 日本 (2); Latin runs are words.
    assert [(w.text, w.start, w.end) for w in segment_words("NASAの日本語の文です", vocab)] == \
        [("nasa", 0, 4), ("日本語", 5, 8), ("文", 9, 10)]
    assert segment_words("水平", ["水"]) == [Word("水", 0, 1)]
    assert segment_words("水平", ["水", "水平"]) == [Word("水平", 0, 2)]


def test_match_case() -> None:
    assert match_case("the", "die") == "die"
    assert match_case("The", "die") == "Die"
    assert match_case("THE", "die") == "DIE"
    assert match_case("I", "ich") == "Ich"  # one capital letter: capitalised, not all caps
    assert match_case("Cat", "猫") == "猫"
