"""`tlmsearch plan` against the commands' own prices, nothing trained (bench/README.md, 21).

    python -m bench.first_day_plan cpu-s       # run from the root of a clone with runs/first4
                                               # (any finished search: its records name the profiles)

torch is told it sees one H200 (CUDA mocked: the prices of a GPU trial come from FLOPs and the
step floor, no device is touched), so `plan --preset P --gpu h200 --gpus 1` and the commands
price the same hardware: `search --preset P --dry-run` (its plan line), and verify's own price
of a search of preset P (its refusal at a limit of ~0 h gives the price of its pilot and of the
most seeds it may add). Every other setting is each command's default."""

from __future__ import annotations

import contextlib
import io
import re
import shutil
import sys
import tempfile
from pathlib import Path


def _mock_h200() -> None:
    import torch

    torch.cuda.is_available = lambda: True
    torch.cuda.device_count = lambda: 1
    torch.cuda.get_device_name = lambda index=0: "NVIDIA H200"
    import tlmsearch.costs.calibrate as calibrate

    calibrate.current_load = lambda cores: 0.0  # a GPU trial does not share this machine's cores


def _run(argv: list[str]) -> tuple[int, str, str]:
    from tlmsearch.cli import main

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def verify_price(preset: str, search_dir: str) -> str:
    """Verify's own refusal line (its price) for a search of `preset` whose records are `search_dir`'s."""
    from tlmsearch.configs.presets import preset as preset_of
    from tlmsearch.configs.resolve import resolve_trial_length
    from tlmsearch.configs.search import SearchConfig
    from tlmsearch.errors import UserError
    from tlmsearch.rundir.study import Study, load
    from tlmsearch.tuning.verify import verify

    shape = preset_of(preset)
    with tempfile.TemporaryDirectory() as tmp:
        dst = Path(tmp) / "search"
        shutil.copytree(search_dir, dst)
        trials = dst / "trials.jsonl"  # the records' budget becomes the preset's
        budget = f'"base_width": {shape.base_width}, "multiple_of": {shape.multiple_of}'
        trials.write_text(re.sub(r'"base_width": \d+, "multiple_of": \d+', budget, trials.read_text()))
        cfg = resolve_trial_length(SearchConfig(preset=preset, gpus_per_trial=1.0, name="p"))
        try:
            verify(Study(dst, cfg, load(dst).records), max_hours=1e-9, yes=False, allow_collapsed=True, progress=False)
        except UserError as exc:
            return str(exc)
    return "verify was not refused"


def main(argv: list[str]) -> None:
    preset = argv[0] if argv else "cpu-s"
    search_dir = argv[1] if len(argv) > 1 else "runs/first4"
    _mock_h200()
    print(f"== tlmsearch plan --preset {preset} --gpu h200 --gpus 1")
    print(_run(["plan", "--preset", preset, "--gpu", "h200", "--gpus", "1"])[1])
    print(f"== tlmsearch search --preset {preset} --dry-run")
    with tempfile.TemporaryDirectory() as tmp:
        print(_run(["search", "--preset", preset, "--dry-run", "--name", "p", "--runs-dir", tmp])[2].strip())
    print(f"== verify's own price of a {preset} search (top 5, 3 controls, planned seeds up to 20)")
    print(verify_price(preset, search_dir))


if __name__ == "__main__":
    main(sys.argv[1:])
