"""A child process of the idempotency conformance suite: claims one key of the records at a
backend's location once the parent says go, and prints what it got.

    python -m tests.storage.conformance.idempotency_child LOCATION GO_FILE HOLD_SECONDS

Prints ``ready`` once the records are open, then ``ran OWNER`` (it held the claim, ran, and
completed with ``{"by": OWNER}``) or ``replayed OWNER`` (the stored result of another).
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from hermes.tools.pipeline.idempotency_records import IdempotencyRecords
from hermes.tools.policies import new_owner
from tests.storage.backends import open_idempotency_location


def main(location: str, go_file: str, hold: float) -> None:
    records = open_idempotency_location(location)
    print("ready", flush=True)
    go = Path(go_file)
    while not go.exists():
        time.sleep(0.001)
    asyncio.run(race(records, hold))


async def race(records: IdempotencyRecords, hold: float) -> None:
    owner = new_owner()
    stored = await records.claim("refund", "k", owner=owner, lease=30)
    if stored is None:
        await asyncio.sleep(hold)  # the call runs: the others must wait, not run it too
        result = json.dumps({"by": owner})
        assert await records.complete("refund", "k", owner=owner, result_json=result, ttl=60)
        print(f"ran {owner}", flush=True)
    else:
        print(f"replayed {json.loads(stored)['by']}", flush=True)
    close = getattr(records, "close", None)
    if close is not None:
        await close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
