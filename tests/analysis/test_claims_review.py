"""docs/claims.md is what scripts/claims_review.py writes from the claims files (run it after
editing a claims.yaml); the hand-written text of the page is kept."""

import importlib.util
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("claims_review", ROOT / "scripts" / "claims_review.py")
cr = importlib.util.module_from_spec(spec)
spec.loader.exec_module(cr)

HAND = """# The claims

An introduction written by hand.

## Paper 000: demo

Prose about demo, kept.

| claim | kind | the paper's words | local profile |
| --- | --- | --- | --- |
| `variant_faster`, `_slow` | finding | "words" | not run in this profile (one size) |

| a table | of something else |
| --- | --- |
| kept | too |
"""


def experiments(tmp_path):
    root = tmp_path / "experiments"
    (root / "demo").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "experiments" / "_template" / "claims.yaml", root / "demo" / "claims.yaml")
    return root


def test_the_hand_written_text_and_notes_are_kept(tmp_path):
    text = cr.generate(HAND, experiments(tmp_path))
    assert text.startswith("# The claims\n\nAn introduction written by hand.\n\n## Paper 999")
    assert (
        "### demo\n\nProse about demo, kept.\n\n| a table | of something else |\n| --- | --- |\n| kept | too |" in text
    )
    assert "| claim | kind | the paper's words | local profile |" not in text  # the hand-written claims table
    row = next(line for line in text.splitlines() if line.startswith("| `variant_faster`"))
    assert "Reviewed: not run in this profile (one size)." in row
    assert "Our scheduler runs the jobs 10% faster than Linux." in row and "| headline |" in row
    assert (
        "can be reproduced in direction, in magnitude or not, contradicted, inconclusive" in row
        and "Local VM: judged" in row
    )
    assert cr.generate(text, experiments(tmp_path)) == text  # a second run changes nothing


def test_row_ids_of_a_grouped_row():
    assert cr._row_ids("`speedup_3gbe_mark`, `_rfs`") == ["speedup_3gbe_mark", "speedup_3gbe_rfs"]


def test_docs_claims_md_is_up_to_date():
    text = cr.DOC.read_text()
    assert cr.generate(text) == text, "docs/claims.md is not what scripts/claims_review.py writes: run it"
