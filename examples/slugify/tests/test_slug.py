import pytest

from textkit.slug import slugify


def test_ascii_words():
    assert slugify("Hello World") == "hello-world"


def test_punctuation_is_dropped():
    assert slugify("Hi, there!") == "hi-there"


@pytest.mark.dod("unicode")
def test_accents_are_transliterated():
    assert slugify("Crème Brûlée") == "creme-brulee"


@pytest.mark.dod("unicode")
@pytest.mark.parametrize("text, slug", [("Ærøskøbing", "aeroskobing"), ("Straße", "strasse")])
def test_special_letters(text, slug):
    assert slugify(text) == slug


def test_empty_text_gives_empty_slug():
    assert slugify("  ") == ""
