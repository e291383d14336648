"""Export a per-layer MLP width schedule to training-config formats.

Each format is written as a reader will read it, then decoded back with that reader's
documented rule; when the rule cannot reproduce a width exactly the result says so and lists
the widths the reader will build. The formats themselves (writers, readers' rules, file
names) are one table, `tlmsearch.export.formats.FORMATS`. Pure Python: no torch, no
transformers.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlmsearch.analysis.collect import label, profile_results
from tlmsearch.analysis.summary import eval_kind, recorded_verdicts
from tlmsearch.core.base import ModelConfig
from tlmsearch.core.validate import confined, writable_dir
from tlmsearch.errors import UserError
from tlmsearch.export.foreign import make_divisible
from tlmsearch.export.formats import FORMATS, Format, decode, get_format
from tlmsearch.export.writer import ExportInput
from tlmsearch.profiles import Budget, ProfileSpec
from tlmsearch.profiles.joint_budget import holds_budget
from tlmsearch.rundir.io import read_verify, require_dir
from tlmsearch.rundir.layout import EXPORT_DIR
from tlmsearch.rundir.records import EVAL_KINDS, SEARCH_KINDS, TrialRecord, finished
from tlmsearch.rundir.study import Study, load

__all__ = ["FORMATS", "Export", "Format", "decode", "export", "export_run", "make_divisible", "pick_trial"]


@dataclass(frozen=True)
class Export:
    """One exported file plus what its reader will build from it."""

    format: str
    filename: str
    text: str
    widths: tuple[int, ...]  # the widths we asked for
    built: tuple[int, ...]  # the widths the reader builds under its documented rule
    notes: tuple[str, ...] = field(default=())
    files: tuple[tuple[str, str], ...] = field(default=())  # other files of the folder: (name, text)
    loading: str = ""  # how to load it: a snippet with {path} and {dir} to fill in (`Format.loading`)

    @property
    def exact(self) -> bool:
        return self.built == self.widths

    def summary(self) -> str:
        """A short human report: where it is exact, and what a reader builds where it is not."""
        head = f"{self.format}: {self.filename}"
        if self.exact:
            lines = [f"{head} (exact: the reader builds widths {list(self.built)})"]
        else:
            diff = [i for i, (a, b) in enumerate(zip(self.widths, self.built, strict=True)) if a != b]
            lines = [
                f"{head} is NOT exact under the reader's rounding rule: layers {diff} change",
                f"  requested widths: {list(self.widths)} (sum {sum(self.widths)})",
                f"  reader builds:    {list(self.built)} (sum {sum(self.built)})",
            ]
        return "\n".join(lines + [f"  note: {n}" for n in self.notes])

    def write(self, out_dir: str | Path) -> Path:
        out = Path(out_dir)
        out.mkdir(parents=True, exist_ok=True)
        path = out / self.filename
        path.write_text(self.text)
        for name, text in self.files:
            (out / name).write_text(text)
        return path


def export(
    model: ModelConfig,
    fmt: str,
    *,
    train: Mapping[str, Any] | None = None,
    data: Mapping[str, Any] | None = None,
    source: Mapping[str, Any] | None = None,
    divisor: int | None = None,
) -> Export:
    """Export `model.mlp_widths` in format `fmt`.

    `train`/`data` (plain dicts of TrainConfig/DataConfig) go into the native config; `source`
    (e.g. run dir, trial id, profile text) is recorded where the format has room for it;
    `divisor` sets OpenELM's `ffn_dim_divisor` (default: the largest exact one, the gcd).
    """
    spec = get_format(fmt)
    widths = tuple(int(w) for w in model.mlp_widths)
    x = ExportInput(model, widths, dict(train or {}), dict(data or {}), dict(source or {}), divisor)
    doc, notes = spec.write(x)
    text, built = spec.dump(doc), spec.decode(doc)
    files = tuple(spec.files().items()) if spec.files else ()
    loading = spec.loading(doc) if callable(spec.loading) else spec.loading
    return Export(
        format=fmt,
        filename=spec.filename,
        text=text,
        widths=widths,
        built=built,
        notes=tuple(notes),
        files=files,
        loading=loading,
    )


# ----------------------------------------------------------------------------- from a run


def pick_trial(study: Study, trial: str = "best") -> tuple[TrialRecord, str]:
    """The record to export and why it was chosen.

    "best": the verdict's best when the run holds seed re-evaluations (verify/compare): the
    profile ranked first by mean loss on the seeds the verdict decides on (the table, `status`
    and the report name the same one); without a verdict, the lowest mean loss over the
    re-evaluations; else the finished search trial with the lowest val_loss.
    Otherwise `trial` is a trial id.
    """
    records = study.records
    if trial != "best":
        rec = next((r for r in records if r.trial_id == trial), None)
        if rec is None:
            ids = [r.trial_id for r in records]
            shown = ", ".join(ids[:8]) + (", ..." if len(ids) > 8 else "")
            raise UserError(f"unknown trial id {trial!r} in {study.run_dir}; known: {shown or 'none'}")
        if not rec.widths:
            raise UserError(f"trial {trial!r} has no widths to export (status {rec.status})")
        return rec, f"trial {trial}"
    kind = eval_kind(records)
    if kind is not None:
        results = profile_results(records, kinds=(kind,))
        if results:
            verdicts = _verdicts(study)
            decided = {v.best: v for v in verdicts}
            best = min(results, key=lambda r: (r.label not in decided, r.mean_loss, r.label))
            rec = next(r for r in records if r.trial_id == best.trial_ids[0])
            note = undecided_note(verdicts, best.label)
            if best.label in decided:
                how = f"the verdict's best: lowest mean loss over its {decided[best.label].n_seeds} deciding seeds"
                return rec, f"{how} ({best.label})" + note
            return rec, f"lowest mean loss over {best.n_seeds} {kind} seeds ({best.label})" + note
    done = finished(records, kinds=SEARCH_KINDS + EVAL_KINDS)
    if not done:
        raise UserError(f"{study.run_dir} has no finished trials (complete, full fidelity) to export")
    rec = min(done, key=lambda r: r.metric("val_loss"))
    return rec, f"lowest search val_loss ({rec.metric('val_loss'):.4f}; not re-evaluated with seeds)"


def _verdicts(study: Study) -> list[Any]:
    """The run's verdicts as `tlmsearch report` gives them ([] when verify.json is unreadable:
    the export does not need them, only its note does)."""
    try:
        return recorded_verdicts(
            study.records, read_verify(study.run_dir), arch=study.config.arch, space=study.config.space
        )
    except (UserError, TypeError, ValueError):
        return []


def _is_cosine(text: str) -> bool:
    try:
        return ProfileSpec.parse(text).resolved() == ProfileSpec.parse("cosine").resolved()
    except UserError:
        return False


def undecided_note(verdicts: list[Any], label: str) -> str:
    """Why the favourite by mean perplexity, `label`, is no decided winner (one clause), or ""
    when the verdicts decide for it (shown better than cosine) or say nothing against it (pure)."""
    if any(v.outcome == "better" and v.better == label for v in verdicts):
        return ""
    if any(v.outcome == "inconclusive" for v in verdicts):
        return (
            "; undecided: the verdict is inconclusive, so this is the favourite by mean, not a profile shown better "
            "than cosine (more seeds decide: `tlmsearch verify --seeds auto`)"
        )
    if not _is_cosine(label) and any(v.outcome == "near_optimal" for v in verdicts):
        return "; not shown better than cosine: the verdict is that cosine is near-optimal within the margin"
    return ""


def check_trained_widths(rec: TrialRecord, model: ModelConfig) -> None:
    """Refuse (one line naming both) a record whose widths disagree with its model, or do not fit
    the budget it says it trained under: every profile of a budget has the same total, so such a
    record was damaged or edited, and exporting it would write widths no trial trained."""
    widths = tuple(int(w) for w in model.mlp_widths)
    if rec.widths and tuple(rec.widths) != widths:
        raise UserError(
            f"trial {rec.trial_id}: its record's widths {list(rec.widths)} differ from its model's mlp_widths "
            f"{list(widths)}; the record is damaged or was edited: restore trials.jsonl or export another trial"
        )
    if not rec.budget:
        return
    try:
        budget = Budget.from_dict(rec.budget, where="budget")
    except UserError as exc:
        raise UserError(f"trial {rec.trial_id}: its record's budget is damaged ({exc})") from None
    if not model.uniform_attention:  # a joint architecture: its MLPs hold what its heads and blocks leave
        hold = str(rec.spec.resolved().params.get("hold", "params")) if rec.spec.family == "joint" else "params"
        if not holds_budget(model, budget, hold):
            raise UserError(
                f"trial {rec.trial_id}: its joint architecture (MLP widths {list(widths)}) does not hold the "
                f"{'training FLOPs per token' if hold == 'flops' else 'non-embedding parameters'} of the budget its "
                "record names (the uniform model's); the record is damaged or was edited: restore trials.jsonl or "
                "export another trial"
            )
        return
    if not budget.is_valid(widths):
        rule = f"{budget.n_layers} widths summing to {budget.total}, multiples of {budget.multiple_of}"
        raise UserError(
            f"trial {rec.trial_id}: its widths {list(widths)} (sum {sum(widths)}) do not fit the budget its record "
            f"names ({rule}); the record is damaged or was edited: restore trials.jsonl or export another trial"
        )


def export_run(
    study: Study | str | Path,
    trial: str = "best",
    fmt: str = "native",
    out_dir: str | Path | None = None,
    *,
    divisor: int | None = None,
    write: bool = True,
    allow_inexact: bool = False,
    weights: str | None = None,
) -> tuple[Export, Path | None, str]:
    """Export one trial of a run (a `Study` or a run directory); returns (export, path, why chosen).

    The model is the one the trial trained (its record's `model`). Written to `out_dir` (default
    `<run_dir>/export/<trial_id>-<format>/`) unless `write=False`. A format whose reader would
    build other widths than the trial trained is refused (a `UserError` showing both) unless
    `allow_inexact=True`: a silently different model is not the one the search chose.

    `weights` (hf only): a checkpoint.pt (or its folder) of the trial, or "auto" for the trial's
    kept checkpoint in the run; its trained weights go beside the config as model.safetensors.
    """
    get_format(fmt)  # refuse an unknown format before reading the run
    if weights is not None and fmt != "hf":
        raise UserError(f"--weights writes trained weights for --format hf only, not --format {fmt}")
    if weights is not None and not write:
        raise UserError("--weights writes model.safetensors into a folder: drop --stdout")
    if isinstance(study, str | Path):
        study = load(require_dir(study))
    rec, why = pick_trial(study, trial)
    cfg = study.config
    model = study.model_of(rec)
    check_trained_widths(rec, model)  # a damaged or edited record: never export other widths silently
    steps = rec.max_steps or cfg.train.steps
    train = cfg.train.replace(seed=rec.seed, steps=steps, warmup_steps=min(cfg.train.warmup_steps, steps))
    source = {
        "run_dir": str(study.run_dir),
        "trial_id": rec.trial_id,
        "profile": label(rec),
        "val_loss": rec.metric("val_loss"),
        "chosen": why,
    }
    # the native format keeps `source` as the run config's meta (the section training ignores)
    ex = export(model, fmt, train=train.to_dict(), data=cfg.data.to_dict(), source=source, divisor=divisor)
    if not ex.exact and not allow_inexact:
        raise UserError(
            f"{fmt} cannot express trial {rec.trial_id}'s widths exactly: requested {list(ex.widths)} "
            f"(sum {sum(ex.widths)}), its reader builds {list(ex.built)} (sum {sum(ex.built)}); "
            f"{get_format(fmt).exact_rule}; pass --allow-inexact (allow_inexact=True) to write it anyway"
        )
    path = None
    if write:
        # a trial id comes from a record, which a damaged or crafted file could set to ../../..
        out = (
            writable_dir(out_dir, "--out") if out_dir else confined(study.run_dir, EXPORT_DIR, f"{rec.trial_id}-{fmt}")
        )
        path = ex.write(out)
        if weights is not None:
            ex = _with_weights(ex, model, weights, study.run_dir, rec.trial_id, out)
    return ex, path, why


def _with_weights(ex: Export, model: ModelConfig, weights: str, run_dir: Path, trial_id: str, out: Path) -> Export:
    """Write the trial's trained weights into `out` (hf); `ex` with a note saying from where."""
    from tlmsearch.export.hf_weights import find_checkpoint, write_weights  # lazy: torch

    checkpoint = find_checkpoint(run_dir, trial_id) if weights == "auto" else Path(weights)
    try:
        path, step = write_weights(model, checkpoint, out)
    except ImportError as exc:
        missing = f"--weights needs the safetensors package ({exc.name} is missing)"
        raise UserError(f"{missing}: pip install safetensors") from None
    note = f"weights: {path.name} from {checkpoint} (step {step})"
    return dataclasses.replace(ex, notes=(*ex.notes, note))
