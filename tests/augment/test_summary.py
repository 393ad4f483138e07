"""Views that cannot be made are recorded per row and totalled per kind and language, with the reason."""

from __future__ import annotations

from xlt.augment import CrossLingualAugment, summarize_views
from xlt.data.records import Example
from xlt.translate import ProvidedTranslations

from .helpers import batch_of, zz_dictionary


def test_missing_views_are_recorded_and_reported() -> None:
    provided = ProvidedTranslations([Example(id="e1", text="w1 w2", lang="en", source_id="1"),
                                     Example(id="d1", text="zw1 zw2", lang="de", source_id="1")])
    examples = [Example(id="a", text="w1 w2", lang="en", source_id="1"),
                Example(id="b", text="w3 only", lang="en", source_id="2"),  # no German row for source_id 2
                Example(id="c", text="nothing to switch", lang="en", source_id="1")]
    aug = CrossLingualAugment(t_f=1, t_p=0, t_c=1, r_c=1.0, languages=["de"], translator=provided,
                              dictionaries=[zz_dictionary("de")])
    out = aug(batch_of(examples))
    assert [list(m) for m in out["view_missing"]] == [[], ["full:de"], ["full:de", "codeswitch:de"]]
    assert list(out["views"][0]) == ["zw1 zw2", "zzw1 zzw2"]
    report = summarize_views(out)
    assert report.rows == 3 and not report.complete
    assert report.made[("full", "de")] == 1 and report.missing[("full", "de")] == 2
    assert "full:de: 2 of 3 views missing" in str(report)
    assert "codeswitch:de: 1 of 3 views missing: no word of the text" in str(report)
