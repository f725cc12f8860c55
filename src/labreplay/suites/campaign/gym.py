"""A Gymnasium-compatible wrapper of the campaign runtime (optional extra: `pip install
gymnasium`).

Observations and actions are JSON text: an observation is the campaign observation of
`CampaignEnv.observation()` (phase, rules, action schema, visible state, last result) or, when
an evaluator checkpoint is due, the checkpoint snapshot (`"kind": "panel_checkpoint"`); the next
action then answers it with the panel forecast. Text is ASCII-escaped JSON, so both spaces use
printable ASCII.

Rewards: by default always 0, which keeps the firewall (nothing evaluator-private reaches the
policy except through paid reveals). `reward="panel_gain"` pays s_t - s_{t-1} at each checkpoint
(minus panel loss, METRICS.md), for training only: it leaks the held-out outcomes in aggregate,
so a policy trained with it must be evaluated on other assignments. A campaign ends
(`terminated`) when the runtime is done; `truncated` when the harness stops a campaign stuck on
`max_invalid_streak` invalid actions in a row, as the runner does.
"""

from __future__ import annotations

import json
import string
from functools import cache
from types import ModuleType
from typing import Any, ClassVar, TypedDict

from labreplay.errors import LabreplayError
from labreplay.sdk.agents import Snapshot
from labreplay.sdk.engine import EnvironmentSpec
from labreplay.sdk.events import JsonValue
from labreplay.suites.campaign.events import CategoryForecast

ENV_ID = "labreplay/Campaign-v0"
CHARSET = "".join(c for c in string.printable if c.isprintable())  # ASCII 32..126
MAX_ACTION_CHARS = 20_000
REWARDS = ("none", "panel_gain")


class StepInfo(TypedDict):
    """The `info` of `reset` and `step`: how the action was taken and where the campaign is."""

    accepted: bool
    reason: str
    phase: str  # the runtime's phase, or "checkpoint" while a panel forecast is due
    budgets_left: dict[str, int]
    closed: int  # experiments closed so far
    head_hash: str  # the trajectory's head


def _gymnasium() -> ModuleType:
    try:
        import gymnasium
    except ImportError as exc:
        raise LabreplayError(
            "the Gymnasium wrapper needs gymnasium: pip install gymnasium "
            "(or pip install 'labreplay[gym]')"
        ) from exc
    return gymnasium


def _text(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


@cache
def _env_class() -> type:
    gymnasium = _gymnasium()
    from gymnasium import spaces

    from labreplay.suites.campaign.env import CampaignEnv
    from labreplay.suites.campaign.metrics import panel_loss

    base: Any = gymnasium.Env

    class CampaignGymEnv(base):  # type: ignore[misc]
        metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"]}

        def __init__(
            self,
            spec: EnvironmentSpec,
            reward: str = "none",
            max_invalid_streak: int = 8,
            max_observation_chars: int | None = None,
            render_mode: str | None = None,
        ) -> None:
            if reward not in REWARDS:
                raise LabreplayError(f"reward must be one of {list(REWARDS)}, got {reward!r}")
            self.campaign_spec = spec  # `spec` is gymnasium's own EnvSpec attribute
            self.reward_mode = reward
            self.max_invalid_streak = max_invalid_streak
            self.render_mode = render_mode
            self.runtime = CampaignEnv(spec)
            # The largest observation is bounded by the spec: its full text is a safe cap.
            cap = max_observation_chars or 4 * len(spec.canonical_text()) + 100_000
            self.observation_space = spaces.Text(max_length=cap, min_length=2, charset=CHARSET)
            self.action_space = spaces.Text(
                max_length=MAX_ACTION_CHARS, min_length=0, charset=CHARSET
            )
            self._pending: Snapshot | None = None
            self._last_forecasts: dict[str, CategoryForecast] | None = None
            self._last_score: float | None = None
            self._streak = 0
            self._ended = True

        # -------------------------------------------------------------- gymnasium API
        def reset(
            self, *, seed: int | None = None, options: dict[str, object] | None = None
        ) -> tuple[str, StepInfo]:
            super().reset(seed=seed)
            run_seed = int(seed) if seed is not None else int(self.np_random.integers(2**31))
            self.runtime.reset(run_seed)
            self._last_forecasts, self._last_score, self._streak = None, None, 0
            self._ended = False
            self._pending = self.runtime.checkpoint_snapshot()  # the t = 0 forecast
            return _text(self._pending), self._info(True, "ok")

        def step(self, action: str) -> tuple[str, float, bool, bool, StepInfo]:
            if self._ended:
                raise LabreplayError("step() after the campaign ended; call reset()")
            try:
                parsed: JsonValue = json.loads(action)
            except (TypeError, ValueError) as exc:
                parsed = {"type": "invalid", "raw": str(action)[:2000], "error": f"not JSON: {exc}"}
            if self._pending is not None:
                reward = self._checkpoint(parsed)
                accepted, reason = True, "checkpoint recorded"
            else:
                result = self.runtime.step(parsed)
                accepted, reason, reward = result.accepted, result.reason, 0.0
                self._streak = 0 if accepted else self._streak + 1
                if result.checkpoint_due:
                    self._pending = self.runtime.checkpoint_snapshot()
            truncated = False
            if self._pending is None and self._streak >= self.max_invalid_streak:
                self.runtime.stop_by_harness(forced_stop=f"{self._streak} invalid actions in a row")
                truncated = True
            terminated = self._pending is None and self.runtime.done and not truncated
            if terminated or truncated:
                self.runtime.end()
                self._ended = True
            return self._observation(), reward, terminated, truncated, self._info(accepted, reason)

        def render(self) -> str | None:
            if self.render_mode != "ansi":
                return None
            rt = self.runtime
            return (
                f"{rt.spec.spec_id} phase={rt.phase} closed={len(rt.closed_order)} "
                f"budgets={rt.budgets} head={rt.trajectory.head[:12]}"
            )

        # -------------------------------------------------------------- helpers
        @property
        def trajectory_events(self) -> list[dict[str, object]]:
            return list(self.runtime.trajectory.events)

        def _observation(self) -> str:
            if self._pending is not None:
                return _text(self._pending)
            return _text(self.runtime.observation())

        def _checkpoint(self, response: JsonValue) -> float:
            assert self._pending is not None
            t = len(self.runtime.closed_order)
            payload = self.runtime.submit_checkpoint(
                response, t, self._last_forecasts, self._pending["state_hash"]
            )
            self._pending = None
            self._last_forecasts = dict(payload["forecasts"])
            if self.reward_mode == "none":
                return 0.0
            body = self.campaign_spec.body
            loss, _ = panel_loss(payload["forecasts"], body["evaluator"], float(body["eps"]))
            score, previous = -loss, self._last_score
            self._last_score = score
            return 0.0 if previous is None else float(score - previous)

        def _info(self, accepted: bool, reason: str) -> StepInfo:
            rt = self.runtime
            return {
                "accepted": accepted,
                "reason": reason,
                "phase": "checkpoint" if self._pending is not None else rt.phase,
                "budgets_left": dict(rt.budgets),
                "closed": len(rt.closed_order),
                "head_hash": rt.trajectory.head,
            }

    return CampaignGymEnv


def CampaignGymEnv(spec: EnvironmentSpec, **kwargs: Any) -> Any:
    """A `gymnasium.Env` over one frozen campaign spec (see the module docstring)."""
    return _env_class()(spec, **kwargs)


def register() -> None:
    """Register `labreplay/Campaign-v0` so `gymnasium.make(ENV_ID, spec=...)` works."""
    gymnasium = _gymnasium()
    if ENV_ID not in gymnasium.registry:
        gymnasium.register(id=ENV_ID, entry_point="labreplay.suites.campaign.gym:CampaignGymEnv")
