"""The lesson store on real SQLite files: dedupe, indexed lookup == full ranking, bad files."""

from __future__ import annotations

import dataclasses
import random
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_loopcontract.contest.lesson_store import LessonStore, LessonStoreError
from pytest_loopcontract.contest.lessons.model import Lesson, lesson_id
from pytest_loopcontract.contest.lessons.prompt import prompt_block
from pytest_loopcontract.contest.lessons.ranking import rank_lessons
from testing.repos import ROOT as REPO_ROOT

ROOT = REPO_ROOT


def make(
    domain: str,
    rule: str,
    *,
    tags: tuple[str, ...] = (),
    created: str = "2026-11-29T21:30:00Z",
    run_id: str = "run-1",
    seat: str = "alpha",
    evidence: str = "evidence",
    seen: int = 1,
) -> Lesson:
    return Lesson(
        id=lesson_id(domain, "gate", "measured", rule),
        domain=domain,
        tags=tags,
        contract_id="c",
        run_id=run_id,
        seat=seat,
        gate="gate",
        kind="measured",
        what="what",
        evidence=evidence,
        cause="cause",
        rule=rule,
        created=created,
        seen=seen,
    )


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "lessons.sqlite"


@pytest.fixture
def store(path: Path) -> Iterator[LessonStore]:
    with LessonStore(path) as opened:
        yield opened


def test_add_lookup_and_persistence(store: LessonStore, path: Path) -> None:
    lesson = make("py.num", "keep it", tags=("perf", "numeric"))
    assert store.add([lesson]) == 1
    assert store.count() == 1
    assert store.lookup("py.num.roll", ["perf"]) == [lesson]
    assert store.lookup("py.text") == []
    store.close()
    with LessonStore(path) as again:
        assert again.all() == [lesson]
        assert again.lookup("py", ()) == [lesson]
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_domains_of_a_contract_count_its_lessons_per_domain(store: LessonStore) -> None:
    other = dataclasses.replace(make("py.text", "other contract"), contract_id="d")
    store.add([make("py.num", "one"), make("py.num", "two"), make("py.text", "three"), other])
    assert store.domains_of("c") == {"py.num": 2, "py.text": 1}
    assert store.domains_of("d") == {"py.text": 1}
    assert store.domains_of("nobody") == {}


def test_a_repeat_bumps_seen_and_takes_the_newer_run(store: LessonStore) -> None:
    first = make("py", "r", run_id="run-1", seat="alpha", evidence="observed 50")
    again = make(
        "py",
        "r",
        run_id="run-2",
        seat="beta",
        evidence="observed 9",
        created="2026-12-01T00:00:00Z",
    )
    assert first.id == again.id
    assert store.add([first]) == 1
    assert store.add([again]) == 0
    (stored,) = store.all()
    assert stored.seen == 2
    assert (stored.run_id, stored.seat, stored.evidence) == ("run-2", "beta", "observed 9")
    assert stored.created == "2026-12-01T00:00:00Z"
    # An older sighting still counts, but does not overwrite the newer evidence.
    older = make("py", "r", run_id="run-0", evidence="old", created="2026-01-01T00:00:00Z")
    assert store.add([older, older]) == 0
    (stored,) = store.all()
    assert stored.seen == 4
    assert (stored.run_id, stored.evidence, stored.created) == (
        "run-2",
        "observed 9",
        "2026-12-01T00:00:00Z",
    )


def test_duplicates_within_one_batch(store: LessonStore) -> None:
    lesson = make("py", "r")
    assert store.add([lesson, lesson, make("py", "other")]) == 2
    assert {item.rule: item.seen for item in store.all()} == {"r": 2, "other": 1}


def test_a_failing_batch_stores_nothing(store: LessonStore) -> None:
    store.add([make("py", "kept")])

    def batch() -> Iterator[Lesson]:
        yield make("py", "a")
        yield make("py", "kept")
        raise RuntimeError("the producer died")

    with pytest.raises(RuntimeError, match="producer died"):
        store.add(batch())
    assert [(lesson.rule, lesson.seen) for lesson in store.all()] == [("kept", 1)]
    with pytest.raises(TypeError):
        store.add([make("py", "b"), "not a lesson"])  # type: ignore[list-item]
    assert store.count() == 1


def test_never_siblings_nor_segment_prefixes(store: LessonStore) -> None:
    store.add(
        [
            make("a.b", "exact"),
            make("a", "ancestor"),
            make("a.b.c", "child"),
            make("a.bc", "prefix only"),
            make("a.b-c", "dash"),
            make("a.c", "sibling"),
            make("b", "other"),
        ]
    )
    assert [lesson.rule for lesson in store.lookup("a.b")] == ["exact", "ancestor", "child"]


def test_lookup_uses_the_domain_index(store: LessonStore) -> None:
    store.add([make(f"d{i}.x", "r") for i in range(50)])
    plan = store.explain("d3.x.y")
    searches = [step for step in plan if step.startswith(("SEARCH", "SCAN"))]
    assert searches == [
        "SEARCH lessons USING PRIMARY KEY (domain=?)",
        "SEARCH lessons USING PRIMARY KEY (domain>? AND domain<?)",
    ]


def random_lessons(rng: random.Random, n: int) -> list[Lesson]:
    tops = ["py", "js", "go"]
    domains = [
        ".".join(parts)
        for top in tops
        for parts in (
            [top],
            [top, "num"],
            [top, "num", "roll"],
            [top, "num", "rolling"],
            [top, "num", "roll", "fast"],
            [top, "text"],
            [top, "text", "slug"],
        )
    ]
    tags = ["perf", "numeric", "io", "text", "api"]
    out = []
    for i in range(n):
        out.append(
            make(
                rng.choice(domains),
                f"rule {i}",
                tags=tuple(rng.sample(tags, rng.randint(0, 3))),
                created=f"2026-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}T00:00:00Z",
            )
        )
    return out


def test_lookup_equals_ranking_the_whole_store(store: LessonStore) -> None:
    rng = random.Random(20261129)
    lessons = random_lessons(rng, 600)
    store.add(lessons)
    every = store.all()
    assert len(every) == 600
    queries = ["py", "py.num", "py.num.roll", "py.num.roll.fast", "js.text.slug", "go.num.r"]
    queries += ["py.nu", "rust", "py.num.roll.fast.deeper"]
    for query in queries:
        tags = rng.sample(["perf", "numeric", "io", "text", "api"], rng.randint(0, 3))
        expected = rank_lessons(every, domain=query, tags=tags)
        assert store.lookup(query, tags) == expected
        for limit in (0, 1, 7, 1000):
            assert store.lookup(query, tags, limit=limit) == expected[:limit]
        for cap in (0, 80, 300, 2000, 100_000):
            assert store.prompt(query, tags, cap_chars=cap) == prompt_block(expected, cap_chars=cap)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(min_value=0, max_value=2**32),
    query=st.sampled_from(["py", "py.num", "py.num.roll", "go.text", "js.num.roll.fast"]),
    tags=st.lists(st.sampled_from(["perf", "numeric", "io"]), max_size=3),
)
def test_lookup_equals_ranking_property(
    tmp_path: Path, seed: int, query: str, tags: list[str]
) -> None:
    lessons = random_lessons(random.Random(seed), 40)
    with LessonStore(tmp_path / f"p{seed}.sqlite") as store:
        store.add(lessons)
        assert store.lookup(query, tags) == rank_lessons(store.all(), domain=query, tags=tags)


def test_bad_arguments(store: LessonStore) -> None:
    with pytest.raises(ValueError, match="domain"):
        store.lookup("Py..x")
    with pytest.raises(ValueError, match="limit"):
        store.lookup("py", limit=-1)


def test_a_corrupt_file_is_refused_by_name_and_left_alone(tmp_path: Path) -> None:
    bad = tmp_path / "lessons.sqlite"
    garbage = b"this is not a database at all\n" * 200
    bad.write_bytes(garbage)
    with pytest.raises(LessonStoreError, match=str(bad)):
        LessonStore(bad)
    assert bad.read_bytes() == garbage


def test_a_truncated_store_is_refused(tmp_path: Path) -> None:
    good = tmp_path / "lessons.sqlite"
    with LessonStore(good) as store:
        store.add([make("py", f"r{i}") for i in range(200)])
    assert not Path(f"{good}-wal").exists()  # the last close checkpoints the WAL
    data = good.read_bytes()
    broken = tmp_path / "broken.sqlite"
    broken.write_bytes(b"garbage!" * 2 + data[16:])
    with pytest.raises(LessonStoreError, match=str(broken)):
        LessonStore(broken)


def test_another_sqlite_file_is_not_taken_over(tmp_path: Path) -> None:
    other = tmp_path / "ledger.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE rows (seq INTEGER PRIMARY KEY)")
    before = other.read_bytes()
    with pytest.raises(LessonStoreError, match="not a lesson store"):
        LessonStore(other)
    assert other.read_bytes() == before
    with sqlite3.connect(other) as db:
        tables = [r[0] for r in db.execute("SELECT name FROM sqlite_master")]
    assert tables == ["rows"]


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(LessonStoreError, match=str(tmp_path)):
        LessonStore(tmp_path)


def test_concurrent_writers_from_separate_processes(path: Path) -> None:
    script = textwrap.dedent(
        """
        import sys
        from pytest_loopcontract.contest.lesson_store import LessonStore
        from pytest_loopcontract.contest.lessons.model import Lesson, lesson_id

        worker = sys.argv[2]
        with LessonStore(sys.argv[1]) as store:
            for i in range(40):
                rule = f"shared {i % 10}" if i % 2 else f"own {worker} {i}"
                store.add([Lesson(
                    id=lesson_id("py", "g", "measured", rule), domain="py", tags=(),
                    contract_id="c", run_id=f"run-{worker}", seat=worker, gate="g",
                    kind="measured", what="w", evidence="e", cause="c", rule=rule,
                    created="2026-11-29T21:30:00Z",
                )])
        """
    )
    with LessonStore(path):
        pass
    procs = [
        subprocess.Popen([sys.executable, "-c", script, str(path), f"w{n}"], cwd=ROOT)
        for n in range(3)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0]
    with LessonStore(path) as store:
        lessons = store.all()
    own = [lesson for lesson in lessons if lesson.rule.startswith("own")]
    shared = [lesson for lesson in lessons if lesson.rule.startswith("shared")]
    assert len(own) == 3 * 20
    assert len(shared) == 5  # odd i % 10: 1, 3, 5, 7, 9
    assert sum(lesson.seen for lesson in shared) == 3 * 20


@pytest.mark.parametrize(
    ("column", "value", "match"),
    [("kind", "vibes", "kind"), ("tags", "{not json", "tags|JSON|Expecting"), ("seen", 0, "seen")],
)
def test_a_hand_edited_row_is_named(path: Path, column: str, value: object, match: str) -> None:
    with LessonStore(path) as store:
        store.add([make("py", "r")])
    with sqlite3.connect(path) as db:
        db.execute(f"UPDATE lessons SET {column} = ?", (value,))
    db.close()
    with LessonStore(path) as store, pytest.raises(LessonStoreError, match=str(path)) as info:
        store.lookup("py")
    assert info.match(match)


def test_an_sqlite_file_stamped_by_another_application_is_refused(tmp_path: Path) -> None:
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("PRAGMA application_id = 1234")
    db.close()
    with pytest.raises(LessonStoreError, match="not a lesson store"):
        LessonStore(other)
