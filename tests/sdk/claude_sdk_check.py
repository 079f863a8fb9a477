"""Drives the Claude Managed Agents emulator with the official `anthropic` Python SDK.

Usage: python claude_sdk_check.py BASE_URL

BASE_URL is what `cargo run -p managed-agents-claude --features emulator --example serve_claude_emulator` prints. The
emulator's script, for every session, must be: one turn calling the custom tool `get_weather`, then one turn of text
(on a coordinator's session, the emulator runs the tool turn in a sub-agent's thread); a session whose first message
is `PREVIEW_PROMPT` gets one turn of text in three chunks (`PREVIEWED`), which the previews check streams with
`event_deltas=["agent.message"]`.

Every response is parsed with the SDK's strict validation (`_strict_response_validation=True`: a missing
required field or a wrong type is an error), and every model is also checked to have had each of its required
fields present in the JSON (`model_fields_set`). Exits 0 when every call worked, 1 with a message otherwise.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any, Iterable

import urllib.error
import urllib.request

import anthropic
from pydantic import BaseModel

PROMPT = "What is the weather in Oslo?"
PREVIEWED = ["Previews ", "come ", "first."]
PREVIEW_PROMPT = "Preview, please."


class CheckFailed(Exception):
    """A check did not hold."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def require_fields(value: Any, where: str) -> None:
    """Every required field of every model in `value` came from the response (not a default)."""
    if isinstance(value, BaseModel):
        for name, field in type(value).model_fields.items():
            if field.is_required():
                expect(name in value.model_fields_set, f"{where}: required field `{name}` missing")
            require_fields(getattr(value, name, None), f"{where}.{name}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            require_fields(item, f"{where}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            require_fields(item, f"{where}[{key!r}]")


def checked(value: Any, cls: type, where: str) -> Any:
    expect(isinstance(value, cls), f"{where}: expected {cls.__name__}, got {type(value).__name__}")
    require_fields(value, where)
    return value


def all_items(page: Any, where: str, cls: type) -> tuple[list[Any], int]:
    """Every item of a paged list, following `next_page`; also counts the pages."""
    items = []
    pages = 0
    for current in page.iter_pages():
        pages += 1
        for item in current.data:
            items.append(checked(item, cls, f"{where} item"))
    return items, pages


def client_with(base_url: str, **credentials: Any) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=base_url, max_retries=0, timeout=15.0, _strict_response_validation=True, **credentials
    )


def stream_until_idle(stream: Iterable[Any], seen: list[Any]) -> Any:
    """Reads the stream until a `session.status_idle` (returned) or `session.status_terminated` (a failure)."""
    for event in stream:
        require_fields(event, f"streamed {event.type}")
        seen.append(event)
        if event.type == "session.status_idle":
            return event
        if event.type in ("session.status_terminated", "session.error"):
            raise CheckFailed(f"the session failed: {event.to_json()}")
    raise CheckFailed("the stream ended before the session went idle")


def check_agents(client: anthropic.Anthropic, types: Any) -> tuple[str, list[str]]:
    agents = client.beta.agents
    created = []
    for n in range(3):
        agent = agents.create(
            name=f"sdk_check_agent_{n}",
            model="claude-sonnet-4-6",
            system="Answer briefly.",
            tools=[
                {
                    "type": "custom",
                    "name": "get_weather",
                    "description": "The weather in a city",
                    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
                },
                {"type": "agent_toolset_20260401"},
            ],
            metadata={"purpose": "sdk-check"},
        )
        checked(agent, types.BetaManagedAgentsAgent, "agents.create")
        expect(agent.model.id == "claude-sonnet-4-6", f"agents.create: model {agent.model!r}")
        expect(agent.version == 1 and agent.archived_at is None, "agents.create: a new agent is version 1, unarchived")
        created.append(agent.id)
    first = created[0]
    again = checked(agents.retrieve(first), types.BetaManagedAgentsAgent, "agents.retrieve")
    expect(again.id == first and again.metadata == {"purpose": "sdk-check"}, "agents.retrieve: another agent")
    listed, pages = all_items(agents.list(limit=2), "agents.list", types.BetaManagedAgentsAgent)
    expect([a.id for a in listed if a.id in created] == created, f"agents.list: {[a.id for a in listed]}")
    expect(pages >= 2, f"agents.list with limit=2 over 3 agents came in {pages} page(s)")
    updated = agents.update(first, version=1, system="Answer in one word.", metadata={"purpose": None, "k": "v"})
    checked(updated, types.BetaManagedAgentsAgent, "agents.update")
    expect(updated.version == 2, f"agents.update: version {updated.version}")
    expect(updated.system == "Answer in one word." and updated.metadata == {"k": "v"}, "agents.update: fields")
    expect(updated.updated_at >= again.updated_at, "agents.update: updated_at went back")
    try:
        agents.update(first, version=1, system="stale")
        raise CheckFailed("agents.update with a stale version was accepted")
    except anthropic.ConflictError:
        pass
    archived = checked(agents.archive(created[2]), types.BetaManagedAgentsAgent, "agents.archive")
    expect(archived.archived_at is not None, "agents.archive: archived_at unset")
    visible = [a.id for a in agents.list()]
    expect(created[2] not in visible, "agents.list shows an archived agent without include_archived")
    expect(created[2] in [a.id for a in agents.list(include_archived=True)], "include_archived hides it")
    return first, created


def check_environments(client: anthropic.Anthropic, types: Any) -> str:
    environments = client.beta.environments
    ids = []
    for n in range(2):
        environment = environments.create(
            name=f"sdk_check_env_{n}", config={"type": "cloud", "networking": {"type": "unrestricted"}}
        )
        checked(environment, types.BetaEnvironment, "environments.create")
        ids.append(environment.id)
    limited = environments.create(
        name="sdk_check_env_limited",
        config={"type": "cloud", "networking": {"type": "limited", "allowed_hosts": ["example.com"]}},
    )
    checked(limited, types.BetaEnvironment, "environments.create (limited)")
    ids.append(limited.id)
    checked(environments.retrieve(ids[0]), types.BetaEnvironment, "environments.retrieve")
    listed, pages = all_items(environments.list(limit=1), "environments.list", types.BetaEnvironment)
    expect([e.id for e in listed if e.id in ids] == ids, f"environments.list: {[e.id for e in listed]}")
    expect(pages >= 3, f"environments.list with limit=1 came in {pages} page(s)")
    archived = checked(environments.archive(ids[1]), types.BetaEnvironment, "environments.archive")
    expect(archived.archived_at is not None, "environments.archive: archived_at unset")
    deleted = environments.delete(ids[2])
    checked(deleted, types.BetaEnvironmentDeleteResponse, "environments.delete")
    expect(deleted.id == ids[2] and deleted.type == "environment_deleted", "environments.delete: response")
    try:
        environments.retrieve(ids[2])
        raise CheckFailed("a deleted environment can still be retrieved")
    except anthropic.NotFoundError:
        pass
    return ids[0]


def check_session(client: anthropic.Anthropic, types: Any, agent_id: str, environment_id: str) -> None:
    sessions = client.beta.sessions
    events = sessions.events
    session = sessions.create(agent=agent_id, environment_id=environment_id, title="sdk check", metadata={"a": "b"})
    checked(session, types.BetaManagedAgentsSession, "sessions.create")
    expect(session.status == "idle" and session.agent.id == agent_id, "sessions.create: fields")
    other = checked(
        sessions.create(agent=agent_id, environment_id=environment_id), types.BetaManagedAgentsSession, "sessions.create"
    )
    checked(sessions.retrieve(session.id), types.BetaManagedAgentsSession, "sessions.retrieve")
    listed, pages = all_items(sessions.list(limit=1), "sessions.list", types.BetaManagedAgentsSession)
    expect({session.id, other.id} <= {s.id for s in listed}, "sessions.list: a session is missing")
    expect(pages >= 2, f"sessions.list with limit=1 came in {pages} page(s)")

    streamed: list[Any] = []
    with events.stream(session.id) as stream:
        sent = events.send(session.id, events=[{"type": "user.message", "content": [{"type": "text", "text": PROMPT}]}])
        checked(sent, types.sessions.BetaManagedAgentsSendSessionEvents, "events.send")
        expect(len(sent.data) == 1 and sent.data[0].type == "user.message", "events.send: echo")
        idle = stream_until_idle(stream, streamed)
        expect(idle.stop_reason.type == "requires_action", f"first idle: {idle.stop_reason!r}")
        calls = [e for e in streamed if e.type == "agent.custom_tool_use"]
        expect([c.name for c in calls] == ["get_weather"], f"tool calls: {[c.name for c in calls]}")
        expect(idle.stop_reason.event_ids == [calls[0].id], "requires_action names the tool call")
        expect(calls[0].input == {"city": "Oslo"}, f"tool input: {calls[0].input!r}")
        result = {
            "type": "user.custom_tool_result",
            "custom_tool_use_id": calls[0].id,
            "content": [{"type": "text", "text": "sunny, 21 C"}],
        }
        sent = events.send(session.id, events=[result])
        checked(sent, types.sessions.BetaManagedAgentsSendSessionEvents, "events.send (tool result)")
        idle = stream_until_idle(stream, streamed)
        expect(idle.stop_reason.type == "end_turn", f"second idle: {idle.stop_reason!r}")
    messages = [block.text for e in streamed if e.type == "agent.message" for block in e.content]
    expect(messages[-1] == "It is sunny in Oslo.", f"agent messages: {messages}")
    spans = [e for e in streamed if e.type == "span.model_request_end"]
    starts = {e.id for e in streamed if e.type == "span.model_request_start"}
    expect(len(spans) == 2 and all(s.model_request_start_id in starts for s in spans), "spans pair up")

    history, pages = all_items(events.list(session.id, limit=3), "events.list", BaseModel)
    ids = [e.id for e in history]
    expect(len(ids) == len(set(ids)), "events.list returned an event twice")
    expect(sorted(ids) == sorted(e.id for e in streamed), "the history and the stream disagree")
    expect(pages >= 3, f"events.list with limit=3 came in {pages} page(s)")
    only = [e.type for e in events.list(session.id, types=["agent.message", "user.message"])]
    expect(only and set(only) == {"agent.message", "user.message"}, f"types[] filter: {only}")
    newest_first = [e.id for e in events.list(session.id, order="desc")]
    expect(newest_first == list(reversed(ids)), "order=desc is not the reverse of the history")
    cut = history[len(history) // 2].processed_at
    later = [e.id for e in events.list(session.id, created_at_gt=cut)]
    expect(later == [e.id for e in history if e.processed_at > cut], "created_at[gt] filter")
    up_to = [e.id for e in events.list(session.id, created_at_lte=cut)]
    expect(up_to == [e.id for e in history if e.processed_at <= cut], "created_at[lte] filter")

    done = checked(sessions.retrieve(session.id), types.BetaManagedAgentsSession, "sessions.retrieve (after)")
    expect(done.status == "idle", f"status after the turn: {done.status}")
    expect(done.usage.input_tokens == 32 and done.usage.output_tokens == 16, f"usage: {done.usage!r}")
    archived = checked(sessions.archive(other.id), types.BetaManagedAgentsSession, "sessions.archive")
    expect(archived.archived_at is not None, "sessions.archive: archived_at unset")
    deleted = sessions.delete(session.id)
    checked(deleted, types.BetaManagedAgentsDeletedSession, "sessions.delete")
    expect(deleted.id == session.id and deleted.type == "session_deleted", "sessions.delete: response")


GET_WEATHER = {
    "type": "custom",
    "name": "get_weather",
    "description": "The weather in a city",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
}


def check_multiagent(client: anthropic.Anthropic, types: Any, environment_id: str) -> None:
    """A coordinator's session: its thread events decode, a sub-agent's call is answered naming its thread, and
    the threads endpoints (list, retrieve, events, stream, archive) answer in the SDK's types."""
    agents = client.beta.agents
    sessions = client.beta.sessions
    worker = agents.create(name="sdk_check_worker", model="claude-haiku-4-5", system="Look it up.", tools=[GET_WEATHER])
    checked(worker, types.BetaManagedAgentsAgent, "agents.create (worker)")
    lead = agents.create(
        name="sdk_check_lead",
        model="claude-opus-4-8",
        system="Delegate, then answer.",
        multiagent={
            "type": "coordinator",
            "agents": [worker.id, {"type": "advisor", "model": "claude-opus-4-8"}, {"type": "self"}],
        },
    )
    checked(lead, types.BetaManagedAgentsAgent, "agents.create (coordinator)")
    roster = [(entry.type, getattr(entry, "id", None)) for entry in lead.multiagent.agents]
    expect(roster == [("agent", worker.id), ("agent", lead.id), ("advisor", None)], f"resolved roster: {roster}")
    session = sessions.create(agent=lead.id, environment_id=environment_id)
    checked(session, types.BetaManagedAgentsSession, "sessions.create (coordinator)")
    copied = session.agent.multiagent.agents
    expect(copied[0].name == "sdk_check_worker", f"the session's roster: {[getattr(a, 'name', a.type) for a in copied]}")

    streamed: list[Any] = []
    with sessions.events.stream(session.id) as stream:
        sessions.events.send(session.id, events=[{"type": "user.message", "content": [{"type": "text", "text": PROMPT}]}])
        idle = stream_until_idle(stream, streamed)
        expect(idle.stop_reason.type == "requires_action", f"first idle: {idle.stop_reason!r}")
        created = [e for e in streamed if e.type == "session.thread_created"]
        expect(len(created) == 1 and created[0].agent_name == "sdk_check_worker", f"threads created: {created}")
        thread_id = created[0].session_thread_id
        calls = [e for e in streamed if e.type == "agent.custom_tool_use"]
        expect([c.session_thread_id for c in calls] == [thread_id], "the sub-agent's call is cross-posted")
        expect(idle.stop_reason.event_ids == [calls[0].id], "requires_action names the sub-agent's call")
        waiting = [e for e in streamed if e.type == "session.thread_status_idle"]
        expect(waiting and waiting[-1].stop_reason.type == "requires_action", "the thread waits too")
        result = {
            "type": "user.custom_tool_result",
            "custom_tool_use_id": calls[0].id,
            "content": [{"type": "text", "text": "sunny, 21 C"}],
            "session_thread_id": thread_id,
        }
        sent = sessions.events.send(session.id, events=[result])
        checked(sent, types.sessions.BetaManagedAgentsSendSessionEvents, "events.send (a sub-agent's result)")
        idle = stream_until_idle(stream, streamed)
        expect(idle.stop_reason.type == "end_turn", f"second idle: {idle.stop_reason!r}")
    tasks = [e for e in streamed if e.type == "agent.thread_message_sent"]
    expect([t.to_session_thread_id for t in tasks] == [thread_id], "the coordinator's task")
    reports = [e for e in streamed if e.type == "agent.thread_message_received"]
    expect(len(reports) == 1 and reports[0].from_session_thread_id == thread_id, "the sub-agent's report")
    expect("sunny, 21 C" in reports[0].content[0].text, f"report: {reports[0].content!r}")
    echoed = [e for e in streamed if e.type == "user.custom_tool_result"]
    expect(echoed[-1].session_thread_id == thread_id, "the result's echo names the thread it was routed to")

    threads = sessions.threads
    listed, _ = all_items(threads.list(session.id), "threads.list", types.sessions.BetaManagedAgentsSessionThread)
    expect([t.id for t in listed][1:] == [thread_id], f"threads.list: {[t.id for t in listed]}")
    expect(listed[0].parent_thread_id is None and listed[1].parent_thread_id == listed[0].id, "parents")
    one = threads.retrieve(thread_id, session_id=session.id)
    checked(one, types.sessions.BetaManagedAgentsSessionThread, "threads.retrieve")
    expect(one.status == "idle" and one.agent.name == "sdk_check_worker", f"threads.retrieve: {one.status}")
    own, pages = all_items(
        threads.events.list(thread_id, session_id=session.id, limit=2), "threads.events.list", BaseModel
    )
    expect(pages >= 2 and own[0].type == "agent.thread_message_received", f"the thread's history: {own[:1]}")
    with threads.events.stream(thread_id, session_id=session.id) as thread_stream:
        archived = threads.archive(thread_id, session_id=session.id)
        checked(archived, types.sessions.BetaManagedAgentsSessionThread, "threads.archive")
        expect(archived.archived_at is not None and archived.status == "terminated", "threads.archive: fields")
        live = next(iter(thread_stream))
        require_fields(live, "streamed thread event")
        expect(live.type == "session.thread_status_terminated", f"the thread stream: {live.type}")


def check_previews(client: anthropic.Anthropic, types: Any, agent_id: str, environment_id: str) -> None:
    """A stream opened with `event_deltas` gets an `event_start` and `event_delta`s before the buffered message."""
    sessions = client.beta.sessions
    events = sessions.events
    session = sessions.create(agent=agent_id, environment_id=environment_id)
    streamed: list[Any] = []
    with events.stream(session.id, event_deltas=["agent.message"]) as stream:
        events.send(
            session.id, events=[{"type": "user.message", "content": [{"type": "text", "text": PREVIEW_PROMPT}]}]
        )
        idle = stream_until_idle(stream, streamed)
    expect(idle.stop_reason.type == "end_turn", f"previews idle: {idle.stop_reason!r}")
    kinds = [e.type for e in streamed]
    starts = [e for e in streamed if e.type == "event_start"]
    deltas = [e for e in streamed if e.type == "event_delta"]
    messages = [e for e in streamed if e.type == "agent.message"]
    expect(len(starts) == 1 and len(messages) == 1, f"one preview of one message: {kinds}")
    start, message = starts[0], messages[0]
    checked(start, types.BetaManagedAgentsStartEvent, "event_start")
    expect(start.event.type == "agent.message" and start.event.id == message.id, "event_start names the message")
    for delta in deltas:
        checked(delta, types.BetaManagedAgentsDeltaEvent, "event_delta")
        expect(delta.event_id == message.id and delta.delta.type == "content_delta", f"event_delta: {delta!r}")
    expect([d.delta.content.text for d in deltas] == PREVIEWED, f"delta texts: {[d.delta.content.text for d in deltas]}")
    expect(kinds.index("event_start") < kinds.index("event_delta") < kinds.index("agent.message"), f"order: {kinds}")
    expect(message.content[0].text == "".join(PREVIEWED), f"the message: {message.content!r}")
    history = [e.type for e in events.list(session.id)]
    expect("event_start" not in history and "event_delta" not in history, f"previews reached the history: {history}")
    sessions.delete(session.id)


def check_credentials(base_url: str, types: Any, agent_id: str) -> None:
    bearer = client_with(base_url, auth_token="sdk-check-token", api_key=None)
    checked(bearer.beta.agents.retrieve(agent_id), types.BetaManagedAgentsAgent, "agents.retrieve (bearer)")
    checked(bearer.beta.environments.list().data, list, "environments.list (bearer)")
    x_api_key = client_with(base_url, api_key=None, auth_token=None, default_headers={"x-api-key": "sdk-check-key"})
    checked(x_api_key.beta.agents.retrieve(agent_id), types.BetaManagedAgentsAgent, "agents.retrieve (x-api-key)")
    anonymous = urllib.request.Request(
        f"{base_url.rstrip('/')}/v1/agents",
        headers={"anthropic-version": "2023-06-01", "anthropic-beta": "managed-agents-2026-04-01"},
    )
    try:
        with urllib.request.urlopen(anonymous, timeout=15.0) as response:
            status = response.status
    except urllib.error.HTTPError as error:
        status = error.code
    expect(status == 401, f"a request without credentials got {status}")


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    base_url = argv[1]
    # Hermetic: credentials and endpoints come only from this script, never from the caller's environment (a
    # real key must not reach the emulator, and `api_key=None` would otherwise fall back to it).
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL"):
        os.environ.pop(name, None)
    from anthropic.types import beta as types

    try:
        client = client_with(base_url, api_key="test")
        agent_id, _ = check_agents(client, types)
        environment_id = check_environments(client, types)
        check_session(client, types, agent_id, environment_id)
        check_multiagent(client, types, environment_id)
        check_previews(client, types, agent_id, environment_id)
        check_credentials(base_url, types, agent_id)
    except CheckFailed as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        return 1
    except anthropic.APIResponseValidationError as error:
        cause = error.__cause__
        print(f"FAILED: a response does not parse into the SDK's types: {cause or error}", file=sys.stderr)
        return 1
    except anthropic.APIError as error:
        print(f"FAILED: {type(error).__name__}: {error}", file=sys.stderr)
        traceback.print_exc()
        return 1
    print(f"ok: anthropic {anthropic.__version__} against {base_url}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
