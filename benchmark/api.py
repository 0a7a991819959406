"""The Python API: what ``sago variants verify / evaluate / analyze / leaderboard build`` do, as functions.

Re-exported by :mod:`benchmark` (``benchmark.evaluate(...)``); see README "Use it from Python".
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from benchmark.documents import LeaderboardDocument
from benchmark.errors import SagoError
from benchmark.model_facts import FACTS_FILE, read_model_facts
from benchmark.models.protocol import ModelBackend
from benchmark.paths import LEADERBOARD_DIR, SUBMISSIONS_DIR, VARIANTS_DIR, check_slug
from benchmark.results import LEADERBOARD_FILE
from benchmark.schema import BOARD_SET_VERSION, DEFAULT_SEED, DEFAULT_SET, DEFAULT_SET_VERSION
from benchmark.stats.sgs import DEFAULT_RESAMPLES
from benchmark.submissions import ApiModel, HubModel, LocalModel, PackagedModel, load_submission
from benchmark.variants.frozen import VariantSet
from benchmark.variants.frozen import load_variant_set as _load_variant_set

_HUB_PIN = re.compile(r"^(?P<id>[^@\s]+/[^@\s]+)@(?P<revision>[0-9a-f]{40})$")
_API = re.compile(r"^api:(?P<model>[^@\s]+)@(?P<url>https?://[^#\s]+)(?:#(?P<key_env>[A-Z_][A-Z0-9_]*))?$")


@dataclass(frozen=True)
class ModelRef:
    """A model to load, without a submission folder (what :func:`evaluate` makes of a string)."""

    model: HubModel | PackagedModel | LocalModel | ApiModel
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"
    chat_template: Literal["auto", "always", "never"] = "auto"


def _names_submission(model: str, submissions: Path) -> bool:
    return bool(re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\-]*", model)) and (submissions / model).is_dir()


def load_variant_set(
    set_name: str = DEFAULT_SET, version: str = DEFAULT_SET_VERSION, *, root: Path = VARIANTS_DIR
) -> VariantSet:
    """The frozen variant set ``set_name/version``, every file checked against its manifest sha256."""
    return _load_variant_set(set_name, version, root)


def model_ref(model: str, *, submissions: Path = SUBMISSIONS_DIR) -> ModelRef:
    """What a model string names: a submission slug, a local model folder, ``org/name@<40-hex sha>`` or
    ``api:<model>@<base_url>[#KEY_VARIABLE]`` (the model name is its snapshot: give a dated one; the
    endpoint rules of :mod:`benchmark.endpoints` hold).

    >>> model_ref("api:gpt-4o-mini-2024-07-18@https://api.openai.com#SAGO_API_KEY_OPENAI").model.key_env
    'SAGO_API_KEY_OPENAI'
    """
    api = _API.fullmatch(model)
    if api:
        try:
            name, url, key_env = api["model"], api["url"], api["key_env"]
            spec = ApiModel(kind="api", base_url=url, model=name, snapshot=name, key_env=key_env)
        except ValueError as err:
            raise SagoError(f"model {model[:80]!r}: not a usable api:<model>@<base_url> ({err})") from None
        return ModelRef(spec)
    if _names_submission(model, submissions):
        submission = load_submission(check_slug(model), submissions)
        return ModelRef(submission.model, submission.dtype, submission.chat_template)
    folder = Path(model).expanduser()
    if folder.is_dir():
        return ModelRef(LocalModel(kind="local", path=str(folder.resolve())))
    pinned = _HUB_PIN.fullmatch(model)
    if pinned:
        return ModelRef(HubModel(kind="hub", id=pinned["id"], revision=pinned["revision"]))
    raise SagoError(
        f"model {model[:80]!r} is not a submission slug, a local folder, a pinned Hub id "
        "(org/name@<40-hex commit sha>) or api:<model>@<base_url>"
    )


def evaluate(
    model: str | ModelBackend,
    variant_set: VariantSet,
    out: str | Path | None = None,
    *,
    profile: str = "smoke",
    threads: int | None = None,
    batch_size: int | None = None,
    datasets: Sequence[str] | None = None,
    device: str | None = None,
    engine: str | None = None,
    force: bool = False,
    progress: bool = True,
) -> Path | None:
    """Run ``model`` on ``variant_set`` and write its results folder ``out`` (records, activations,
    run.json); a killed run resumes when called again.

    Args:
        model: a string :func:`model_ref` reads, or a loaded backend (:func:`benchmark.testing.tiny_backend`).
        variant_set: from :func:`load_variant_set`.
        out: the results folder; for a submission slug it may be left out (then the submission's own).
        profile, threads, batch_size, datasets, device, engine, force, progress: as ``sago evaluate``'s.

    Returns:
        run.json's path, or None when ``out`` already holds complete results and ``force`` is off.
    """
    from benchmark.harness.evaluate import EvaluateOptions, evaluate_model  # torch: only when a model runs

    options = EvaluateOptions(
        set_name=variant_set.name,
        version=variant_set.version,
        profile=profile,
        device=device,
        batch_size=batch_size,
        datasets=tuple(datasets) if datasets else None,
        engine=engine,
        threads=threads,
        force=force,
        progress=progress,
    )
    if isinstance(model, str):
        ref = model_ref(model)
        if out is None:
            if not _names_submission(model, SUBMISSIONS_DIR):
                raise SagoError(f"{model[:80]!r} is not a submission slug; pass out, the folder to write")
            from benchmark.harness.evaluate import run_folder

            out = run_folder(model, options, SUBMISSIONS_DIR, api=isinstance(ref.model, ApiModel))
        return evaluate_model(ref, options, Path(out), label=model, variant_set=variant_set)
    if out is None:
        raise SagoError(f"{model.name}: pass out, the folder a loaded backend's results go to")
    return evaluate_model(None, options, Path(out), label=model.name, backend=model, variant_set=variant_set)


def analyze(
    set_name: str = DEFAULT_SET,
    version: str = BOARD_SET_VERSION,
    *,
    submissions: Path = SUBMISSIONS_DIR,
    out: Path = LEADERBOARD_DIR / LEADERBOARD_FILE,
    slugs: Sequence[str] = (),
    seed: int = DEFAULT_SEED,
    resamples: int = DEFAULT_RESAMPLES,
    profile: str | None = None,
) -> LeaderboardDocument:
    """``sago analyze``: every submission's summary.json and the leaderboard document at ``out``.

    ``profile`` (None: the version's board profile) chooses whose runs are analysed; another profile's
    board needs its own ``out`` (:func:`benchmark.results.profile_board_path`).
    """
    from benchmark.pipeline.analyze import AnalyzeRequest, run_analysis
    from benchmark.stats.summary import AnalysisOptions

    options = AnalysisOptions(seed=seed, resamples=resamples)
    return run_analysis(
        AnalyzeRequest(set_name, version, submissions, out, tuple(slugs), options, profile=profile)
    )


def build_site(
    leaderboard: Path = LEADERBOARD_DIR / LEADERBOARD_FILE,
    out: Path = LEADERBOARD_DIR / "site",
    *,
    submissions: Path = SUBMISSIONS_DIR,
    variants: Path = VARIANTS_DIR,
    progress: bool = True,
) -> Path:
    """``sago leaderboard build``: render the static site of ``leaderboard`` into ``out``; returns ``out``."""
    from benchmark.site.board import read_board
    from benchmark.site.build import SiteInputs
    from benchmark.site.build import build_site as render
    from benchmark.site.cli import other_boards, profile_boards

    board = read_board(leaderboard)
    variant_set = _load_variant_set(board.data["set"], board.data["version"], variants)
    files = read_model_facts(leaderboard.with_name(FACTS_FILE))
    render(
        SiteInputs(board, submissions, variant_set, model_files=files),
        out,
        progress=progress,
        others=other_boards(board, leaderboard, submissions, variants),
        profiles=profile_boards(board, leaderboard, submissions, variant_set),
    )
    return out
