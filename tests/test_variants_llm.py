"""LLM families: validation rules, retry-then-drop, time budget, replay, and the HTTP rewriter."""

from __future__ import annotations

import json
import pathlib
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, HTTPServer

import pytest
from helpers.variant_build import HashEmbedder

from benchmark.errors import SagoError
from benchmark.variants import llm
from benchmark.variants.rewriter import Chat, HttpRewriter


class ScriptedRewriter:
    """Returns queued answers in order and records what it was asked."""

    tag = "llm:scripted@1"

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.asked: list[Chat] = []

    def complete(self, chats: Sequence[Chat]) -> list[str]:
        self.asked.extend(chats)
        return [self.answers.pop(0) for _ in chats]


class FixedSimilarity:
    """Every pair of distinct texts has the same cosine, so tests control the similarity check."""

    def __init__(self, cosine: float) -> None:
        self.cosine = cosine

    def embed(self, texts: Sequence[str]):  # type: ignore[no-untyped-def]
        import numpy as np

        other = np.sqrt(1 - self.cosine**2)
        return np.stack(
            [
                np.array([1.0, 0.0]) if i % 2 == 0 else np.array([self.cosine, other])
                for i, _ in enumerate(texts)
            ]
        )


@pytest.mark.parametrize(
    ("rewrite", "family", "strength", "reason"),
    [
        ("", "length", 2, "empty"),
        ("Who wrote Hamlet?", "length", 2, "unchanged"),
        ("Who wrote the play Hamlet, William Shakespeare?", "length", 2, "leaks gold answer"),
        ("Yes, who was it who wrote Hamlet?", "length", 2, ""),
        ("Who wrote Hamlet in England?", "length", 2, "adds England"),
        ("Who wrote Hamlet, then?", "length", 3, "length ratio 1.33 far from 3.00"),
        ("Tell me who wrote the famous play Hamlet.", "length", 2, "form changed"),
        ("Who was it that wrote Hamlet?", "form", 1, "not an instruction"),
        ("Tell me who wrote Hamlet.", "form", 1, ""),
    ],
)
def test_rejection_reasons(rewrite: str, family: str, strength: float, reason: str) -> None:
    job = llm.Job("d", "1", 0, "Who wrote Hamlet?", ("William Shakespeare",), family, strength)
    assert llm.rejection(job, rewrite, 0.9) == reason


def test_low_similarity_and_verdict_leaks_are_rejected() -> None:
    job = llm.Job("d", "1", 0, "Who wrote Hamlet?", (), "length", 1.5)
    assert llm.rejection(job, "Who wrote the poem Hamlet?", 0.4) == f"similarity 0.40 < {llm.MIN_SIMILARITY}"
    sky = llm.Job("d", "1", 0, "Is the sky blue?", ("yes",), "length", 2)
    assert llm.rejection(sky, "Yes. Is the sky truly very blue?", 0.9) == "leaks gold answer"


def test_requests_ask_for_the_target_length_and_flip_form() -> None:
    def job(text: str, family: str, strength: float) -> llm.Job:
        return llm.Job("d", "1", 0, text, (), family, strength)

    assert (
        "Length: about 8 words.\nText (4 words)"
        in llm.request(job("Who wrote Hamlet first?", "length", 2), 0).user
    )
    assert "Length: at least 8 words." in llm.request(job("Who wrote Hamlet first?", "length", 2), 1).user
    assert "as an instruction" in llm.request(job("Who wrote Hamlet?", "form", 1), 0).user
    assert "as a question" in llm.request(job("Calculate the sum of 2 and 3.", "form", 1), 0).user
    who = job("Who?", "length", 2)
    assert llm.request(who, 1).user != llm.request(who, 0).user != llm.request(who, 2).user


def _jobs(second_rank: int = 1) -> list[llm.Job]:
    return [
        llm.Job("d", "a", 0, "Who wrote Hamlet?", ("Shakespeare",), "form", 1.0),
        llm.Job("d", "b", second_rank, "Who painted the Mona Lisa?", ("Leonardo",), "form", 1.0),
    ]


def test_failed_attempt_is_retried_with_other_wording_then_dropped() -> None:
    rewriter = ScriptedRewriter(
        [
            "Who wrote Hamlet?",
            "Tell me who painted the Mona Lisa.",  # round 0
            "Shakespeare wrote it.",  # round 1, a only
            "Here is the rewritten text: tell me who wrote Hamlet.",
        ]
    )  # round 2
    attempts = llm.run_jobs(_jobs(second_rank=0), rewriter, FixedSimilarity(0.9), replay={}, attempts=3)
    assert [(a.item_id, a.attempt, a.accepted, a.reason) for a in attempts] == [
        ("a", 0, False, "unchanged"),
        ("b", 0, True, ""),
        ("a", 1, False, "leaks gold answer"),
        ("a", 2, False, "meta text"),
    ]
    assert len({chat.user for chat in rewriter.asked[:1] + rewriter.asked[2:]}) == 3


def test_budget_exhausted_jobs_are_logged_not_attempted_and_replay_needs_no_model(tmp_path) -> None:  # type: ignore[no-untyped-def]
    ticks: Iterator[float] = iter([0.0, 1.0, 99.0])  # start, rank 0 (in budget), rank 1 (over)
    rewriter = ScriptedRewriter(["Tell me who wrote Hamlet."])
    attempts = llm.run_jobs(
        _jobs(), rewriter, FixedSimilarity(0.9), replay={}, budget_s=10, clock=lambda: next(ticks)
    )
    assert [(a.item_id, a.accepted, a.reason) for a in attempts] == [
        ("a", True, ""),
        ("b", False, llm.BUDGET_REASON),
    ]
    log = tmp_path / "log.jsonl"
    llm.write_log(log, attempts)
    replayed = llm.run_jobs(_jobs(), None, FixedSimilarity(0.9), replay=llm.read_log(log))
    assert replayed == attempts


def test_replay_only_judges_the_log_and_asks_for_nothing(tmp_path) -> None:  # type: ignore[no-untyped-def]
    log = tmp_path / "log.jsonl"
    first = llm.run_jobs(
        _jobs()[:1], ScriptedRewriter(["Tell me who wrote Hamlet."]), FixedSimilarity(0.9), replay={}
    )
    llm.write_log(log, first)
    with pytest.raises(ValueError, match="rewrite log is incomplete"):  # b is not in the log
        llm.run_jobs(_jobs(), None, FixedSimilarity(0.9), replay=llm.read_log(log))
    replayed = llm.run_jobs(_jobs(), None, FixedSimilarity(0.9), replay=llm.read_log(log), replay_only=True)
    assert [(a.item_id, a.rewriter, a.accepted, a.reason) for a in replayed] == [
        ("a", "llm:scripted@1", True, ""),
        ("b", "", False, llm.BUDGET_REASON),
    ]
    with pytest.raises(ValueError, match=r"budget_s must be >= 0, not -1.0 \(replay_only=True"):
        llm.run_jobs(_jobs(), None, FixedSimilarity(0.9), replay=llm.read_log(log), budget_s=-1.0)


def test_clean_strips_labels_quotes_and_extra_lines() -> None:
    assert llm.clean('  "Tell me who wrote Hamlet."\nSure! Here it is.') == "Tell me who wrote Hamlet."
    assert llm.clean("Rewritten question: Who?") == "Who?"


@pytest.fixture()
def chat_server() -> Iterator[tuple[str, list[dict[str, object]]]]:
    seen: list[dict[str, object]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            seen.append({"path": self.path, "body": body})
            reply = {"choices": [{"message": {"content": "Tell me who wrote Hamlet."}}]}
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}", seen
    server.shutdown()


def test_http_rewriter_speaks_openai_chat_completions(
    chat_server: tuple[str, list[dict[str, object]]],
) -> None:
    url, seen = chat_server
    rewriter = HttpRewriter(url, "tiny-model")
    job = llm.Job("d", "1", 0, "Who wrote Hamlet?", (), "form", 1)
    assert rewriter.complete([llm.request(job, 0)]) == ["Tell me who wrote Hamlet."]
    body = seen[0]["body"]
    assert seen[0]["path"] == "/v1/chat/completions"
    assert isinstance(body, dict) and body["model"] == "tiny-model" and body["temperature"] == 0
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert rewriter.tag == f"llm:tiny-model@{url}"


def test_unreachable_endpoint_is_a_one_line_error() -> None:
    rewriter = HttpRewriter("http://127.0.0.1:9", "m", timeout=2)
    with pytest.raises(
        SagoError, match=r"rewriter endpoint http://127.0.0.1:9/v1/chat/completions is unreachable"
    ) as err:
        rewriter.complete([Chat("s", "u", 4)])
    assert "\n" not in str(err.value)


def test_similarity_scores_identical_texts_exactly_one() -> None:
    from benchmark.variants.similarity import similarities

    scores = similarities(HashEmbedder(), [("Who?", "Who?"), ("Who?", "WHO ?"), ("Who?", "When?")])
    assert scores[0] == 1.0 and scores[1] == 1.0 and scores[2] < 1.0


def test_scoped_attempts_rewrite_only_the_asking_sentence_and_log_the_assembled_text(tmp_path) -> None:  # type: ignore[no-untyped-def]
    problem = "Tom has 3 cats. He buys 2 more. How many cats does Tom have?"
    job = llm.Job("d", "a", 0, problem, ("5",), "form", 1.0)
    # Whole-text attempts lose a number; the scoped one (attempt 3) sees only the question.
    rewriter = ScriptedRewriter(["Tell me how many cats Tom has."] * 3 + ["Tell me how many cats Tom has."])
    attempts = llm.run_jobs([job], rewriter, FixedSimilarity(0.9), replay={}, attempts=4)
    assert [a.reason.split(" ")[0] for a in attempts] == ["drops", "drops", "drops", ""]
    assert rewriter.asked[3].user.endswith("Text (6 words): How many cats does Tom have?\nRewrite:")
    assert attempts[-1].output == "Tom has 3 cats. He buys 2 more. Tell me how many cats Tom has."
    assert llm.is_instruction(attempts[-1].output)
    log = tmp_path / "log.jsonl"
    llm.write_log(log, attempts)
    assert llm.run_jobs([job], None, FixedSimilarity(0.9), replay=llm.read_log(log), attempts=4) == attempts


def test_scoped_length_rewrites_every_sentence_and_a_short_question_grows_in_two_sentences() -> None:
    job = llm.Job("d", "a", 0, "Tom has 3 cats. How many legs do they have?", (), "length", 2.0)
    scope = llm.scope(job, llm.SCOPED_FROM)
    assert scope is not None and [j.original for j in scope.jobs] == [
        "Tom has 3 cats.",
        "How many legs do they have?",
    ]
    assert llm.scope(job, llm.SCOPED_FROM - 1) is None
    single = llm.Job("d", "b", 0, "Who wrote Hamlet?", (), "length", 3.0)
    assert llm.scope(single, llm.SCOPED_FROM) is None
    assert "Write two sentences" in llm.request(single, llm.SCOPED_FROM).user
    assert "Write two sentences" not in llm.request(single, 0).user


def test_coverage_table_counts_accepted_tried_and_all_cells() -> None:
    from benchmark.variants.cli import coverage_table

    jobs = _jobs()
    made = [
        llm.Attempt("d", "a", "form/global/1", 0, "llm:x", jobs[0].original, "Who?", False, "unchanged", 1.0),
        llm.Attempt("d", "a", "form/global/1", 1, "llm:x", jobs[0].original, "Tell me.", True, "", 0.9),
        llm.Attempt("d", "b", "form/global/1", 0, "", jobs[1].original, "", False, llm.BUDGET_REASON, 0.0),
    ]
    table = coverage_table(jobs, made)
    assert "form/global/1" in table and "1/1/2" in table
    assert "accepted 1 of 2 cells (50.0%); tried 1; attempts 2" in table
    assert "rejections: unchanged 1" in table


def test_wrapper_questions_flip_to_their_fixed_counterparts_without_a_model() -> None:
    from benchmark.variants.sources import JEOPARDY_TEMPLATE, MISCONCEPTIONS_TEMPLATE

    # Every wrapper the builder writes has its counterpart (a new wrapper must add one).
    for template in (JEOPARDY_TEMPLATE, MISCONCEPTIONS_TEMPLATE):
        assert any(question in template for question in llm.WRAPPER_FORMS)
    prompt = "Category: rivers. Clue: It flows through Cairo. What is the answer to this clue?"
    job = llm.Job(
        "d", "a", 0, prompt, ("the Nile",), "form", 1.0, item_text="It flows through Cairo.", keep=("rivers",)
    )
    rewriter = ScriptedRewriter(["What is it?"] * 3)  # whole-text attempts; the 4th never asks the model
    attempts = llm.run_jobs([job], rewriter, FixedSimilarity(0.9), replay={}, attempts=4)
    assert len(rewriter.asked) == 3
    last = attempts[-1]
    assert (last.rewriter, last.accepted) == (llm.TEMPLATE_TAG, True)
    assert (
        last.output
        == "Category: rivers. Clue: It flows through Cairo. Tell me what the answer to this clue is."
    )


def test_a_long_lengthening_grows_from_the_items_accepted_shorter_one() -> None:
    jobs = [llm.Job("d", "a", 0, "Who wrote Hamlet?", (), "length", s) for s in (1.5, 3.0)]
    rewriter = ScriptedRewriter(
        [
            "Who really wrote Hamlet?",
            "Who wrote Hamlet, then?",  # round 0
            "Who wrote Hamlet, then?",
            "Who wrote Hamlet, then?",  # rounds 1, 2 (x3 only)
            "Who was the person who really wrote the play Hamlet?",
        ]
    )
    attempts = llm.run_jobs(jobs, rewriter, FixedSimilarity(0.9), replay={}, attempts=4)
    assert [(a.variant_id, a.attempt, a.accepted) for a in attempts][-1] == ("length/global/3", 3, True)
    assert "Text (4 words): Who really wrote Hamlet?" in rewriter.asked[-1].user
    assert "Text (3 words)" in rewriter.asked[-2].user  # before the 4th candidate: from the original


def test_a_candidate_that_repeats_another_cells_text_is_rejected_and_retried() -> None:
    jobs = [llm.Job("d", "a", 0, "Who wrote Hamlet?", (), "length", s) for s in (2.0, 3.0)]
    same = "Who was it that really wrote Hamlet?"
    rewriter = ScriptedRewriter([same, same, "Who was it, exactly, that really wrote the Hamlet play?"])
    attempts = llm.run_jobs(jobs, rewriter, FixedSimilarity(0.9), replay={}, attempts=2)
    assert [(a.variant_id, a.attempt, a.accepted, a.reason) for a in attempts] == [
        ("length/global/2", 0, True, ""),
        ("length/global/3", 0, False, "same text as length/global/2"),
        ("length/global/3", 1, True, ""),
    ]


def test_a_file_that_is_not_a_rewrite_log_is_one_line(tmp_path: pathlib.Path) -> None:
    """A written-cells file or a broken line passed as --log names the file and line, no traceback."""
    log = tmp_path / "cells.jsonl"
    log.write_text('{"dataset": "gsm8k", "cell": "x0.25"}\n', encoding="utf-8")
    with pytest.raises(SagoError, match=r"cells.jsonl:1: not a rewrite attempt") as err:
        llm.read_log(log)
    assert "\n" not in str(err.value)
    log.write_text("\n{broken\n", encoding="utf-8")
    with pytest.raises(SagoError, match=r"cells.jsonl:2: not JSON"):
        llm.read_log(log)


def test_a_killed_rewrite_stage_resumes_from_its_log(tmp_path: pathlib.Path) -> None:
    """The stage appends each chunk as it is made; a kill mid-line leaves a torn tail, which the resumed
    stage drops (asking for that cell again) instead of refusing the log."""
    log = tmp_path / "rw.jsonl"
    first = llm.run_jobs(
        _jobs()[:1],
        ScriptedRewriter(["Tell me who wrote Hamlet."]),
        FixedSimilarity(0.9),
        replay={},
        on_fresh=lambda fresh: llm.append_log(log, fresh),
    )
    with log.open("a", encoding="utf-8") as out:
        out.write('{"accepted": true, "dataset": "d", "item_id": "b", "ori')  # killed while writing b
    rewriter = ScriptedRewriter(["Tell me who painted the Mona Lisa."])
    resumed = llm.run_jobs(
        _jobs(),
        rewriter,
        FixedSimilarity(0.9),
        replay=llm.read_log(log),
        on_fresh=lambda fresh: llm.append_log(log, fresh),
    )
    assert [chat.user for chat in rewriter.asked] == [llm.request(_jobs()[1], 0).user]  # b only
    assert resumed[0] == first[0] and [(a.item_id, a.accepted) for a in resumed] == [("a", True), ("b", True)]
    assert list(llm.read_log(log).values()) == resumed  # whole again: every line reads
    assert len(log.read_text(encoding="utf-8").splitlines()) == 2  # the torn fragment was cut, not kept
