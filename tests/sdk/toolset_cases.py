"""The official `anthropic` SDK's built-in toolset (`anthropic.lib.tools.agent_toolset`) runs a table of tool calls,
for tests/tests/self_hosted_sdk.rs, which runs the same calls through our `managed-agents-toolset` and compares.

Usage: toolset_cases.py < cases.json

Input: a JSON object {"workdir": "<directory>", "cases": [{"tool": "<name>", "input": {...}}...]}; the cases run
in order, on one `AgentToolContext(workdir=...)` and one set of tools (so the bash session carries over).
Output: a JSON list [{"text": ..., "is_error": bool}...], one per case: the content the SDK's session tool runner
would build for the result (`tool_result_content`, or `tool_error_content` of what the tool raised), before it
substitutes "(no output)" for an empty text.
"""

import asyncio
import json
import sys

from anthropic.lib.tools._beta_functions import aclose_runnable_tool
from anthropic.lib.tools._tool_dispatch import run_runnable_tool, tool_error_content, tool_result_content
from anthropic.lib.tools.agent_toolset import AgentToolContext, beta_agent_toolset_20260401


async def main() -> None:
    request = json.load(sys.stdin)
    ctx = AgentToolContext(workdir=request["workdir"])
    tools = {tool.name: tool for tool in beta_agent_toolset_20260401(ctx)}
    results = []
    try:
        for case in request["cases"]:
            tool = tools[case["tool"]]
            try:
                content = tool_result_content(await run_runnable_tool(tool, case["input"]))
                is_error = False
            except Exception as error:  # noqa: BLE001 - the runner turns whatever a tool raises into an error result
                content = tool_error_content(error)
                is_error = True
            results.append({"text": content, "is_error": is_error})
    finally:
        for tool in tools.values():
            await aclose_runnable_tool(tool)
        await ctx.close()
    json.dump(results, sys.stdout)


if __name__ == "__main__":
    asyncio.run(main())
