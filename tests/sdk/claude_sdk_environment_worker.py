"""The official `anthropic` SDK's self-hosted environment worker serves one session of the Claude emulator, for
tests/tests/self_hosted_sdk.rs: the SDK's poller claims (polls and acks) the environment's one queued work item,
and `EnvironmentWorker.handle_item` serves it — the per-item flow `EnvironmentWorker.run` runs for each item it
claims: heartbeats, the built-in toolset (`beta_agent_toolset_20260401`) in WORKDIR answering the session's tool
calls, and a force-stop once the session has been idle for `max_idle` after its last turn. Then the rest of the
`Work` resource is checked, strictly validated.

Usage: claude_sdk_environment_worker.py BASE_URL ENVIRONMENT_ID ENVIRONMENT_KEY WORKDIR

Exits 0 once the item is served and stopped; prints nothing. The test reads the outcome from the emulator.
"""

import asyncio
import sys

import anthropic
from anthropic.lib.environments import EnvironmentWorker


async def main() -> None:
    base, environment_id, environment_key, workdir = sys.argv[1:5]
    app = anthropic.AsyncAnthropic(base_url=base, api_key="test-key", _strict_response_validation=True)
    work = app.beta.environments.work

    # Without `block_ms` the drain's last poll answers at once; the queue holds the one session's item.
    poller = work.poller(
        environment_id=environment_id, environment_key=environment_key, block_ms=None, drain=True, auto_stop=False
    )
    claimed = [item async for item in poller]
    assert len(claimed) == 1, claimed
    item = claimed[0]
    assert item.data.type == "session" and item.secret, item

    worker = EnvironmentWorker(
        app,
        environment_id=environment_id,
        environment_key=environment_key,
        workdir=workdir,
        max_idle=1.0,
        memory_sync_interval=None,
    )
    # Returns once the session has been idle (end_turn) for max_idle, after force-stopping the item.
    await worker.handle_item(
        work_id=item.id, environment_id=environment_id, session_id=item.data.id, work_secret=item.secret
    )

    # The rest of the Work resource; a poll without work is None.
    stopped = await work.retrieve(item.id, environment_id=environment_id)
    assert stopped.state == "stopped" and stopped.secret is None, stopped
    updated = await work.update(item.id, environment_id=environment_id, metadata={"k": "v"})
    assert updated.metadata == {"k": "v"}, updated
    stats = await work.stats(environment_id)
    assert (stats.depth, stats.pending) == (0, 0) and stats.workers_polling == 1, stats
    assert await work.poll(environment_id, block_ms=10) is None


if __name__ == "__main__":
    asyncio.run(main())
