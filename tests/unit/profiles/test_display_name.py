"""Names of sampled profiles for people: 3 significant digits, the exact spec in the record."""

from __future__ import annotations

from analysis_fakes import search_records, verify_records, write_run

from tlmsearch.profiles.spec import display_name
from tlmsearch.report.run import write_report
from tlmsearch.rundir.records import read_records

SAMPLED = "knots:k0=0.7826507194351919,k1=1.1061661495857118,k2=0.8755673899535843,mode=free,interp=pchip"


def test_display_name_rounds_real_parameters_only() -> None:
    assert display_name(SAMPLED) == "knots:k0=0.783,k1=1.11,k2=0.876,mode=free,interp=pchip"
    assert display_name("cosine:start=1.5,end=0.5") == "cosine:start=1.5,end=0.5"
    assert display_name("uniform") == "uniform"
    assert display_name("random-best") == "random-best"  # no profile text: as it is


def test_outputs_show_the_short_name_and_the_record_keeps_the_exact_spec(tmp_path) -> None:  # noqa: ANN001
    recs = verify_records()
    for r in recs:  # the verified winner, with the parameters a sampler gives
        if r["profile"]["family"] == "knots":
            r["profile"]["params"] = {"k0": 2.987654321012, "k1": 1.0123456789}
    run = write_run(tmp_path / "run", search_records() + recs)
    md = write_report(run)["markdown"].read_text()
    assert "the best candidate by mean, knots:k0=2.99,k1=1.01, gains" in md  # the headline
    assert "| 1 | `knots:k0=2.99,k1=1.01` |" in md and "2.98765" not in md  # the tables, the search's favourite
    exact = next(r for r in read_records(run) if r.kind == "verify" and r.profile["family"] == "knots")
    assert exact.profile["params"]["k0"] == 2.987654321012  # the record keeps the exact spec
    assert str(exact.spec) == "knots:k0=2.987654321012,k1=1.0123456789"
