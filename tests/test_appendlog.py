"""The one append-only log (benchmark.appendlog): what a kill may leave and what is refused, durable appends,
and the request key that keeps every answer already paid for."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from benchmark.appendlog import AppendLog, request_key
from benchmark.axes.api_judge import ApiPolitenessJudge, RowContext
from benchmark.chat_api import PAID_HINT, ChatClient, ChatReply, ChatRequest, ChatSettings, PaidStore
from benchmark.errors import SagoError
from benchmark.models.api import ApiBackend
from benchmark.models.protocol import VariantRequest


def _numbers(path: Path) -> AppendLog[int]:
    return AppendLog(path, lambda v: int(v["n"]), lambda n: {"n": n}, what="a number", hint=" (a toy log)")


def test_a_torn_last_line_is_dropped_and_cut_before_the_next_append(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "log.jsonl"
    log = _numbers(path)
    log.append([1, 2])
    with path.open("ab") as out:
        out.write(b'{"n": 3, "pad": "\xc3')  # killed mid-write, inside a UTF-8 character
    assert log.load() == [1, 2]
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    log.append([3])
    assert len(synced) == 1  # on disk before append returns
    assert path.read_bytes() == b'{"n": 1}\n{"n": 2}\n{"n": 3}\n'  # the torn fragment is gone, not kept
    assert log.load() == [1, 2, 3]


def test_a_whole_last_line_without_its_newline_is_kept_and_ended(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_text('{"n": 1}\n\n{"n": 2}', encoding="utf-8")  # written by hand: a blank line, no newline
    log = _numbers(path)
    assert log.load() == [1, 2]
    log.append([3])
    assert path.read_text(encoding="utf-8") == '{"n": 1}\n\n{"n": 2}\n{"n": 3}\n'


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ('{"n": 1}\n{broken\n{"n": 2}\n', "log.jsonl:2: not JSON (a toy log)"),
        ('{"n": 1}\n\n{"m": 2}\n', "log.jsonl:3: not a number (a toy log)"),
        ('{"n": 1}\n[1, 2]\n{"n": 2', "log.jsonl:2: not a number (a toy log)"),
        ('\xff{"n": 1}\n{"n": 2}\n', "log.jsonl:1: not JSON (a toy log)"),
    ],
)
def test_any_other_bad_line_is_refused_naming_file_and_line(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(text.encode("latin-1" if "\xff" in text else "utf-8"))
    with pytest.raises(SagoError) as err:
        _numbers(path).load()
    assert str(err.value) == f"{path.parent}/{error}" and "\n" not in str(err.value)


def test_a_paid_cache_with_a_bad_middle_line_is_refused_not_thinned(tmp_path: Path) -> None:
    """Before the log, a bad line was skipped without a word (and its answer paid for again)."""
    path = tmp_path / "paid.jsonl"
    path.write_text(
        '{"key": "a", "yes": true}\n{"yes": false}\n{"key": "b", "yes": false}\n', encoding="utf-8"
    )
    with pytest.raises(SagoError, match=r"paid.jsonl:2: not a paid answer") as err:
        PaidStore(path)
    assert str(err.value).endswith(PAID_HINT)


class _Scripted(ChatClient):
    """Answers at once with the prompt's words reversed, without logprobs: no server, a fixed URL."""

    def send(self, request: ChatRequest) -> tuple[ChatReply, int]:
        words = request.prompt.split()[::-1]
        return ChatReply(" ".join(words[:8]), "stop", None, len(words), 8), 1


# The keys the code before AppendLog wrote for these requests (models/api.py hashed
# json.dumps([row, phase, snapshot, body], sort_keys=True), axes/api_judge.py json.dumps([url, model,
# message])): recorded by running the same calls on main at c8da04c.
OLD_REPLY_KEYS = [
    "155441f5955ee81069e6313e060d46b7278074a80ed682992afeda1cb91a3cba",
    "6a05de0e23391021708ea6672147e298406e2782a6ccebc60f4d38e7574fd200",
    "80a379851dd286b5ebd4905639dd51c259dfa5ffd7bd98705a26a05326b6186a",
]
OLD_VERDICT_KEYS = [
    "6c45ff0ed7ff473b4e2d755a03d374e10076797185aee876d420de89e5b31e24",
    "24c5cab46821c0983c8fe992f42794621ad7fe6621f68866eee1fd88d4b9bea2",
]


def _keys(path: Path) -> list[str]:
    return [json.loads(line)["key"] for line in path.read_text(encoding="utf-8").splitlines()]


def test_request_key_keeps_every_answer_already_paid_for(tmp_path: Path) -> None:
    """The same real requests as before the change are filed under the same keys, so none is paid twice."""
    api = ChatSettings("https://api.example.com", "gpt-4o-mini", None)
    backend = ApiBackend(
        api,
        snapshot="gpt-4o-mini-2024-07-18",
        concurrency=1,
        cache_path=tmp_path / "r.jsonl",
        client=_Scripted(api),
    )
    rows = [
        VariantRequest(
            "trivia_qa|q17|politeness/prefix/+6",
            "Please, kindly: which city is the capital of France? é",
            None,
        ),
        VariantRequest(
            "gsm8k|g3|rerun/none/0", "Natalia sold clips to 48 of her friends in April. How many?", "72"
        ),
    ]
    backend.run(rows, max_new_tokens=48)  # the first reply has no logprobs: the rest are asked without
    backend.run(rows[1:], max_new_tokens=48, rerun_control=True)
    assert _keys(tmp_path / "r.jsonl") == OLD_REPLY_KEYS
    body = ChatRequest(rows[1].prompt, 48, seed=42).to_json("gpt-4o-mini")
    assert request_key(rows[1].key, "rerun", "gpt-4o-mini-2024-07-18", body) == OLD_REPLY_KEYS[2]

    judge_api = ChatSettings("https://api.openai.com", "gpt-4o-mini", None)
    judge = ApiPolitenessJudge(_Scripted(judge_api), tmp_path / "v.jsonl")
    judge.verdict(
        "Of course! Thank you. Paris.",
        "Paris.",
        +1,
        RowContext("Capital?", "Please, capital?", 6.0, "prefix"),
    )
    judge.verdict("Thank you, it is Paris — merci.", "Paris.", -1, RowContext())
    assert _keys(tmp_path / "v.jsonl") == OLD_VERDICT_KEYS
