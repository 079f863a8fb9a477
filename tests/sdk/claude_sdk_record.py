"""One session through the official `anthropic` SDK, for tests/tests/recordings.rs: the test records it through a
recording proxy in front of the Claude emulator, then replays the recording for our own client.

Usage: claude_sdk_record.py BASE_URL AGENT_ID ENVIRONMENT_ID PROMPT

The session asks what the emulator's script plays (tool calls, then text) and answers every custom tool call the
way `EchoTools` does (`name:` and the input as compact JSON with sorted keys), so our client, replaying with
`EchoTools`, sends the same requests. Prints the last agent message.
"""

import json
import sys
from typing import Any

import anthropic


def echo(name: str, tool_input: Any) -> str:
    return f"{name}:{json.dumps(tool_input, separators=(',', ':'), sort_keys=True, ensure_ascii=False)}"


def until_idle(stream: Any, seen: list[Any]) -> Any:
    for event in stream:
        seen.append(event)
        if event.type == "session.status_idle":
            return event
    raise SystemExit("the stream ended before the session went idle")


def main() -> None:
    base_url, agent_id, environment_id, prompt = sys.argv[1:5]
    # A planted key: the recording must not keep it.
    client = anthropic.Anthropic(base_url=base_url, api_key="sk-ant-api03-SDKplantedKEY0123456789abcdef", max_retries=0)
    sessions = client.beta.sessions
    session = sessions.create(agent=agent_id, environment_id=environment_id)
    seen: list[Any] = []
    with sessions.events.stream(session.id) as stream:
        sessions.events.send(session.id, events=[{"type": "user.message", "content": [{"type": "text", "text": prompt}]}])
        while True:
            idle = until_idle(stream, seen)
            if idle.stop_reason.type != "requires_action":
                break
            calls = [e for e in seen if e.type == "agent.custom_tool_use" and e.id in idle.stop_reason.event_ids]
            results = [
                {
                    "type": "user.custom_tool_result",
                    "custom_tool_use_id": call.id,
                    "content": [{"type": "text", "text": echo(call.name, call.input)}],
                    "is_error": False,
                }
                for call in calls
            ]
            sessions.events.send(session.id, events=results)
    messages = [block.text for e in seen if e.type == "agent.message" for block in e.content]
    print(messages[-1] if messages else "")


if __name__ == "__main__":
    main()
