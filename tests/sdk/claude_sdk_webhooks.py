"""Webhook verification by the official `anthropic` SDK, for tests/tests/webhooks.rs: the same deliveries our
`WebhookVerifier` judges are judged by `client.beta.webhooks.unwrap`, and deliveries the SDK's own signing
library (standardwebhooks) signs are handed back for ours to judge.

Usage: claude_sdk_webhooks.py < cases.json

Input: a JSON object {"verify": [{"secret", "headers", "body"}…], "sign": [{"secret", "id", "timestamp", "body"}…]}.
Output: one JSON object {"verify": ["ok <data.type>" | "refused <exception>"…], "sign": ["<signature>"…]}.
"""

import datetime
import json
import sys

import anthropic
from standardwebhooks import Webhook


def main() -> None:
    cases = json.load(sys.stdin)
    client = anthropic.Anthropic(api_key="sk-ant-not-used")
    verdicts = []
    for case in cases["verify"]:
        try:
            event = client.beta.webhooks.unwrap(case["body"], headers=case["headers"], key=case["secret"])
            verdicts.append(f"ok {event.data.type}")
        except Exception as error:  # noqa: BLE001 - the verdict names whatever refused it
            verdicts.append(f"refused {type(error).__name__}")
    signatures = []
    for case in cases["sign"]:
        when = datetime.datetime.fromtimestamp(case["timestamp"], tz=datetime.timezone.utc)
        signatures.append(Webhook(case["secret"]).sign(case["id"], when, case["body"]))
    json.dump({"verify": verdicts, "sign": signatures}, sys.stdout)


if __name__ == "__main__":
    main()
