"""Canary checks of the visibility firewall, for our tests and for anyone building an agent.

`plant_canaries(spec)` returns a copy of a spec with a unique canary string in every
evaluator-private field (each outcome, each evidence item, each "none recorded" reason) and the
canary of each revealable item. After a run, `paid_canaries(events, by_item)` lists the canaries
the agent legitimately bought; `leaked(text, allowed)` finds any other canary in whatever the
agent was shown (observations, prompts, request bodies).
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping

from labreplay.sdk import MISSING_TAG
from labreplay.sdk.engine import EnvironmentSpec
from labreplay.sdk.testing import CANARY
from labreplay.suites.campaign.events import campaign_events


def plant_canaries(spec: EnvironmentSpec) -> tuple[EnvironmentSpec, dict[str, str]]:
    body = copy.deepcopy(dict(spec.body))
    by_item: dict[str, str] = {}
    for eid, private in body["evaluator"].items():
        private["outcome"]["canary"] = f"CANARY-OUTCOME-{eid}"
        for kind, items in private["evidence"].items():
            if isinstance(items, dict) and MISSING_TAG in items:
                tag = f"CANARY-MISSING-{kind}-{eid}"
                items[MISSING_TAG] = f"{items[MISSING_TAG]} {tag}"
                by_item[f"{kind}:{eid}:missing"] = tag
                continue
            for item in items:
                tag = f"CANARY-ITEM-{item['item_id']}"
                item["content"] = {**item["content"], "canary": tag}
                item["summary"] = f"{item['summary']} {tag}"
                by_item[item["item_id"]] = tag
    planted = EnvironmentSpec(spec.suite, spec.protocol, spec.version, spec.spec_id, body)
    return planted, by_item


def paid_canaries(events: Iterable[Mapping[str, object]], by_item: Mapping[str, str]) -> set[str]:
    paid: set[str] = set()
    for event in campaign_events(events):
        if event["kind"] == "action":
            item = event["payload"].get("revealed_item")
            if item is not None and item in by_item:
                paid.add(by_item[item])
    return paid


def leaked(text: str, allowed: set[str]) -> set[str]:
    return set(CANARY.findall(text)) - allowed
