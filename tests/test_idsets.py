"""Id sets are lossless for any node id, the quick path for module-level tests included."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from pytest_loopcontract.idsets import pack_ids, unpack_ids

# Parts that make node ids awkward: separators, brackets, empty parts, non-ASCII.
_PART = st.text(alphabet="aZ_:[]/.é ")
_IDS = st.lists(
    st.builds(lambda parts: "::".join(parts), st.lists(_PART, min_size=1, max_size=4)),
    max_size=30,
)


@given(_IDS)
def test_unpacking_gives_back_exactly_the_ids_that_went_in(ids: list[str]) -> None:
    assert sorted(unpack_ids(pack_ids(ids))) == sorted(set(ids))


def test_a_module_level_test_is_filed_under_its_file_with_no_class() -> None:
    packed = pack_ids(["tests/test_a.py::test_one[x::y]", "tests/test_a.py::TestB::test_two"])
    assert packed == {"tests/test_a.py": {"": ["test_one[x::y]"], "TestB": ["test_two"]}}
