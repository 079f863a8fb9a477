"""Drives the Bedrock AgentCore InvokeHarness emulator with boto3's `bedrock-agentcore` client.

Usage: python agentcore_sdk_check.py BASE_URL HARNESS_ARN

BASE_URL and HARNESS_ARN are what
`cargo run -p managed-agents-agentcore --features emulator --example serve_agentcore_emulator` prints (`BASE_URL=…`,
`HARNESS_ARN=…`). That emulator's script must be: one turn calling the custom tool `get_weather`, then one turn
of text; every call also streams reasoning, a server-side tool call with its result, and cache usage.

Every event of every stream is checked against botocore's own service model: a known event type, every
required member present, no unknown member, enum values from the model, the right Python types (bytes for
blobs), exactly one member in a union. The tool result goes back the way the harness wants it: the same
runtime session id, the assistant turn echoed (reasoning blocks with their signatures and redacted bytes, then
the `toolUse` block) followed by a user message with the `toolResult`. A third call, on a fresh session after
the script is spent, must fail in-stream with a `validationException` (boto3 raises `EventStreamError`).

Then boto3's `bedrock-agentcore-control` client drives the emulated control plane, every answer checked against
the model the same way: a harness is created and polled until READY; invoking it before its DEFAULT endpoint is
READY is refused (ResourceNotFoundException); the endpoint is polled (GetHarnessEndpoint) until READY, another
endpoint is created, listed and deleted. The token vault's API-key credential provider is created (its ARN in
the service's pattern), read, updated, listed and deleted, after which reading it is ResourceNotFoundException.

Exits 0 when every check held, 1 with a message otherwise.
"""

from __future__ import annotations

import json
import re
import sys
import traceback
import uuid
from typing import Any

import boto3
from botocore.exceptions import ClientError, EventStreamError
from botocore.model import Shape

PROMPT = "What is the weather in Oslo?"
ROLE = "arn:aws:iam::123456789012:role/EmulatedHarnessRole"
# The service model's pattern of an API-key credential provider ARN.
PROVIDER_ARN = re.compile(
    r"arn:(aws|aws-us-gov):acps:[A-Za-z0-9-]{1,64}:[0-9]{12}:token-vault/[a-zA-Z0-9-.]+/apikeycredentialprovider/[a-zA-Z0-9-.]+"
)
# Polls of a status before giving up: the emulator moves a status on polls, not on time.
MAX_POLLS = 10
TOOL = "get_weather"
TOOL_RESULT = "sunny, 21 °C"
FINAL_TEXT = "It is sunny in Oslo."


class CheckFailed(Exception):
    """A check did not hold."""


def expect(condition: bool, message: str) -> None:
    if not condition:
        raise CheckFailed(message)


def check_shape(value: Any, shape: Shape, where: str) -> None:
    """`value`, as boto3 parsed it, conforms to `shape` of the service model."""
    kind = shape.type_name
    if getattr(shape, "is_document_type", False):
        return  # any JSON value
    if kind == "structure":
        expect(isinstance(value, dict), f"{where}: expected an object, got {type(value).__name__}")
        members = shape.members
        for name in value:
            expect(name in members, f"{where}: `{name}` is not a member of {shape.name}")
        if shape.metadata.get("union") or getattr(shape, "is_tagged_union", False):
            expect(len(value) == 1, f"{where}: a {shape.name} union has exactly one member, got {sorted(value)}")
        for name in shape.required_members:
            expect(name in value, f"{where}: required member `{name}` of {shape.name} is missing")
        for name, item in value.items():
            check_shape(item, members[name], f"{where}.{name}")
    elif kind == "list":
        expect(isinstance(value, list), f"{where}: expected a list, got {type(value).__name__}")
        for index, item in enumerate(value):
            check_shape(item, shape.member, f"{where}[{index}]")
    elif kind == "map":
        expect(isinstance(value, dict), f"{where}: expected a map, got {type(value).__name__}")
        for key, item in value.items():
            check_shape(item, shape.value, f"{where}[{key!r}]")
    elif kind == "string":
        expect(isinstance(value, str), f"{where}: expected a string, got {type(value).__name__}")
        if shape.enum:
            expect(value in shape.enum, f"{where}: {value!r} is not one of {shape.name}'s values")
    elif kind in ("integer", "long"):
        expect(isinstance(value, int) and not isinstance(value, bool), f"{where}: expected an integer, got {value!r}")
    elif kind in ("float", "double"):
        expect(isinstance(value, (int, float)), f"{where}: expected a number, got {value!r}")
    elif kind == "boolean":
        expect(isinstance(value, bool), f"{where}: expected a boolean, got {value!r}")
    elif kind == "blob":
        expect(isinstance(value, (bytes, bytearray)), f"{where}: expected bytes, got {type(value).__name__}")


class Call:
    """What one InvokeHarness stream carried."""

    def __init__(self) -> None:
        self.events: list[str] = []
        self.stop_reasons: list[str] = []
        self.text = ""
        self.usage: list[dict[str, int]] = []
        # The last assistant message's reasoning and tool-call blocks, in stream order.
        self.blocks: list[dict[str, Any]] = []
        self.open: dict[int, dict[str, Any]] = {}
        self.tool_inputs: dict[str, str] = {}
        self.tool_results: list[Any] = []

    def add(self, name: str, body: dict[str, Any]) -> None:
        self.events.append(name)
        if name == "messageStart" and body["role"] == "assistant":
            self.blocks, self.open = [], {}
        elif name == "contentBlockStart":
            self.open.pop(body["contentBlockIndex"], None)
            start = body["start"]
            if "toolUse" in start:
                tool = start["toolUse"]
                block = {"toolUseId": tool["toolUseId"], "name": tool["name"], "type": tool.get("type", "tool_use")}
                self.blocks.append({"toolUse": block})
                self.tool_inputs[tool["toolUseId"]] = ""
                self.open[body["contentBlockIndex"]] = block
        elif name == "contentBlockDelta":
            index, delta = body["contentBlockIndex"], body["delta"]
            if "text" in delta:
                self.text += delta["text"]
            elif "toolUse" in delta:
                block = self.open.get(index)
                expect(block is not None and "toolUseId" in block, f"tool input for no open toolUse block {index}")
                self.tool_inputs[block["toolUseId"]] += delta["toolUse"]["input"]
            elif "toolResult" in delta:
                self.tool_results.extend(delta["toolResult"])
            elif "reasoningContent" in delta:
                part = delta["reasoningContent"]
                block = self.open.get(index)
                if "redactedContent" in part:
                    if block is None or "redacted" not in block:
                        block = {"redacted": b""}
                        self.blocks.append(block)
                        self.open[index] = block
                    block["redacted"] += part["redactedContent"]
                else:
                    if block is None or "reasoningText" not in block:
                        block = {"reasoningText": {"text": ""}}
                        self.blocks.append(block)
                        self.open[index] = block
                    if "text" in part:
                        block["reasoningText"]["text"] += part["text"]
                    if "signature" in part:
                        signature = block["reasoningText"].get("signature", "")
                        block["reasoningText"]["signature"] = signature + part["signature"]
        elif name == "contentBlockStop":
            self.open.pop(body["contentBlockIndex"], None)
        elif name == "messageStop":
            self.stop_reasons.append(body["stopReason"])
        elif name == "metadata":
            self.usage.append(body["usage"])

    def custom_calls(self) -> list[dict[str, Any]]:
        return [b["toolUse"] for b in self.blocks if "toolUse" in b and b["toolUse"]["type"] == "tool_use"]

    def echo(self) -> list[dict[str, Any]]:
        """The assistant message's content to send back: reasoning and the client's calls, in stream order."""
        content = []
        for block in self.blocks:
            if "reasoningText" in block:
                content.append({"reasoningContent": {"reasoningText": block["reasoningText"]}})
            elif "redacted" in block:
                content.append({"reasoningContent": {"redactedContent": bytes(block["redacted"])}})
            elif block["toolUse"]["type"] == "tool_use":
                tool = block["toolUse"]
                arguments = json.loads(self.tool_inputs[tool["toolUseId"]] or "{}")
                content.append({"toolUse": {"toolUseId": tool["toolUseId"], "name": tool["name"], "input": arguments}})
        return content


def invoke(client: Any, arn: str, session_id: str, messages: list[dict[str, Any]], where: str) -> Call:
    model = client.meta.service_model
    stream_shape = model.operation_model("InvokeHarness").output_shape.members["stream"]
    exceptions = {name for name, member in stream_shape.members.items() if member.metadata.get("exception")}
    response = client.invoke_harness(harnessArn=arn, runtimeSessionId=session_id, messages=messages)
    status = response["ResponseMetadata"]["HTTPStatusCode"]
    expect(status == 200, f"{where}: HTTP {status}")
    call = Call()
    for number, event in enumerate(response["stream"]):
        at = f"{where} event {number}"
        expect(isinstance(event, dict) and len(event) == 1, f"{at}: expected one event member, got {event!r}")
        (name, body), = event.items()
        expect(name in stream_shape.members and name not in exceptions, f"{at}: unknown event type {name!r}")
        check_shape(body, stream_shape.members[name], f"{at} ({name})")
        call.add(name, body)
    expect(call.stop_reasons, f"{where}: the stream ended without messageStop")
    return call


def client_of(service: str, base_url: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=base_url,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )


def call(client: Any, operation: str, **arguments: Any) -> dict[str, Any]:
    """Calls `operation` (its Python name) and checks the answer against the operation's output shape."""
    response = getattr(client, operation)(**arguments)
    model = client.meta.service_model
    name = client.meta.method_to_api_mapping[operation]
    output = model.operation_model(name).output_shape
    body = {key: value for key, value in response.items() if key != "ResponseMetadata"}
    if output is not None:
        check_shape(body, output, name)
    return body


def expect_not_found(thunk: Any, where: str) -> None:
    try:
        thunk()
    except ClientError as error:
        code = error.response.get("Error", {}).get("Code")
        expect(code == "ResourceNotFoundException", f"{where}: error code {code!r}")
        return
    raise CheckFailed(f"{where}: expected ResourceNotFoundException")


def poll_until_ready(read: Any, where: str) -> int:
    """Reads a status until READY; the number of reads."""
    for number in range(1, MAX_POLLS + 1):
        status = read()
        if status == "READY":
            return number
        expect(status == "CREATING", f"{where}: status {status!r}")
    raise CheckFailed(f"{where}: not READY after {MAX_POLLS} polls")


def run_control(base_url: str) -> None:
    control = client_of("bedrock-agentcore-control", base_url)
    data = client_of("bedrock-agentcore", base_url)
    created = call(control, "create_harness", harnessName="sdk_check_harness", executionRoleArn=ROLE,
                   model={"bedrockModelConfig": {"modelId": "anthropic.claude-sonnet-4"}})
    harness = created["harness"]
    harness_id, harness_arn = harness["harnessId"], harness["arn"]
    polls = poll_until_ready(lambda: call(control, "get_harness", harnessId=harness_id)["harness"]["status"],
                             "get_harness")

    # READY, but its endpoint is not yet: an invocation through it is refused.
    kickoff = [{"role": "user", "content": [{"text": PROMPT}]}]
    expect_not_found(lambda: data.invoke_harness(harnessArn=harness_arn, runtimeSessionId=f"sdk-check-{uuid.uuid4().hex}",
                                                 messages=kickoff), "invoke before the endpoint is READY")

    def endpoint_status() -> str:
        endpoint = call(control, "get_harness_endpoint", harnessId=harness_id, endpointName="DEFAULT")["endpoint"]
        expect(endpoint["endpointName"] == "DEFAULT" and endpoint["harnessId"] == harness_id,
               f"get_harness_endpoint: {endpoint!r}")
        return endpoint["status"]

    endpoint_polls = poll_until_ready(endpoint_status, "get_harness_endpoint")
    expect(endpoint_polls >= 2, "the DEFAULT endpoint was READY at once; the emulator plays CREATING first")
    expect_not_found(lambda: control.get_harness_endpoint(harnessId=harness_id, endpointName="canary_missing"),
                     "get_harness_endpoint of an endpoint no one created")
    canary = call(control, "create_harness_endpoint", harnessId=harness_id, endpointName="canary")["endpoint"]
    expect(canary["status"] == "CREATING", f"create_harness_endpoint: {canary!r}")
    names = [e["endpointName"] for e in call(control, "list_harness_endpoints", harnessId=harness_id)["endpoints"]]
    expect(names == ["DEFAULT", "canary"], f"list_harness_endpoints: {names!r}")
    deleting = call(control, "delete_harness_endpoint", harnessId=harness_id, endpointName="canary")["endpoint"]
    expect(deleting["status"] == "DELETING", f"delete_harness_endpoint: {deleting!r}")

    provider = call(control, "create_api_key_credential_provider", name="sdk-check-gateway", apiKey="vk-sdk-check")
    expect(PROVIDER_ARN.fullmatch(provider["credentialProviderArn"]) is not None,
           f"credential provider ARN {provider['credentialProviderArn']!r}")
    read = call(control, "get_api_key_credential_provider", name="sdk-check-gateway")
    expect(read["credentialProviderArn"] == provider["credentialProviderArn"], f"get: {read!r}")
    expect("apiKey" not in read, "the key is never read back")
    call(control, "update_api_key_credential_provider", name="sdk-check-gateway", apiKey="vk-sdk-check-rotated")
    listed = call(control, "list_api_key_credential_providers")["credentialProviders"]
    expect([p["name"] for p in listed] == ["sdk-check-gateway"], f"list: {listed!r}")
    deleted = control.delete_api_key_credential_provider(name="sdk-check-gateway")
    status = deleted["ResponseMetadata"]["HTTPStatusCode"]
    expect(status == 204, f"delete_api_key_credential_provider: HTTP {status}")
    expect_not_found(lambda: control.get_api_key_credential_provider(name="sdk-check-gateway"),
                     "get_api_key_credential_provider after the delete")
    print(f"ok: harness READY after {polls} polls, its DEFAULT endpoint after {endpoint_polls}; "
          "endpoints and the credential provider checked against botocore's model")


def run(base_url: str, arn: str) -> None:
    client = client_of("bedrock-agentcore", base_url)
    session_id = f"sdk-check-{uuid.uuid4().hex}"
    kickoff = [{"role": "user", "content": [{"text": PROMPT}]}]
    first = invoke(client, arn, session_id, kickoff, "call 1")
    expect(first.stop_reasons[-1] == "tool_use", f"call 1: stop reason {first.stop_reasons[-1]!r}, not tool_use")
    calls = first.custom_calls()
    expect([c["name"] for c in calls] == [TOOL], f"call 1: expected one `{TOOL}` call, got {calls!r}")
    arguments = json.loads(first.tool_inputs[calls[0]["toolUseId"]])
    expect(arguments == {"city": "Oslo"}, f"call 1: tool input {arguments!r}")
    expect(any("reasoningText" in b and b["reasoningText"].get("signature") for b in first.blocks),
           "call 1: no signed reasoning block")
    expect(any("redacted" in b and b["redacted"] for b in first.blocks), "call 1: no redacted reasoning bytes")
    expect(first.tool_results, "call 1: no server-side tool result")
    expect(any("cacheReadInputTokens" in u and "cacheWriteInputTokens" in u for u in first.usage),
           "call 1: no cache token usage")

    resume = [
        {"role": "assistant", "content": first.echo()},
        {
            "role": "user",
            "content": [
                {"toolResult": {"toolUseId": calls[0]["toolUseId"], "content": [{"text": TOOL_RESULT}],
                                "status": "success"}}
            ],
        },
    ]
    second = invoke(client, arn, session_id, resume, "call 2")
    expect(second.stop_reasons[-1] == "end_turn", f"call 2: stop reason {second.stop_reasons[-1]!r}")
    expect(second.text == FINAL_TEXT, f"call 2: text {second.text!r}, expected {FINAL_TEXT!r}")

    # The script is spent: another call must fail in-stream with a validationException. (botocore keeps only the
    # code and message of an in-stream exception; the Rust tests check its `reason`.)
    try:
        invoke(client, arn, f"sdk-check-{uuid.uuid4().hex}", kickoff, "call 3")
        raise CheckFailed("call 3: expected an in-stream validationException")
    except EventStreamError as error:
        code = error.response.get("Error", {}).get("Code")
        expect(code == "validationException", f"call 3: error code {code!r}")
        message = error.response.get("Error", {}).get("Message")
        expect(bool(message), f"call 3: the exception has no message: {error.response!r}")
    print(f"ok: {len(first.events)} + {len(second.events)} events checked against botocore's model")


def main(argv: list[str]) -> int:
    if len(argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        run(argv[1], argv[2])
        run_control(argv[1])
    except CheckFailed as failure:
        print(f"FAILED: {failure}", file=sys.stderr)
        return 1
    except (ClientError, EventStreamError) as error:
        print(f"FAILED: the service call failed: {error}", file=sys.stderr)
        return 1
    except Exception:  # noqa: BLE001 — any other failure is a failed check, with its trace
        traceback.print_exc()
        print("FAILED: unexpected error", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
