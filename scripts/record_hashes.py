"""Record the hash fixture (tests/fixtures/hashes.json) from the current code.

Run only for an intended, versioned change of a canonical config or hash, and list the
change in CHANGELOG.md:  python scripts/record_hashes.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import tokenpact as tp  # noqa: E402
from hash_cases import FIXTURE, cases, hashes_of  # noqa: E402


def main() -> None:
    records = {}
    with tempfile.TemporaryDirectory() as tmp:
        for index, (name, build) in enumerate(sorted(cases(tp).items())):
            records[name] = hashes_of(build(), Path(tmp) / str(index))
            print(name, records[name]["semantic"][:16], flush=True)
    FIXTURE.parent.mkdir(parents=True, exist_ok=True)
    tmp_path = FIXTURE.with_suffix(".tmp")
    tmp_path.write_text(json.dumps(records, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    tmp_path.replace(FIXTURE)
    print(f"wrote {len(records)} cases to {FIXTURE}")


if __name__ == "__main__":
    main()
