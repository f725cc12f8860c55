"""What each system on the campaign boards cost: model calls, tokens, latency, money.

Read only from the run summaries in the store (`summary["usage"]`, written by the runner from
the `llm_calls` rows). Every row of every board table gets the system's totals over all its
runs, with the matched controls' share separately (the controls call the model too: the
schedule-matched random branch for its checkpoint forecasts, the no-evidence branch for every
turn), plus its checkpoint fallbacks. `board["costs"]` holds the per-system detail (per
branch), `cost_lines` the text board's lines, `cost_panel_html` the HTML report's panel.
Money is what the calls recorded (`cost_usd`, at the prices of their run), or the tokens
priced again at `--price-per-mtok`; a system whose model had no price shows its cost unknown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict

from labreplay.sdk.agents import Price, add_usage, cost
from labreplay.sdk.engine import RunInfo
from labreplay.sdk.events import JsonValue
from labreplay.suites.campaign.leaderboard import _system_keys, system_of


class SystemCost(TypedDict):
    """One system's model use over all its runs (`board["costs"][system]`)."""

    total: dict[str, Any]  # a usage summary (`labreplay.sdk.agents.add_usage`)
    controls: dict[str, Any]  # the matched controls' share of it
    branches: dict[str, dict[str, Any]]  # branch -> its usage summary
    controls_token_share: float | None
    checkpoint_fallbacks: int
    cost: float | None  # USD; None: unknown (no price)
    controls_cost: float | None
    price_per_mtok: dict[str, JsonValue] | None


def system_costs(runs: Sequence[RunInfo], price: Price = None) -> dict[str, SystemCost]:
    names = _system_keys(runs)
    by_branch: dict[str, dict[str, list[Mapping[str, Any]]]] = {}
    fallbacks: dict[str, int] = {}
    for r in runs:
        system = system_of(names, r)
        summary = r.summary or {}
        fallbacks[system] = fallbacks.get(system, 0) + int(summary.get("checkpoint_fallbacks") or 0)
        if summary.get("usage"):
            by_branch.setdefault(system, {}).setdefault(r.branch, []).append(summary["usage"])
    out: dict[str, SystemCost] = {}
    for system in sorted(set(names.values())):
        branches = {b: add_usage(parts) for b, parts in by_branch.get(system, {}).items()}
        total = add_usage(branches.values())
        controls = add_usage(u for b, u in branches.items() if b != "adaptive")
        tokens = total["prompt_tokens"] + total["completion_tokens"]
        control_tokens = controls["prompt_tokens"] + controls["completion_tokens"]
        out[system] = {
            "total": total,
            "controls": controls,
            "branches": branches,
            "controls_token_share": control_tokens / tokens if tokens else None,
            "checkpoint_fallbacks": fallbacks.get(system, 0),
            "cost": cost(total, price),
            "controls_cost": cost(controls, price),
            "price_per_mtok": _price_json(price),
        }
    return out


def _price_json(price: Price) -> dict[str, JsonValue] | None:
    if price is None:
        return None
    if isinstance(price, tuple):
        return {"input": price[0], "output": price[1]}
    return price.as_json()


def add_costs(board: dict[str, Any], runs: Sequence[RunInfo], price: Price = None) -> None:
    """Token / call / fallback columns on every row of every table, and `board["costs"]`."""
    costs = system_costs(runs, price)
    board["costs"] = costs
    tables = board.get("tables") or {"board": {"rows": board.get("rows", [])}}
    rows = [row for t in tables.values() for row in t.get("rows", [])]
    if tables.get("board", {}).get("rows") is not board.get("rows"):
        rows += list(board.get("rows", []))
    for row in rows:
        c = costs.get(str(row.get("system")))
        if c is None:
            continue
        total = c["total"]
        row.update(
            {
                "llm_calls": total["calls"],
                "prompt_tokens": total["prompt_tokens"],
                "completion_tokens": total["completion_tokens"],
                "cached_tokens": total["cached_tokens"],
                "controls_token_share": c["controls_token_share"],
                "checkpoint_fallbacks": c["checkpoint_fallbacks"],
                "cost": c["cost"],
            }
        )


def cost_lines(board: Mapping[str, Any]) -> list[str]:
    """One line per system that called a model (text board)."""
    lines = []
    for system, c in (board.get("costs") or {}).items():
        total, controls = c["total"], c["controls"]
        if not total["calls"] and not c["checkpoint_fallbacks"]:
            continue
        share = c["controls_token_share"]
        money = _money(c["cost"], c["controls_cost"], total["calls"])
        cached = total["cached_tokens"] / total["prompt_tokens"] if total["prompt_tokens"] else 0
        models = ", ".join(total["resolved_models"]) or "-"
        lines.append(
            f"{system}: {total['calls']:,} model calls ({controls['calls']:,} by the controls), "
            f"{total['prompt_tokens']:,} prompt + {total['completion_tokens']:,} completion tokens"
            f" ({cached:.0%} provider-cached; controls "
            f"{'-' if share is None else f'{share:.0%}'} of tokens), latency "
            f"{total['latency_s']:.0f} s, {total['retries']} retries, "
            f"{total['truncated_replies']} cut off, {c['checkpoint_fallbacks']} checkpoint "
            f"fallbacks; model {models}{money}"
        )
    return lines


def _money(cost: float | None, controls: float | None, calls: int) -> str:
    """The cost part of a board line: in USD, or said to be unknown (never shown as 0)."""
    if cost is None:
        return "; cost unknown (no price for this model: give --prices FILE)" if calls else ""
    return f"; cost ${cost:.2f} (controls ${controls or 0.0:.2f})"


def cost_panel_html(board: Mapping[str, Any]) -> str:
    """The report's cost panel: per system, adaptive and controls side by side."""
    from labreplay.sdk.report import esc, table

    rows = []
    for system, c in (board.get("costs") or {}).items():
        total, controls = c["total"], c["controls"]
        if not total["calls"]:
            continue
        share = c["controls_token_share"]
        rows.append(
            [
                system,
                f"{total['calls']:,}",
                f"{controls['calls']:,}",
                f"{total['prompt_tokens']:,}",
                f"{total['completion_tokens']:,}",
                f"{total['cached_tokens']:,}",
                "-" if share is None else f"{share:.0%}",
                f"{total['latency_s']:.0f}",
                str(total["retries"]),
                str(c["checkpoint_fallbacks"]),
                ", ".join(total["resolved_models"]) or "-",
                "-" if c["cost"] is None else f"{c['cost']:.2f}",
            ]
        )
    if not rows:
        return ""
    headers = [
        "system",
        "calls",
        "by controls",
        "prompt tokens",
        "completion tokens",
        "provider-cached",
        "controls' token share",
        "latency (s)",
        "retries",
        "checkpoint fallbacks",
        "resolved model",
        "cost",
    ]
    return (
        '<h3 id="campaign-costs">Model cost</h3><p class="note">'
        + esc("Totals over every run of the system (adaptive branch and its matched controls).")
        + "</p>"
        + table("campaign-costs-table", headers, rows, lambda j: 0 < j < 10)
    )
