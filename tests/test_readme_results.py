"""The README's results block and the site's headline come from one engine over leaderboard.json."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmark.documents import LeaderboardDocument
from benchmark.site import findings
from benchmark.site.board import Board
from benchmark.stats.claims import BEGIN, END, claims, replace_block, results_markdown
from benchmark.stats.leaderboard import load_leaderboard

ROOT = Path(__file__).resolve().parents[1]
COMMITTED = ROOT / "leaderboard" / "leaderboard.json"


def test_readme_results_block_matches_the_committed_leaderboard() -> None:
    board = load_leaderboard(COMMITTED)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert replace_block(readme, results_markdown(board)) == readme, (
        "README results are stale: run `python -m benchmark.stats.claims` after `sago analyze`"
    )


def test_committed_leaderboard_claims_are_generated_from_it() -> None:
    board = load_leaderboard(COMMITTED)
    assert list(board.claims) == claims(board)


def test_the_site_headline_is_the_stored_headline_claims() -> None:
    board = load_leaderboard(COMMITTED)
    stored = [c["text"] for c in board.claims if c["headline"]]
    assert findings.headline(Board(board)) == stored
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert all(text in readme for text in stored)  # README and site say the same sentences


def test_claims_follow_the_data() -> None:
    from helpers.leaderboard_example import example_leaderboard

    from benchmark.stats.summary import AnalysisOptions

    board = example_leaderboard(options=AnalysisOptions(resamples=200))
    texts = {c["id"]: c["text"] for c in board.claims}
    significant = sum(r["verdict"] == "significant" for r in board.reversals)
    assert texts["reversals"].startswith(f"{significant} of the {len(board.reversals)} observed flips")
    assert "exact sign-flip test on both datasets" in texts["reversals"]
    if significant:  # a flip is stated as a fact only when it is significant
        assert " is steadier on " in texts["reversals"] and "looks" not in texts["reversals"]
    without = LeaderboardDocument.from_json(board.to_json() | {"reversals": []})
    assert any("No model pair changes order" in c["text"] for c in claims(without))


def test_a_readme_without_markers_is_refused() -> None:
    with pytest.raises(ValueError, match="no results markers"):
        replace_block("# README\n", "x")
    assert replace_block(f"a\n{BEGIN}\nold\n{END}\nb", "new") == f"a\n{BEGIN}\nnew\n{END}\nb"


def test_the_runs_table_counts_what_the_committed_records_hold() -> None:
    """The README's "what the numbers rest on" row of each model: its cap share and baseline accuracy are
    recounted here from the committed files (records' ``finished``, the baseline rows' ``correct`` in
    deltas.parquet)."""
    import pandas as pd

    from benchmark.schema import BASELINE_VARIANT_ID

    board = load_leaderboard(COMMITTED)
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for model in board.complete:
        summary = model["summary"]
        assert summary is not None
        records = pd.concat(
            pd.read_parquet(p) for p in sorted((ROOT / summary).parent.glob("records/*.parquet"))
        )
        cut, total = int((~records["finished"]).sum()), len(records)
        deltas = pd.read_parquet((ROOT / summary).parent / "deltas.parquet")
        baseline = deltas[deltas["variant_id"] == BASELINE_VARIANT_ID]
        right = int(baseline["correct"].fillna(False).astype(bool).sum())
        row = next(
            line for line in readme.splitlines() if line.startswith(f"| {board.name(model['slug'])} | ")
        )
        assert f"| {cut} of {total} ({100 * cut / total:.1f} %) responses |" in row
        assert f"| {right} of {len(baseline)} ({100 * right / len(baseline):.1f} %) items" in row
        # a cut baseline response the grader did not find right is counted "cut", not wrong
        base = records[records["variant_id"] == BASELINE_VARIANT_ID].merge(
            baseline[["dataset", "item_id", "correct"]], on=["dataset", "item_id"]
        )
        unanswered = int(((~base["finished"]) & ~base["correct"].fillna(False).astype(bool)).sum())
        assert f"; {unanswered} cut at the cap, not graded wrong: {right} of the other" in row


def _bench_table(path: Path) -> dict[int, tuple[float, float, float]]:
    """batch -> (lm-eval s, sago s, ratio) from the final table of a committed `make bench-peer` output."""
    rows: dict[int, tuple[float, float, float]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = line.split()
        if len(cells) == 15 and cells[0].isdigit():
            rows[int(cells[1])] = (float(cells[3]), float(cells[5]), float(cells[10]))
    return rows


def test_readme_speed_figures_are_the_committed_bench_peer_tables() -> None:
    """Each ratio the README states for a model is that model's committed `make bench-peer` row, and the
    best-against-best figure is the two tools' fastest rows."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    found = re.findall(r"`(docs/bench/bench-peer-[a-z0-9-]+\.txt)`\): ([^;]+);", readme)
    assert len(found) == 3, "the README names the three committed bench-peer tables"
    bests = 0
    for name, text in found:
        table = _bench_table(ROOT / name)
        stated = {int(b): float(r) for r, b in re.findall(r"(\d\.\d{3})× at\s+batch (\d+)", text)}
        assert stated and stated == {b: row[2] for b, row in table.items()}, name
        best = re.search(
            r"each\s+tool.s\s+best:\s+sago\s+([\d.]+)\s+s,\s+lm-eval\s+([\d.]+)\s+s,\s+([\d.]+)×", text
        )
        if best:
            sago, peer = min(r[1] for r in table.values()), min(r[0] for r in table.values())
            assert (float(best[1]), float(best[2])) == (sago, peer), name
            assert float(best[3]) == round(sago / peer, 3), name
            bests += 1
    assert bests == 1  # SmolLM2's best-against-best figure is checked, not skipped


def test_readme_floor_figures_are_the_committed_bench_floor_table() -> None:
    """The README's `make bench-floor` figures are the committed table's totals and ratios, and the
    lm-eval time it was given is the Gemma bench-peer table's batch-32 row."""
    import re

    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    text = (ROOT / "docs/bench/bench-floor-gemma.txt").read_text(encoding="utf-8")
    total = next(line.split() for line in text.splitlines() if line.startswith("total"))
    floor, exact = float(total[-2]), float(total[-1])
    given = re.search(
        r"\(given\): ([\d.]+) s; floor / that = ([\d.]+), float32 floor / that = ([\d.]+)", text
    )
    assert given is not None
    peer = float(given[1])
    assert peer == _bench_table(ROOT / "docs/bench/bench-peer-gemma.txt")[32][0]
    assert f"{floor:.1f} s ({given[2]}× lm-eval's {peer:.1f} s) with fbgemm's" in readme
    assert f"{exact:.1f} s ({given[3]}×) with float32 kernels alone" in readme
    assert float(given[2]) == round(floor / peer, 3) and float(given[3]) == round(exact / peer, 3)


def test_readme_scoring_accuracy_figures_are_the_committed_table() -> None:
    """The README's error figures for the screened scoring pass, and float32 log-softmax's beside them,
    are the committed `make scoring-accuracy` table's (two significant digits), as is its row count."""
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    rows = {}
    for line in (ROOT / "docs/bench/scoring-accuracy-gemma.txt").read_text(encoding="utf-8").splitlines():
        cells = line.rsplit(maxsplit=4)
        if len(cells) == 5 and cells[1].isdigit():
            rows[cells[0].strip()] = (int(cells[1]), float(cells[2]), float(cells[3]), int(cells[4]))
    screened, plain = rows["screened (pooled engine)"], rows["float32 log_softmax"]

    def short(value: float) -> str:
        return f"{value:.1e}".replace("e-0", "e-")  # 1.3e-5, as the README writes it

    assert screened[0] == screened[3] == plain[0]  # every argmax equal to float64's
    assert f"at most {short(screened[1])} nats per token (log-probability) and {short(screened[2])}" in readme
    assert f"is off by {short(plain[1])} and {short(plain[2])}" in readme
    assert f"{screened[0]:,} of Gemma's bench scoring positions, every argmax float64's" in readme


def test_readme_gemma_repeats_are_the_committed_rows_and_their_medians() -> None:
    """The README's repeated Gemma batch-32 ratios are the repeats table's rows, engine by engine, each
    median it states is that engine's three runs' (the first engine's third run is the main table's
    batch-32 row), and lm-eval's range is the rows' own."""
    import re
    import statistics

    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    engines: dict[str, list[tuple[float, float]]] = {}
    for line in (ROOT / "docs/bench/bench-peer-gemma-repeats.txt").read_text(encoding="utf-8").splitlines():
        if line.startswith("# engine "):
            current = engines.setdefault(line.split()[2], [])
        elif len(line.split()) == 15 and line.split()[0].isdigit():
            current.append((float(line.split()[3]), float(line.split()[10])))
    first, now = engines["ca2d3a9"], engines["5f5c359"]
    stated = re.search(
        r"repeated \(`docs/bench/bench-peer-gemma-repeats.txt`, without the floor column\): ([\d.]+)× and "
        r"([\d.]+)× with the same engine \(median of three ([\d.]+)×\), then ([\d.]+)×, ([\d.]+)× and "
        r"([\d.]+)× once decode steps screen slice by slice \(median of three ([\d.]+)×, the engine now; "
        r"lm-eval's own time on those rows ranged ([\d.]+)-([\d.]+) s\)",
        readme,
    )
    assert stated is not None
    main = _bench_table(ROOT / "docs/bench/bench-peer-gemma.txt")[32][2]
    assert [float(stated[i]) for i in (1, 2)] == [r for _, r in first]
    assert float(stated[3]) == statistics.median([main, *(r for _, r in first)])
    assert [float(stated[i]) for i in (4, 5, 6)] == [r for _, r in now]
    assert float(stated[7]) == statistics.median(r for _, r in now)
    assert (float(stated[8]), float(stated[9])) == (min(p for p, _ in now), max(p for p, _ in now))


NUMBER_WORDS = ("no", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


def test_readme_prose_about_the_board_counts_its_models() -> None:
    """The hand-written sentences that say how many models the board has, and how large they are, say
    what leaderboard.json holds: adding a model to the board fails this until they are rewritten."""
    from benchmark.site.facts import readable_count

    board = load_leaderboard(COMMITTED)
    word = NUMBER_WORDS[len(board.complete)]
    sizes = sorted(int(m["parameters"]) for m in board.complete)
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    for sentence in (
        f"each of the {word} default submissions' committed v2 evidence results",
        f"Results of {word} packaged models on v2's `evidence` profile",
        f"These are {word} small models ({readable_count(sizes[0])}–{readable_count(sizes[-1])} parameters)",
        f"The {word} models are small",
    ):
        assert sentence in readme, f"README should say: {sentence!r}"
    # "most responses are cut at the cap": more than half of the board's responses, pooled over its models
    cut = [next(t for t in m["run"]["truncated"] if t["dataset"] == "all") for m in board.complete]
    assert "most responses are cut at the cap" in readme
    assert 2 * sum(t["cut"] for t in cut) > sum(t["total"] for t in cut)
